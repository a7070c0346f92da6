// The versioning model of the test server: commits are whole snapshots of a
// database's tables, branches and tags name commits, and each branch has a
// working set (a live go-mysql-server memory database).
//
// What each piece follows in Dolt (github.com/dolthub/dolt):
//   - commit hashes are 20 bytes printed as 32 characters of base32 over the
//     alphabet 0-9a-v (go/store/hash/hash.go: ByteLen 20, StringLen 32);
//   - a branch head and a tag are plain commit pointers, and a tag's commit is
//     fixed (docs: "Tags", dolt_tags system table);
//   - merge finds the common ancestor and merges cell-wise by primary key
//     (go/libraries/doltcore/merge); a row changed on both sides to different
//     values is a conflict, counted per table in dolt_conflicts.
//
// Not modelled (refused where a statement would need it): staging (DOLT_ADD),
// remotes, schema merges (a table whose schema differs on the two sides is a
// conflict), constraint violations other than a UNIQUE index the merged rows
// break (foreign keys, checks), renames in diffs (a drop plus an add).
package main

import (
	"crypto/sha1"
	"encoding/base32"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dolthub/go-mysql-server/memory"
	"github.com/dolthub/go-mysql-server/sql"
)

var hashEncoding = base32.NewEncoding("0123456789abcdefghijklmnopqrstuv").WithPadding(base32.NoPadding)

type snapTable struct {
	schema  sql.PrimaryKeySchema
	rows    []sql.Row
	uniques []uniqueIndex // UNIQUE secondary indexes
}

// uniqueIndex: a UNIQUE index over some columns (ordinals in the schema).
type uniqueIndex struct {
	name string
	cols []int
}

type snapshot map[string]*snapTable

type commit struct {
	hash      string
	parents   []string
	snap      snapshot
	content   string
	message   string
	committer string
	email     string
	date      time.Time
	order     int
}

type tag struct {
	hash    string
	message string
	date    time.Time
	tagger  string
}

type repo struct {
	mu       sync.Mutex
	name     string
	commits  map[string]*commit
	branches map[string]string
	tags     map[string]*tag
	working  map[string]*memory.Database
	revs     map[string]*memory.Database // read-only revision databases, by name
	revHash  map[string]string           // ... and the commit each was made from
	clock    time.Time
}

func newRepo(name string) *repo {
	r := &repo{name: name, commits: map[string]*commit{}, branches: map[string]string{},
		tags: map[string]*tag{}, working: map[string]*memory.Database{}, revs: map[string]*memory.Database{}, revHash: map[string]string{},
		clock: time.Now().UTC().Truncate(time.Second)}
	// `dolt init` makes one commit, "Initialize data repository", on main.
	c := r.newCommit(nil, snapshot{}, "Initialize data repository", "root")
	r.branches["main"] = c.hash
	r.working["main"] = mustMaterialize(r.dbName("main"), c.snap)
	return r
}

// The memory database name of a branch's working set: the bare name for
// main, db/branch for the others (Dolt's revision database names).
func (r *repo) dbName(branch string) string {
	if branch == "main" {
		return r.name
	}
	return r.name + "/" + branch
}

// tick: now, in milliseconds as Dolt stores commit dates, and strictly
// after the previous commit.
func (r *repo) tick() time.Time {
	now := time.Now().UTC().Truncate(time.Millisecond)
	if !now.After(r.clock) {
		now = r.clock.Add(time.Millisecond)
	}
	r.clock = now
	return now
}

// newCommit: committed by the SQL user, whose email Dolt writes as
// user@<account host> (here always %).
func (r *repo) newCommit(parents []string, snap snapshot, message string, user string) *commit {
	c := &commit{parents: parents, snap: snap, content: contentOf(snap), message: message,
		committer: user, email: user + "@%", date: r.tick(), order: 1}
	for _, p := range parents {
		if pc := r.commits[p]; pc != nil && pc.order+1 > c.order {
			c.order = pc.order + 1
		}
	}
	h := sha1.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d", strings.Join(parents, ","), c.content, message, c.date.UnixNano())
	c.hash = hashEncoding.EncodeToString(h.Sum(nil))
	r.commits[c.hash] = c
	return c
}

// contentOf: a canonical text of a snapshot (schemas and sorted rows), to
// compare a working set with its head.
func contentOf(s snapshot) string {
	var b strings.Builder
	names := make([]string, 0, len(s))
	for n := range s {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := s[n]
		fmt.Fprintf(&b, "table %s\n", n)
		for _, c := range t.schema.Schema {
			fmt.Fprintf(&b, " col %s %s pk=%v null=%v\n", c.Name, c.Type.String(), c.PrimaryKey, c.Nullable)
		}
		for _, u := range t.uniques {
			fmt.Fprintf(&b, " unique %s %v\n", u.name, u.cols)
		}
		rows := make([]string, len(t.rows))
		for i, r := range t.rows {
			rows[i] = rowText(r)
		}
		sort.Strings(rows)
		for _, r := range rows {
			b.WriteString(r)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func rowText(r sql.Row) string {
	parts := make([]string, len(r))
	for i, v := range r {
		parts[i] = fmt.Sprintf("%T:%v", v, v)
	}
	return strings.Join(parts, "\x1f")
}

func rowKey(sch sql.PrimaryKeySchema, r sql.Row) string {
	if len(sch.PkOrdinals) == 0 {
		return rowText(r)
	}
	parts := make([]string, len(sch.PkOrdinals))
	for i, o := range sch.PkOrdinals {
		parts[i] = fmt.Sprintf("%T:%v", r[o], r[o])
	}
	return strings.Join(parts, "\x1f")
}

// readDB snapshots a memory database as ctx's session sees it.
func readDB(ctx *sql.Context, db *memory.Database) (snapshot, error) {
	snap := snapshot{}
	for name, t := range db.Tables() {
		mt, ok := t.(*memory.Table)
		if !ok {
			return nil, fmt.Errorf("table %s: unsupported table type %T", name, t)
		}
		rows, err := readTable(ctx, mt)
		if err != nil {
			return nil, err
		}
		st := &snapTable{schema: mt.PrimaryKeySchema(), rows: rows}
		idxs, err := mt.GetIndexes(ctx)
		if err != nil {
			return nil, err
		}
		for _, idx := range idxs {
			if !idx.IsUnique() || strings.EqualFold(idx.ID(), "PRIMARY") {
				continue
			}
			u := uniqueIndex{name: idx.ID()}
			for _, e := range idx.Expressions() {
				col := e[strings.LastIndex(e, ".")+1:]
				if i := st.schema.Schema.IndexOfColName(col); i >= 0 {
					u.cols = append(u.cols, i)
				}
			}
			st.uniques = append(st.uniques, u)
		}
		sort.Slice(st.uniques, func(i, j int) bool { return st.uniques[i].name < st.uniques[j].name })
		snap[mt.Name()] = st
	}
	return snap, nil
}

func readTable(ctx *sql.Context, t sql.Table) ([]sql.Row, error) {
	var out []sql.Row
	pi, err := t.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	defer pi.Close(ctx)
	for {
		p, err := pi.Next(ctx)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		ri, err := t.PartitionRows(ctx, p)
		if err != nil {
			return nil, err
		}
		for {
			row, err := ri.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				ri.Close(ctx)
				return nil, err
			}
			out = append(out, row.Copy())
		}
		ri.Close(ctx)
	}
}

// oneDB: the provider a private session commits through, so materializing
// a snapshot never touches a client's session.
type oneDB struct{ db *memory.Database }

func (o oneDB) Database(*sql.Context, string) (sql.Database, error) { return o.db, nil }
func (o oneDB) HasDatabase(*sql.Context, string) bool               { return true }
func (o oneDB) AllDatabases(*sql.Context) []sql.Database            { return []sql.Database{o.db} }

func materialize(name string, snap snapshot) (*memory.Database, error) {
	db := memory.NewDatabase(name)
	db.EnablePrimaryKeyIndexes()
	sess := memory.NewSession(sql.NewBaseSession(), oneDB{db})
	ctx := sql.NewContext(context_(), sql.WithSession(sess))
	for tname, st := range snap {
		cols := make(sql.Schema, len(st.schema.Schema))
		for i, c := range st.schema.Schema {
			cc := *c
			cc.DatabaseSource = name
			cc.Source = tname
			cols[i] = &cc
		}
		t := memory.NewTable(db, tname, sql.NewPrimaryKeySchema(cols, st.schema.PkOrdinals...), db.GetForeignKeyCollection())
		db.AddTable(tname, t)
		for _, u := range st.uniques {
			def := sql.IndexDef{Name: u.name, Constraint: sql.IndexConstraint_Unique}
			for _, c := range u.cols {
				def.Columns = append(def.Columns, sql.IndexColumn{Name: cols[c].Name})
			}
			if err := t.CreateIndex(ctx, def); err != nil {
				return nil, err
			}
		}
		ins := t.Inserter(ctx)
		for _, row := range st.rows {
			if err := ins.Insert(ctx, row.Copy()); err != nil {
				return nil, err
			}
		}
		if err := ins.Close(ctx); err != nil {
			return nil, err
		}
	}
	if err := sess.CommitTransaction(ctx, nil); err != nil {
		return nil, err
	}
	return db, nil
}

func mustMaterialize(name string, snap snapshot) *memory.Database {
	db, err := materialize(name, snap)
	if err != nil {
		panic(err)
	}
	return db
}

// workingSnapshot reads a branch's committed working set (what any new
// transaction sees).
func (r *repo) workingSnapshot(branch string) (snapshot, error) {
	db := r.working[branch]
	if db == nil {
		return nil, fmt.Errorf("branch not found: %s", branch)
	}
	sess := memory.NewSession(sql.NewBaseSession(), oneDB{db})
	return readDB(sql.NewContext(context_(), sql.WithSession(sess)), db)
}

func (r *repo) dirty(branch string) bool {
	snap, err := r.workingSnapshot(branch)
	if err != nil {
		return false
	}
	return contentOf(snap) != r.commits[r.branches[branch]].content
}

func isHash(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'v') {
			return false
		}
	}
	return true
}

// resolve follows Dolt's ref resolution order for a commit spec: a branch,
// then a tag, then a commit hash (go/libraries/doltcore/doltdb: Resolve).
// HEAD is the given branch's head.
func (r *repo) resolve(spec, head string) (string, error) {
	if strings.EqualFold(spec, "HEAD") && head != "" {
		spec = head
	}
	if h, ok := r.branches[spec]; ok {
		return h, nil
	}
	if t, ok := r.tags[spec]; ok {
		return t.hash, nil
	}
	if isHash(spec) {
		if _, ok := r.commits[spec]; ok {
			return spec, nil
		}
	}
	// Dolt 2.3.1 answers an unknown branch, tag or hash alike.
	return "", fmt.Errorf("invalid ref spec")
}

// ancestors: every commit reachable from h, h included.
func (r *repo) ancestors(h string) map[string]bool {
	seen := map[string]bool{}
	stack := []string{h}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[c] || r.commits[c] == nil {
			continue
		}
		seen[c] = true
		stack = append(stack, r.commits[c].parents...)
	}
	return seen
}

// log: commits reachable from h, newest first (by commit order, then date).
func (r *repo) log(h string) []*commit {
	var out []*commit
	for c := range r.ancestors(h) {
		out = append(out, r.commits[c])
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].order != out[j].order {
			return out[i].order > out[j].order
		}
		return out[i].date.After(out[j].date)
	})
	return out
}

func (r *repo) mergeBase(a, b string) string {
	anc := r.ancestors(a)
	for _, c := range r.log(b) {
		if anc[c.hash] {
			return c.hash
		}
	}
	return ""
}

// threeWay merges theirs into ours over base, table by table and row by
// primary key.  Returns the merged snapshot and the conflicts per table.
func threeWay(base, ours, theirs snapshot) (snapshot, map[string]int) {
	out := snapshot{}
	conflicts := map[string]int{}
	names := map[string]bool{}
	for _, s := range []snapshot{base, ours, theirs} {
		for n := range s {
			names[n] = true
		}
	}
	for n := range names {
		b, o, t := base[n], ours[n], theirs[n]
		switch {
		case o == nil && t == nil:
			continue
		case b == nil && o == nil:
			out[n] = t
			continue
		case b == nil && t == nil:
			out[n] = o
			continue
		case o == nil || t == nil:
			// dropped on one side: keep the drop if the other side left it alone
			kept := o
			if kept == nil {
				kept = t
			}
			if b != nil && contentOf(snapshot{n: kept}) == contentOf(snapshot{n: b}) {
				continue
			}
			conflicts[n]++
			continue
		}
		if schemaText(o.schema) != schemaText(t.schema) || fmt.Sprint(o.uniques) != fmt.Sprint(t.uniques) {
			conflicts[n]++
			continue
		}
		index := func(s *snapTable) map[string]sql.Row {
			m := map[string]sql.Row{}
			if s != nil {
				for _, r := range s.rows {
					m[rowKey(o.schema, r)] = r
				}
			}
			return m
		}
		bm, om, tm := index(b), index(o), index(t)
		keys := map[string]bool{}
		for _, m := range []map[string]sql.Row{bm, om, tm} {
			for k := range m {
				keys[k] = true
			}
		}
		merged := &snapTable{schema: o.schema, uniques: o.uniques}
		for k := range keys {
			br, or, tr := bm[k], om[k], tm[k]
			same := func(x, y sql.Row) bool {
				if x == nil || y == nil {
					return x == nil && y == nil
				}
				return rowText(x) == rowText(y)
			}
			var pick sql.Row
			switch {
			case same(or, tr):
				pick = or
			case same(or, br):
				pick = tr
			case same(tr, br):
				pick = or
			default:
				conflicts[n]++
				pick = or
			}
			if pick != nil {
				merged.rows = append(merged.rows, pick)
			}
		}
		out[n] = merged
	}
	return out, conflicts
}

// uniqueViolations: per table, the rows of a snapshot that repeat another
// row's values in a UNIQUE index (rows with a NULL there never clash), as
// Dolt's merge records them in dolt_constraint_violations.
func uniqueViolations(s snapshot) map[string]int {
	out := map[string]int{}
	for n, t := range s {
		for _, u := range t.uniques {
			seen := map[string]bool{}
			for _, r := range t.rows {
				var key []string
				null := false
				for _, c := range u.cols {
					null = null || r[c] == nil
					key = append(key, fmt.Sprintf("%T:%v", r[c], r[c]))
				}
				k := strings.Join(key, "\x1f")
				if null {
					continue
				}
				if seen[k] {
					out[n]++
				}
				seen[k] = true
			}
		}
	}
	return out
}

func schemaText(s sql.PrimaryKeySchema) string {
	var b strings.Builder
	for _, c := range s.Schema {
		fmt.Fprintf(&b, "%s %s %v;", c.Name, c.Type.String(), c.PrimaryKey)
	}
	return b.String()
}

// tableDiff: per-table row changes from a to b (dolt_diff_stat's counts).
type tableDiff struct {
	from, to                  string
	diffType                  string
	dataChange, schemaChange  bool
	added, deleted, modified  int
	unmodified                int
	oldRows, newRows, columns int
	oldCols                   int
}

// name: the table's name on whichever side has it.
func (d tableDiff) name() string {
	if d.to != "" {
		return d.to
	}
	return d.from
}

func diffSnapshots(a, b snapshot) []tableDiff {
	names := map[string]bool{}
	for n := range a {
		names[n] = true
	}
	for n := range b {
		names[n] = true
	}
	var out []tableDiff
	for n := range names {
		ta, tb := a[n], b[n]
		d := tableDiff{from: n, to: n, diffType: "modified"}
		var am, bm map[string]string
		index := func(t *snapTable) map[string]string {
			m := map[string]string{}
			if t != nil {
				for _, r := range t.rows {
					m[rowKey(t.schema, r)] = rowText(r)
				}
			}
			return m
		}
		am, bm = index(ta), index(tb)
		switch {
		case ta == nil:
			d.from, d.diffType, d.schemaChange = "", "added", true
		case tb == nil:
			d.to, d.diffType, d.schemaChange = "", "dropped", true
		default:
			d.schemaChange = schemaText(ta.schema) != schemaText(tb.schema)
		}
		if ta != nil {
			d.oldCols = len(ta.schema.Schema)
		}
		if tb != nil {
			d.columns = len(tb.schema.Schema)
		}
		for k, v := range bm {
			if av, ok := am[k]; !ok {
				d.added++
			} else if av != v {
				d.modified++
			} else {
				d.unmodified++
			}
		}
		for k := range am {
			if _, ok := bm[k]; !ok {
				d.deleted++
			}
		}
		d.oldRows, d.newRows = len(am), len(bm)
		d.dataChange = d.added+d.deleted+d.modified > 0
		if !d.dataChange && !d.schemaChange {
			continue
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].from+out[i].to < out[j].from+out[j].to })
	return out
}

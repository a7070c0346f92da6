// A test server for tether's dolt backend: go-mysql-server (the SQL engine
// Dolt runs on) with its in-memory storage, and the part of Dolt's
// versioning SQL surface tether uses added on top.  It is a test fixture, not
// Dolt: what it does not model it refuses with an error that says so.
//
// Surface, after Dolt's SQL reference (docs.dolthub.com/sql-reference/
// version-control: "Dolt SQL Procedures", "Dolt System Tables", "Dolt SQL
// Functions", "Using Branches") and its source (go/libraries/doltcore/sqle/
// dprocedures, dtables, dtablefunctions, dfunctions):
//   - CALL DOLT_COMMIT('-a'|'-A', '-m', msg [, '--allow-empty'])  -> hash
//   - CALL DOLT_TAG(name [, ref]) / DOLT_TAG('-d', name)            -> status
//   - CALL DOLT_BRANCH(name [, start]) / ('-D'|'-f', ...)           -> status
//   - CALL DOLT_CHECKOUT(branch)                                    -> status, message
//   - CALL DOLT_MERGE([--ff-only|--no-ff,] ref [, '-m', msg]) / ('--abort')
//     -> hash, fast_forward, conflicts, message
//   - CALL DOLT_RESET('--hard')
//   - HASHOF(ref), DOLT_MERGE_BASE(a, b)
//   - DOLT_LOG([ref]), dolt_diff_summary(from, to [, table]),
//     dolt_diff_stat(from, to [, table])
//   - tables dolt_branches (with dirty), dolt_tags, dolt_log, dolt_commits,
//     dolt_status, dolt_conflicts, dolt_constraint_violations and
//     dolt_constraint_violations_<table> (UNIQUE indexes only)
//   - revision databases db/<branch> (writable), db/<tag>, db/<hash>
//     (read-only, as Dolt makes them).
//
// Usage: doltserver -addr 127.0.0.1:PORT -db NAME -user USER -password PW
//
//	[-without dirty,ff-only] [-commit-lag DURATION]
//
// -without plays an older Dolt: "dirty" drops dolt_branches.dirty (added in
// Dolt 1.40), "ff-only" makes DOLT_MERGE refuse --ff-only (added in 1.79.2).
//
// As on Dolt, a DOLT_MERGE in an open transaction moves the branch head at
// once and the branch's working set when the transaction ends: meanwhile
// other sessions read the branch dirty at its new head, and their merges
// into it are refused as stomping on those "changes".  -commit-lag makes
// such a COMMIT take that long before publishing the working set and again
// before replying (a loaded server), so racing sessions interleave.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/memory"
	"github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/dolthub/vitess/go/vt/sqlparser"
)

func context_() context.Context { return context.Background() }

type provider struct {
	r         *repo
	mu        sync.Mutex
	checkout  map[uint32]string      // session id -> checked-out branch
	merges    map[uint32]*mergeState // session id -> a conflicted merge held open
	pending   map[uint32][]pendingWS // session id -> working sets its transaction publishes
	commitLag time.Duration          // -commit-lag
	without   map[string]bool        // features of newer Dolts left out (-without)
	procs     sql.ExternalStoredProcedureRegistry
	funcs     map[string]sql.TableFunction
}

type mergeState struct {
	tx         sql.Transaction
	conflicts  map[string]int
	violations map[string]int
}

// pendingWS: a working set a merge in an open transaction wrote, which the
// branch gets when that transaction ends (provider.publish).
type pendingWS struct {
	branch, head string
	db           *memory.Database
}

// doltDB: one revision of the database as the engine sees it.
type doltDB struct {
	*memory.Database
	p        *provider
	branch   string // "" for a read-only revision
	readOnly bool
}

func (d *doltDB) IsReadOnly() bool { return d.readOnly }

func (d *doltDB) GetTableInsensitive(ctx *sql.Context, name string) (sql.Table, bool, error) {
	if strings.HasPrefix(strings.ToLower(name), "dolt_") {
		t, err := d.p.systemTable(ctx, d, strings.ToLower(name))
		if err != nil {
			return nil, false, err
		}
		return t, t != nil, nil
	}
	return d.Database.GetTableInsensitive(ctx, name)
}

// sessionProvider: what sessions commit their table edits through (the
// memory session needs *memory.Database values by name).
type sessionProvider struct{ p *provider }

func (s sessionProvider) Database(ctx *sql.Context, name string) (sql.Database, error) {
	s.p.r.mu.Lock()
	defer s.p.r.mu.Unlock()
	for _, db := range s.p.r.working {
		if strings.EqualFold(db.Name(), name) {
			return db, nil
		}
	}
	if db := s.p.r.revs[name]; db != nil {
		return db, nil
	}
	return nil, sql.ErrDatabaseNotFound.New(name)
}
func (s sessionProvider) HasDatabase(ctx *sql.Context, name string) bool {
	_, err := s.Database(ctx, name)
	return err == nil
}
func (s sessionProvider) AllDatabases(*sql.Context) []sql.Database { return nil }

func (p *provider) sessionBranch(ctx *sql.Context) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b, ok := p.checkout[ctx.Session.ID()]; ok {
		return b
	}
	return "main"
}

// Database resolves db, db/<branch>, db/<tag> and db/<hash> (Dolt:
// "Using Branches": revision databases).
func (p *provider) Database(ctx *sql.Context, name string) (sql.Database, error) {
	base, rev, hasRev := strings.Cut(name, "/")
	if !strings.EqualFold(base, p.r.name) {
		return nil, sql.ErrDatabaseNotFound.New(name)
	}
	branch := ""
	if !hasRev {
		branch = p.sessionBranch(ctx)
	}
	p.r.mu.Lock()
	defer p.r.mu.Unlock()
	if hasRev {
		if _, ok := p.r.branches[rev]; ok {
			branch = rev
		}
	}
	if branch != "" {
		db := p.r.working[branch]
		if db == nil {
			return nil, sql.ErrDatabaseNotFound.New(name)
		}
		return &doltDB{Database: db, p: p, branch: branch}, nil
	}
	h, err := p.r.resolve(rev, "")
	if err != nil {
		return nil, sql.ErrDatabaseNotFound.New(name)
	}
	db := p.r.revs[name]
	if db == nil || p.r.revHash[name] != h {
		db, err = materialize(name, p.r.commits[h].snap)
		if err != nil {
			return nil, err
		}
		p.r.revs[name], p.r.revHash[name] = db, h
	}
	return &doltDB{Database: db, p: p, readOnly: true}, nil
}

func (p *provider) HasDatabase(ctx *sql.Context, name string) bool {
	_, err := p.Database(ctx, name)
	return err == nil
}

func (p *provider) AllDatabases(ctx *sql.Context) []sql.Database {
	db, _ := p.Database(ctx, p.r.name)
	return []sql.Database{db}
}

func (p *provider) ExternalStoredProcedure(_ *sql.Context, name string, n int) (*sql.ExternalStoredProcedureDetails, error) {
	return p.procs.LookupByNameAndParamCount(name, n)
}
func (p *provider) ExternalStoredProcedures(_ *sql.Context, name string) ([]sql.ExternalStoredProcedureDetails, error) {
	return p.procs.LookupByName(name)
}
func (p *provider) TableFunction(_ *sql.Context, name string) (sql.TableFunction, bool) {
	f, ok := p.funcs[strings.ToLower(name)]
	return f, ok
}
func (p *provider) WithTableFunctions(fns ...sql.TableFunction) (sql.TableFunctionProvider, error) {
	return p, nil
}

// The branch a statement acts on: the current database's.
func (p *provider) current(ctx *sql.Context) (string, error) {
	name := ctx.GetCurrentDatabase()
	if name == "" {
		return "", fmt.Errorf("no database selected")
	}
	db, err := p.Database(ctx, name)
	if err != nil {
		return "", err
	}
	d := db.(*doltDB)
	if d.readOnly {
		return "", fmt.Errorf("%s is a read-only revision database (a tag or a commit); use a branch", name)
	}
	return d.branch, nil
}

// --- system tables -----------------------------------------------------

type sysTable struct {
	name string
	sch  sql.Schema
	rows []sql.Row
}

type onePartition struct{ done bool }

func (o *onePartition) Next(*sql.Context) (sql.Partition, error) {
	if o.done {
		return nil, io.EOF
	}
	o.done = true
	return memory.NewPartition([]byte("0")), nil
}
func (o *onePartition) Close(*sql.Context) error { return nil }

func (t *sysTable) Name() string               { return t.name }
func (t *sysTable) String() string             { return t.name }
func (t *sysTable) Schema() sql.Schema         { return t.sch }
func (t *sysTable) Collation() sql.CollationID { return sql.Collation_Default }
func (t *sysTable) Partitions(*sql.Context) (sql.PartitionIter, error) {
	return &onePartition{}, nil
}
func (t *sysTable) PartitionRows(*sql.Context, sql.Partition) (sql.RowIter, error) {
	return sql.RowsToRowIter(t.rows...), nil
}

func cols(source string, spec ...interface{}) sql.Schema {
	var s sql.Schema
	for i := 0; i < len(spec); i += 2 {
		s = append(s, &sql.Column{Name: spec[i].(string), Type: spec[i+1].(sql.Type), Source: source, Nullable: true})
	}
	return s
}

var (
	branchesSchema = func(src string) sql.Schema {
		return cols(src, "name", types.Text, "hash", types.Text, "latest_committer", types.Text,
			"latest_committer_email", types.Text, "latest_commit_date", types.Datetime,
			"latest_commit_message", types.Text, "remote", types.Text, "branch", types.Text,
			"dirty", types.Boolean)
	}
	logSchema = func(src string) sql.Schema {
		return cols(src, "commit_hash", types.Text, "committer", types.Text, "email", types.Text,
			"date", types.Datetime, "message", types.Text, "commit_order", types.Uint64)
	}
)

func (p *provider) systemTable(ctx *sql.Context, d *doltDB, name string) (sql.Table, error) {
	r := p.r
	headOf := func() string {
		if d.branch != "" {
			return r.branches[d.branch]
		}
		h, _ := r.resolve(strings.SplitN(d.Name(), "/", 2)[1], "")
		return h
	}
	switch name {
	case "dolt_branches":
		// dolt_branches: name, hash, latest_committer, latest_committer_email,
		// latest_commit_date, latest_commit_message, remote, branch, dirty
		// (the dirty column arrived in Dolt 1.40; docs "dolt_branches").
		r.mu.Lock()
		defer r.mu.Unlock()
		t := &sysTable{name: name, sch: branchesSchema(name)}
		for _, b := range sortedKeys(r.branches) {
			c := r.commits[r.branches[b]]
			t.rows = append(t.rows, sql.NewRow(b, c.hash, c.committer, c.email, c.date, c.message, "", "", r.dirty(b)))
		}
		if p.without["dirty"] {
			t.sch = t.sch[:len(t.sch)-1]
			for i := range t.rows {
				t.rows[i] = t.rows[i][:len(t.rows[i])-1]
			}
		}
		return t, nil
	case "dolt_tags":
		r.mu.Lock()
		defer r.mu.Unlock()
		t := &sysTable{name: name, sch: cols(name, "tag_name", types.Text, "tag_hash", types.Text,
			"tagger", types.Text, "email", types.Text, "date", types.Datetime, "message", types.Text)}
		for _, n := range sortedKeys(r.tags) {
			tg := r.tags[n]
			t.rows = append(t.rows, sql.NewRow(n, tg.hash, tg.tagger, tg.tagger+"@%", tg.date, tg.message))
		}
		return t, nil
	case "dolt_log", "dolt_commits":
		r.mu.Lock()
		defer r.mu.Unlock()
		t := &sysTable{name: name, sch: logSchema(name)}
		var list []*commit
		if name == "dolt_log" {
			list = r.log(headOf())
		} else {
			for _, c := range r.commits {
				list = append(list, c)
			}
		}
		for _, c := range list {
			t.rows = append(t.rows, sql.NewRow(c.hash, c.committer, c.email, c.date, c.message, uint64(c.order)))
		}
		if name == "dolt_commits" {
			t.sch = t.sch[:5]
			for i := range t.rows {
				t.rows[i] = t.rows[i][:5]
			}
		}
		return t, nil
	case "dolt_status":
		// dolt_status: table_name, staged, status.  Staging is not
		// modelled, so every change reads as unstaged.
		t := &sysTable{name: name, sch: cols(name, "table_name", types.Text, "staged", types.Boolean, "status", types.Text)}
		if d.branch == "" {
			return t, nil
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		work, err := readDB(ctx, r.working[d.branch])
		if err != nil {
			return nil, err
		}
		for _, td := range diffSnapshots(r.commits[r.branches[d.branch]].snap, work) {
			status := map[string]string{"added": "new table", "dropped": "deleted", "modified": "modified"}[td.diffType]
			tn := td.to
			if tn == "" {
				tn = td.from
			}
			t.rows = append(t.rows, sql.NewRow(tn, false, status))
		}
		return t, nil
	case "dolt_conflicts", "dolt_constraint_violations":
		// dolt_conflicts: table, num_conflicts; dolt_constraint_violations:
		// table, num_violations -- of the merge this session holds open.
		col := "num_conflicts"
		if name == "dolt_constraint_violations" {
			col = "num_violations"
		}
		t := &sysTable{name: name, sch: cols(name, "table", types.Text, col, types.Uint64)}
		if ms := p.openMerge(ctx); ms != nil {
			counts := ms.conflicts
			if name == "dolt_constraint_violations" {
				counts = ms.violations
			}
			for _, tn := range sortedKeys(counts) {
				t.rows = append(t.rows, sql.NewRow(tn, uint64(counts[tn])))
			}
		}
		return t, nil
	}
	if tn, ok := strings.CutPrefix(name, "dolt_constraint_violations_"); ok {
		// dolt_constraint_violations_<table>: from_root_ish, violation_type,
		// violation_info (Dolt adds the table's own columns between; only
		// UNIQUE violations are modelled).
		t := &sysTable{name: name, sch: cols(name, "from_root_ish", types.Text, "violation_type", types.Text,
			"violation_info", types.Text)}
		if ms := p.openMerge(ctx); ms != nil {
			for i := 0; i < ms.violations[tn]; i++ {
				t.rows = append(t.rows, sql.NewRow("", "unique index", "{}"))
			}
		}
		return t, nil
	}
	return nil, fmt.Errorf("system table %s is not modelled by this test server", name)
}

// openMerge: the conflicted merge this session's transaction holds, if any.
func (p *provider) openMerge(ctx *sql.Context) *mergeState {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ms := p.merges[ctx.Session.ID()]; ms != nil && ms.tx == ctx.GetTransaction() {
		return ms
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func main() {
	addr := flag.String("addr", "127.0.0.1:3306", "listen address")
	dbname := flag.String("db", "doltdb", "database name")
	user := flag.String("user", "root", "user")
	password := flag.String("password", "", "password")
	without := flag.String("without", "", "comma-separated: dirty, ff-only (play an older Dolt)")
	commitLag := flag.Duration("commit-lag", 0, "how long a COMMIT that publishes a merged working set takes, before and after it")
	flag.Parse()

	p := &provider{r: newRepo(*dbname), checkout: map[uint32]string{}, merges: map[uint32]*mergeState{},
		pending: map[uint32][]pendingWS{}, commitLag: *commitLag,
		procs: sql.NewExternalStoredProcedureRegistry(), without: map[string]bool{}}
	for _, w := range strings.Split(*without, ",") {
		if w = strings.TrimSpace(w); w != "" {
			p.without[w] = true
		}
	}
	p.registerProcedures()
	p.registerTableFunctions()
	engine := sqle.NewDefault(p)
	engine.Analyzer.Catalog.RegisterFunction(sql.NewEmptyContext(), p.functions()...)

	mdb := engine.Analyzer.Catalog.MySQLDb
	ed := mdb.Editor()
	mdb.AddSuperUser(ed, *user, "%", *password)
	ed.Close()

	sp := sessionProvider{p}
	builder := func(ctx context.Context, conn *mysql.Conn, addr string) (sql.Session, error) {
		host, u := "", ""
		if mu, ok := conn.UserData.(sql.MysqlConnectionUser); ok {
			host, u = mu.Host, mu.User
		}
		client := sql.Client{Address: host, User: u, Capabilities: conn.Capabilities}
		return memory.NewSession(sql.NewBaseSessionWithClientServer(addr, client, conn.ConnectionID), sp), nil
	}
	var chain server.InterceptorChain
	chain.WithInterceptor(txEnd{p})
	cfg := server.Config{Protocol: "tcp", Address: *addr, ConnReadTimeout: 10 * time.Minute,
		Options: []server.Option{chain.Option()}}
	s, err := server.NewServer(cfg, engine, sql.NewContext, builder, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "doltserver:", err)
		os.Exit(1)
	}
	fmt.Printf("listening on %s\n", *addr)
	if err := s.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "doltserver:", err)
		os.Exit(1)
	}
}

// txEnd publishes what a session's merges left pending when its transaction
// ends: after a COMMIT or ROLLBACK statement runs.  (A client that drops the
// connection instead leaves the branch reading dirty; tether always ends
// its transactions.)
type txEnd struct{ p *provider }

func (txEnd) Priority() int { return 0 }

func endsTransaction(query string) bool {
	q := strings.ToUpper(strings.TrimRight(strings.TrimSpace(query), ";"))
	return q == "COMMIT" || q == "ROLLBACK" || q == "COMMIT WORK" || q == "ROLLBACK WORK"
}

func (t txEnd) Query(ctx context.Context, chain server.Chain, c *mysql.Conn, query string,
	callback func(res *sqltypes.Result, more bool) error) error {
	err := chain.ComQuery(ctx, c, query, callback)
	if endsTransaction(query) {
		t.p.publish(c.ConnectionID)
	}
	return err
}

func (txEnd) ParsedQuery(chain server.Chain, c *mysql.Conn, query string, parsed sqlparser.Statement,
	callback func(res *sqltypes.Result, more bool) error) error {
	return chain.ComQuery(context.Background(), c, query, callback)
}

func (t txEnd) MultiQuery(ctx context.Context, chain server.Chain, c *mysql.Conn, query string,
	callback func(res *sqltypes.Result, more bool) error) (string, error) {
	rest, err := chain.ComMultiQuery(ctx, c, query, callback)
	if endsTransaction(query[:len(query)-len(rest)]) {
		t.p.publish(c.ConnectionID)
	}
	return rest, err
}

func (txEnd) Prepare(ctx context.Context, chain server.Chain, c *mysql.Conn, query string,
	prepare *mysql.PrepareData) ([]*querypb.Field, error) {
	return chain.ComPrepare(ctx, c, query, prepare)
}

func (txEnd) StmtExecute(ctx context.Context, chain server.Chain, c *mysql.Conn, prepare *mysql.PrepareData,
	callback func(*sqltypes.Result) error) error {
	return chain.ComStmtExecute(ctx, c, prepare, callback)
}

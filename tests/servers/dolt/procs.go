// Dolt's stored procedures, functions and table functions, as the test
// server models them.  Result columns follow Dolt's docs ("Dolt SQL
// Procedures", "Dolt SQL Functions", "Dolt Table Functions") and source:
// go/libraries/doltcore/sqle/dprocedures/init.go (dolt_commit -> hash;
// dolt_tag, dolt_branch -> status), dprocedures/dolt_merge.go
// (doltMergeSchema: hash, fast_forward, conflicts, message),
// dtablefunctions/dolt_diff_summary.go and dolt_diff_stat.go (their
// schemas), dtables/branches_table.go (dolt_branches, dirty last).
package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/memory"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
)

func sqlUser(ctx *sql.Context) string {
	if u := ctx.Client().User; u != "" {
		return u
	}
	return "root"
}

func statusRow(status int64) (sql.RowIter, error) {
	return sql.RowsToRowIter(sql.NewRow(status)), nil
}

var statusSchema = sql.Schema{&sql.Column{Name: "status", Type: types.Int64}}

// clearSession drops the caller's cached table data after a working set was
// replaced, so its transaction cannot write the old rows back.
func clearSession(ctx *sql.Context) {
	if s, ok := ctx.Session.(*memory.Session); ok {
		_, _ = s.StartTransaction(ctx, sql.ReadWrite)
	}
}

func (p *provider) registerProcedures() {
	reg := func(name string, sch sql.Schema, fn func(*sql.Context, ...string) (sql.RowIter, error)) {
		p.procs.Register(sql.ExternalStoredProcedureDetails{Name: name, Schema: sch, Function: fn})
	}
	reg("dolt_commit", sql.Schema{&sql.Column{Name: "hash", Type: types.LongText}}, p.doltCommit)
	reg("dolt_tag", statusSchema, p.doltTag)
	reg("dolt_branch", statusSchema, p.doltBranch)
	reg("dolt_checkout", sql.Schema{&sql.Column{Name: "status", Type: types.Int64},
		&sql.Column{Name: "message", Type: types.LongText}}, p.doltCheckout)
	reg("dolt_merge", sql.Schema{&sql.Column{Name: "hash", Type: types.LongText},
		&sql.Column{Name: "fast_forward", Type: types.Int64}, &sql.Column{Name: "conflicts", Type: types.Int64},
		&sql.Column{Name: "message", Type: types.LongText}}, p.doltMerge)
	reg("dolt_reset", statusSchema, p.doltReset)
	reg("dolt_add", statusSchema, func(*sql.Context, ...string) (sql.RowIter, error) {
		return nil, fmt.Errorf("DOLT_ADD: staging is not modelled by this test server; commit with DOLT_COMMIT('-A', '-m', ...)")
	})
}

// DOLT_COMMIT: -a/-A/--all commit every change (staging is not modelled, so
// one of them is required), -m message, --allow-empty.  Like Dolt, a
// commit with nothing changed fails with "nothing to commit".
func (p *provider) doltCommit(ctx *sql.Context, args ...string) (sql.RowIter, error) {
	var msg string
	all, allowEmpty, haveMsg := false, false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--allow-empty":
			allowEmpty = true
		case a == "--all" || a == "-a" || a == "-A":
			all = true
		case a == "-m" || a == "--message":
			if i+1 >= len(args) {
				return nil, fmt.Errorf("error: -m needs a message")
			}
			msg, haveMsg = args[i+1], true
			i++
		case a == "-am" || a == "-Am":
			if i+1 >= len(args) {
				return nil, fmt.Errorf("error: -m needs a message")
			}
			all, msg, haveMsg = true, args[i+1], true
			i++
		default:
			return nil, fmt.Errorf("DOLT_COMMIT option %q is not modelled by this test server", a)
		}
	}
	if !haveMsg {
		return nil, fmt.Errorf("Must provide commit message.")
	}
	if !all {
		return nil, fmt.Errorf("DOLT_COMMIT without -a/-A: staging is not modelled by this test server")
	}
	branch, err := p.current(ctx)
	if err != nil {
		return nil, err
	}
	r := p.r
	r.mu.Lock()
	defer r.mu.Unlock()
	snap, err := readDB(ctx, r.working[branch])
	if err != nil {
		return nil, err
	}
	head := r.commits[r.branches[branch]]
	if contentOf(snap) == head.content && !allowEmpty {
		return nil, fmt.Errorf("nothing to commit")
	}
	c := r.newCommit([]string{head.hash}, snap, msg, sqlUser(ctx))
	r.branches[branch] = c.hash
	return sql.RowsToRowIter(sql.NewRow(c.hash)), nil
}

// DOLT_TAG(name [, ref]) [-m msg]; DOLT_TAG('-d', name).
func (p *provider) doltTag(ctx *sql.Context, args ...string) (sql.RowIter, error) {
	var pos []string
	del, msg := false, ""
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-d" || a == "--delete":
			del = true
		case a == "-m" || a == "--message":
			if i+1 < len(args) {
				msg = args[i+1]
				i++
			}
		case strings.HasPrefix(a, "-"):
			return nil, fmt.Errorf("DOLT_TAG option %q is not modelled by this test server", a)
		default:
			pos = append(pos, a)
		}
	}
	r := p.r
	branch := p.sessionBranch(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	if del {
		if len(pos) == 0 {
			return nil, fmt.Errorf("error: tag name required")
		}
		for _, n := range pos {
			if _, ok := r.tags[n]; !ok {
				return nil, fmt.Errorf("tag not found")
			}
			delete(r.tags, n)
			delete(r.revs, r.name+"/"+n)
		}
		return statusRow(0)
	}
	if len(pos) == 0 || len(pos) > 2 {
		return nil, fmt.Errorf("error: DOLT_TAG takes a tag name and an optional ref")
	}
	if _, ok := r.tags[pos[0]]; ok {
		return nil, fmt.Errorf("already exists")
	}
	if !validRefName(pos[0]) {
		return nil, fmt.Errorf("invalid ref name: %s", pos[0])
	}
	spec := "HEAD"
	if len(pos) == 2 {
		spec = pos[1]
	}
	h, err := r.resolve(spec, branch)
	if err != nil {
		return nil, err
	}
	r.tags[pos[0]] = &tag{hash: h, message: msg, date: r.tick(), tagger: sqlUser(ctx)}
	return statusRow(0)
}

// Dolt's ref names follow git's check-ref-format (go/libraries/doltcore/
// ref: IsValidBranchName / IsValidTagName).
func validRefName(n string) bool {
	if n == "" || strings.HasPrefix(n, "-") || strings.HasSuffix(n, ".") || strings.HasSuffix(n, "/") ||
		strings.Contains(n, "..") || strings.Contains(n, "@{") || strings.HasPrefix(n, "/") || strings.HasSuffix(n, ".lock") {
		return false
	}
	for _, c := range n {
		if c <= ' ' || c == 0x7f || strings.ContainsRune("~^:?*[\\", c) {
			return false
		}
	}
	return true
}

// DOLT_BRANCH(name [, start]); -f/--force resets an existing branch;
// -D/--delete --force deletes.  -d (delete only when merged) is refused:
// the merged check is not modelled.
func (p *provider) doltBranch(ctx *sql.Context, args ...string) (sql.RowIter, error) {
	var pos []string
	force, del := false, ""
	for _, a := range args {
		switch {
		case a == "-f" || a == "--force":
			force = true
		case a == "-D":
			del = "D"
		case a == "-d" || a == "--delete":
			if del == "" {
				del = "d"
			}
		case strings.HasPrefix(a, "-"):
			return nil, fmt.Errorf("DOLT_BRANCH option %q is not modelled by this test server", a)
		default:
			pos = append(pos, a)
		}
	}
	if del == "d" && force {
		del = "D"
	}
	r := p.r
	cur := p.sessionBranch(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	if del == "d" {
		return nil, fmt.Errorf("DOLT_BRANCH -d (delete if merged) is not modelled by this test server; use -D")
	}
	if del == "D" {
		for _, n := range pos {
			if _, ok := r.branches[n]; !ok {
				return nil, fmt.Errorf("branch not found")
			}
			if n == "main" {
				return nil, fmt.Errorf("Cannot delete the default branch main")
			}
			delete(r.branches, n)
			delete(r.working, n)
		}
		return statusRow(0)
	}
	if len(pos) == 0 || len(pos) > 2 {
		return nil, fmt.Errorf("error: DOLT_BRANCH takes a branch name and an optional start point")
	}
	name := pos[0]
	if !validRefName(name) {
		return nil, fmt.Errorf("invalid branch name: %s", name)
	}
	if _, ok := r.branches[name]; ok && !force {
		return nil, fmt.Errorf("fatal: A branch named '%s' already exists.", name)
	}
	spec := "HEAD"
	if len(pos) == 2 {
		spec = pos[1]
	}
	h, err := r.resolve(spec, cur)
	if err != nil {
		return nil, err
	}
	db, err := materialize(r.dbName(name), r.commits[h].snap)
	if err != nil {
		return nil, err
	}
	r.branches[name] = h
	r.working[name] = db
	clearSession(ctx)
	return statusRow(0)
}

func (p *provider) doltCheckout(ctx *sql.Context, args ...string) (sql.RowIter, error) {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		return nil, fmt.Errorf("DOLT_CHECKOUT: only DOLT_CHECKOUT(branch) is modelled by this test server")
	}
	p.r.mu.Lock()
	_, ok := p.r.branches[args[0]]
	p.r.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("branch not found: %s", args[0])
	}
	p.mu.Lock()
	p.checkout[ctx.Session.ID()] = args[0]
	delete(p.merges, ctx.Session.ID())
	p.mu.Unlock()
	return sql.RowsToRowIter(sql.NewRow(int64(0), fmt.Sprintf("Switched to branch '%s'", args[0]))), nil
}

func (p *provider) doltReset(ctx *sql.Context, args ...string) (sql.RowIter, error) {
	if len(args) != 1 || args[0] != "--hard" {
		return nil, fmt.Errorf("DOLT_RESET: only DOLT_RESET('--hard') is modelled by this test server")
	}
	branch, err := p.current(ctx)
	if err != nil {
		return nil, err
	}
	r := p.r
	r.mu.Lock()
	defer r.mu.Unlock()
	db, err := materialize(r.dbName(branch), r.commits[r.branches[branch]].snap)
	if err != nil {
		return nil, err
	}
	r.working[branch] = db
	clearSession(ctx)
	return statusRow(0)
}

func autocommit(ctx *sql.Context) bool {
	if ctx.GetIgnoreAutoCommit() {
		return false
	}
	v, err := ctx.GetSessionVariable(ctx, "autocommit")
	if err != nil {
		return true
	}
	on, _ := sql.ConvertToBool(ctx, v)
	return on
}

// DOLT_MERGE into the current branch (dprocedures/dolt_merge.go).
// Fast-forwards when it can (unless --no-ff), refuses a non-fast-forward
// under --ff-only ("fatal: Not possible to fast-forward, aborting"), else
// three-way merges and commits.  Returns the commit it made (the target of
// a fast-forward, the merge commit), or "" with "Everything up-to-date".
//
// Uncommitted changes on the branch: refused when the merge changes one of
// the tables they touch ("local changes would be stomped by merge", as
// Dolt's StompedTblNames), else carried over into the new working set, the
// branch staying dirty.
//
// Conflicts and constraint violations (a UNIQUE index the merged rows
// break): under autocommit the merge fails and nothing changes (Dolt rolls
// the transaction back); inside an explicit transaction it returns
// conflicts = 1 and lists the tables in dolt_conflicts /
// dolt_constraint_violations until DOLT_MERGE('--abort') or the transaction
// ends.  This server never writes conflicted rows into the working set.
//
// Where the branch moves: its head at once, its working set when the
// transaction commits (publish) -- under autocommit at once.  In between,
// as on Dolt, another session reads the branch at its new head with the old
// working set: dirty.
func (p *provider) doltMerge(ctx *sql.Context, args ...string) (sql.RowIter, error) {
	var pos []string
	ffOnly, noFF, abort, msg := false, false, false, ""
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--ff-only" && p.without["ff-only"]:
			return nil, fmt.Errorf("error: unknown option `ff-only'")
		case a == "--ff-only":
			ffOnly = true
		case a == "--no-ff":
			noFF = true
		case a == "--abort":
			abort = true
		case a == "-m" || a == "--message":
			if i+1 < len(args) {
				msg = args[i+1]
				i++
			}
		case strings.HasPrefix(a, "-"):
			return nil, fmt.Errorf("DOLT_MERGE option %q is not modelled by this test server", a)
		default:
			pos = append(pos, a)
		}
	}
	row := func(h string, ff, conf int64, m string) (sql.RowIter, error) {
		return sql.RowsToRowIter(sql.NewRow(h, ff, conf, m)), nil
	}
	if abort {
		p.mu.Lock()
		_, had := p.merges[ctx.Session.ID()]
		delete(p.merges, ctx.Session.ID())
		p.mu.Unlock()
		if !had {
			return nil, fmt.Errorf("fatal: There is no merge to abort")
		}
		return row("", 0, 0, "merge aborted")
	}
	if len(pos) != 1 {
		return nil, fmt.Errorf("error: DOLT_MERGE takes one branch, tag or commit")
	}
	branch, err := p.current(ctx)
	if err != nil {
		return nil, err
	}
	r := p.r
	r.mu.Lock()
	defer r.mu.Unlock()
	head := r.branches[branch]
	src, err := r.resolve(pos[0], branch)
	if err != nil {
		return nil, err
	}
	work, err := readDB(ctx, r.working[branch])
	if err != nil {
		return nil, err
	}
	if src == head || r.ancestors(head)[src] {
		return row("", 0, 0, "Everything up-to-date")
	}
	headSnap := r.commits[head].snap
	ff := r.ancestors(src)[head] && !noFF
	if !ff && ffOnly {
		return nil, fmt.Errorf("fatal: Not possible to fast-forward, aborting")
	}
	result := r.commits[src].snap
	if !ff {
		base := r.mergeBase(head, src)
		var baseSnap snapshot
		if base != "" {
			baseSnap = r.commits[base].snap
		}
		merged, conflicts := threeWay(baseSnap, headSnap, r.commits[src].snap)
		violations := uniqueViolations(merged)
		if len(conflicts)+len(violations) > 0 {
			if autocommit(ctx) {
				if len(conflicts) == 0 {
					return nil, fmt.Errorf("Committing this transaction resulted in a working set with constraint violations, transaction rolled back. This constraint violation may be the result of a previous merge or the result of transaction sequencing. Constraint violations from a merge can be resolved using the dolt_constraint_violations table before committing the transaction. To allow transactions to be committed with constraint violations from a merge or transaction sequencing set @@dolt_force_transaction_commit=1.")
				}
				return nil, fmt.Errorf("Merge conflict detected, @autocommit transaction rolled back. @autocommit must be disabled so that merge conflicts can be resolved using the dolt_conflicts and dolt_schema_conflicts tables before manually committing the transaction")
			}
			p.mu.Lock()
			p.merges[ctx.Session.ID()] = &mergeState{tx: ctx.GetTransaction(), conflicts: conflicts, violations: violations}
			p.mu.Unlock()
			return row("", 0, 1, "conflicts found")
		}
		result = merged
	}
	// Uncommitted changes: stomped, or carried over.
	kept := snapshot{}
	var stomped []string
	changedByMerge := map[string]bool{}
	for _, d := range diffSnapshots(headSnap, result) {
		changedByMerge[d.name()] = true
	}
	for _, d := range diffSnapshots(headSnap, work) {
		name := d.name()
		if changedByMerge[name] {
			stomped = append(stomped, name)
		}
		kept[name] = work[name] // nil for a table dropped in the working set
	}
	if len(stomped) > 0 {
		return nil, fmt.Errorf("error: local changes would be stomped by merge:\n\t%s\n Please commit your changes before you merge.", strings.Join(stomped, "\n\t"))
	}
	newWork := snapshot{}
	for n, t := range result {
		newWork[n] = t
	}
	for n, t := range kept {
		if t == nil {
			delete(newWork, n)
		} else {
			newWork[n] = t
		}
	}
	made, fastForward := src, int64(1)
	if !ff {
		if msg == "" {
			msg = fmt.Sprintf("Merge branch '%s' into %s", pos[0], branch)
		}
		made, fastForward = r.newCommit([]string{head, src}, result, msg, sqlUser(ctx)).hash, 0
	}
	db, err := materialize(r.dbName(branch), newWork)
	if err != nil {
		return nil, err
	}
	r.branches[branch] = made
	if autocommit(ctx) {
		r.working[branch] = db
	} else {
		p.mu.Lock()
		p.pending[ctx.Session.ID()] = append(p.pending[ctx.Session.ID()], pendingWS{branch: branch, head: made, db: db})
		p.mu.Unlock()
	}
	clearSession(ctx)
	return row(made, fastForward, 0, "merge successful")
}

// publish writes the working sets a session's merges left pending, as its
// transaction ends (COMMIT or ROLLBACK).  With -commit-lag the write comes
// that long after the COMMIT arrives and the reply that long after the
// write: a loaded server, on which other sessions interleave.
func (p *provider) publish(session uint32) {
	p.mu.Lock()
	list := p.pending[session]
	delete(p.pending, session)
	p.mu.Unlock()
	if len(list) == 0 {
		return
	}
	time.Sleep(p.commitLag)
	p.r.mu.Lock()
	for _, w := range list {
		if p.r.branches[w.branch] == w.head {
			p.r.working[w.branch] = w.db
		}
	}
	p.r.mu.Unlock()
	time.Sleep(p.commitLag)
}

// --- functions -----------------------------------------------------------

// refFunc: HASHOF(ref) and DOLT_MERGE_BASE(a, b), evaluated against the
// current database's branch.
type refFunc struct {
	p    *provider
	name string
	args []sql.Expression
}

func (f *refFunc) Resolved() bool {
	for _, a := range f.args {
		if !a.Resolved() {
			return false
		}
	}
	return true
}
func (f *refFunc) String() string             { return f.name + "(...)" }
func (f *refFunc) Type() sql.Type             { return types.LongText }
func (f *refFunc) IsNullable() bool           { return true }
func (f *refFunc) Children() []sql.Expression { return f.args }
func (f *refFunc) FunctionName() string       { return f.name }
func (f *refFunc) Description() string        { return f.name }
func (f *refFunc) WithChildren(c ...sql.Expression) (sql.Expression, error) {
	return &refFunc{p: f.p, name: f.name, args: c}, nil
}
func (f *refFunc) Eval(ctx *sql.Context, row sql.Row) (interface{}, error) {
	var vals []string
	for _, a := range f.args {
		v, err := a.Eval(ctx, row)
		if err != nil {
			return nil, err
		}
		if v == nil {
			return nil, nil
		}
		vals = append(vals, fmt.Sprint(v))
	}
	branch := f.p.sessionBranch(ctx)
	if db := ctx.GetCurrentDatabase(); strings.Contains(db, "/") {
		branch = strings.SplitN(db, "/", 2)[1]
	}
	r := f.p.r
	r.mu.Lock()
	defer r.mu.Unlock()
	var hs []string
	for _, v := range vals {
		h, err := r.resolve(v, branch)
		if err != nil {
			return nil, err
		}
		hs = append(hs, h)
	}
	if f.name == "hashof" {
		return hs[0], nil
	}
	return r.mergeBase(hs[0], hs[1]), nil
}

func (p *provider) functions() []sql.Function {
	return []sql.Function{
		sql.Function1{Name: "hashof", Fn: func(e sql.Expression) sql.Expression {
			return &refFunc{p: p, name: "hashof", args: []sql.Expression{e}}
		}},
		sql.Function2{Name: "dolt_merge_base", Fn: func(a, b sql.Expression) sql.Expression {
			return &refFunc{p: p, name: "dolt_merge_base", args: []sql.Expression{a, b}}
		}},
	}
}

// --- table functions -----------------------------------------------------

type tableFunc struct {
	p     *provider
	name  string
	db    sql.Database
	args  []sql.Expression
	sch   sql.Schema
	nargs [2]int
	gen   func(ctx *sql.Context, branch string, args []string) ([]sql.Row, error)
}

func (t *tableFunc) NewInstance(ctx *sql.Context, db sql.Database, args []sql.Expression) (sql.Node, error) {
	if len(args) < t.nargs[0] || len(args) > t.nargs[1] {
		return nil, fmt.Errorf("%s: wrong number of arguments (this test server models %d to %d)", t.name, t.nargs[0], t.nargs[1])
	}
	// Dolt's table functions take literal (or bound) arguments only
	// (dtablefunctions: "only literal values supported").
	for _, a := range args {
		switch a.(type) {
		case *expression.Literal, *expression.BindVar:
		default:
			return nil, fmt.Errorf("Invalid argument to %s: %s – only literal values supported", t.name, strings.ToLower(a.String()))
		}
	}
	c := *t
	c.db, c.args = db, args
	return &c, nil
}
func (t *tableFunc) Resolved() bool {
	for _, a := range t.args {
		if !a.Resolved() {
			return false
		}
	}
	return true
}
func (t *tableFunc) IsReadOnly() bool                           { return true }
func (t *tableFunc) String() string                             { return t.name }
func (t *tableFunc) Schema() sql.Schema                         { return t.sch }
func (t *tableFunc) Children() []sql.Node                       { return nil }
func (t *tableFunc) WithChildren(...sql.Node) (sql.Node, error) { return t, nil }
func (t *tableFunc) Expressions() []sql.Expression              { return t.args }
func (t *tableFunc) WithExpressions(e ...sql.Expression) (sql.Node, error) {
	c := *t
	c.args = e
	return &c, nil
}
func (t *tableFunc) Database() sql.Database { return t.db }
func (t *tableFunc) WithDatabase(db sql.Database) (sql.Node, error) {
	c := *t
	c.db = db
	return &c, nil
}
func (t *tableFunc) Name() string               { return t.name }
func (t *tableFunc) Description() string        { return t.name }
func (t *tableFunc) Collation() sql.CollationID { return sql.Collation_Default }
func (t *tableFunc) CollationCoercibility(*sql.Context) (sql.CollationID, byte) {
	return sql.Collation_binary, 5
}
func (t *tableFunc) RowIter(ctx *sql.Context, row sql.Row) (sql.RowIter, error) {
	var vals []string
	for _, a := range t.args {
		v, err := a.Eval(ctx, row)
		if err != nil {
			return nil, err
		}
		if v == nil {
			return nil, fmt.Errorf("%s: argument is NULL", t.name)
		}
		vals = append(vals, fmt.Sprint(v))
	}
	branch := "main"
	if d, ok := t.db.(*doltDB); ok && d.branch != "" {
		branch = d.branch
	}
	rows, err := t.gen(ctx, branch, vals)
	if err != nil {
		return nil, err
	}
	return sql.RowsToRowIter(rows...), nil
}

func (p *provider) registerTableFunctions() {
	p.funcs = map[string]sql.TableFunction{}
	add := func(name string, lo, hi int, sch sql.Schema, gen func(*sql.Context, string, []string) ([]sql.Row, error)) {
		p.funcs[name] = &tableFunc{p: p, name: name, sch: sch, nargs: [2]int{lo, hi}, gen: gen}
	}
	r := p.r
	// DOLT_LOG([ref]): the commits reachable from ref (default HEAD),
	// newest first, with dolt_log's columns.
	add("dolt_log", 0, 1, logSchema("dolt_log"), func(ctx *sql.Context, branch string, a []string) ([]sql.Row, error) {
		spec := "HEAD"
		if len(a) == 1 {
			if strings.HasPrefix(a[0], "-") {
				return nil, fmt.Errorf("DOLT_LOG option %q is not modelled by this test server", a[0])
			}
			spec = a[0]
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		h, err := r.resolve(spec, branch)
		if err != nil {
			return nil, err
		}
		var out []sql.Row
		for _, c := range r.log(h) {
			out = append(out, sql.NewRow(c.hash, c.committer, c.email, c.date, c.message, uint64(c.order)))
		}
		return out, nil
	})
	diffs := func(branch string, a []string) ([]tableDiff, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		var snaps [2]snapshot
		for i := 0; i < 2; i++ {
			if strings.Contains(a[i], "..") {
				return nil, fmt.Errorf("two-dot and three-dot ranges are not modelled by this test server")
			}
			h, err := r.resolve(a[i], branch)
			if err != nil {
				return nil, err
			}
			snaps[i] = r.commits[h].snap
		}
		all := diffSnapshots(snaps[0], snaps[1])
		if len(a) == 3 {
			var out []tableDiff
			for _, d := range all {
				if d.from == a[2] || d.to == a[2] {
					out = append(out, d)
				}
			}
			return out, nil
		}
		return all, nil
	}
	// dolt_diff_summary(from, to [, table]): from_table_name,
	// to_table_name, diff_type (added/dropped/modified), data_change,
	// schema_change.
	add("dolt_diff_summary", 2, 3, cols("dolt_diff_summary", "from_table_name", types.Text, "to_table_name", types.Text,
		"diff_type", types.Text, "data_change", types.Boolean, "schema_change", types.Boolean),
		func(ctx *sql.Context, branch string, a []string) ([]sql.Row, error) {
			ds, err := diffs(branch, a)
			if err != nil {
				return nil, err
			}
			var out []sql.Row
			for _, d := range ds {
				out = append(out, sql.NewRow(d.from, d.to, d.diffType, d.dataChange, d.schemaChange))
			}
			return out, nil
		})
	// dolt_diff_stat(from, to [, table]): table_name, rows_unmodified,
	// rows_added, rows_deleted, rows_modified, cells_added, cells_deleted,
	// cells_modified, old_row_count, new_row_count, old_cell_count,
	// new_cell_count.  Cells are counted per whole row here.
	add("dolt_diff_stat", 2, 3, cols("dolt_diff_stat", "table_name", types.LongText, "rows_unmodified", types.Int64,
		"rows_added", types.Int64, "rows_deleted", types.Int64, "rows_modified", types.Int64,
		"cells_added", types.Int64, "cells_deleted", types.Int64, "cells_modified", types.Int64,
		"old_row_count", types.Int64, "new_row_count", types.Int64, "old_cell_count", types.Int64,
		"new_cell_count", types.Int64),
		func(ctx *sql.Context, branch string, a []string) ([]sql.Row, error) {
			ds, err := diffs(branch, a)
			if err != nil {
				return nil, err
			}
			var out []sql.Row
			for _, d := range ds {
				if !d.dataChange {
					continue
				}
				name := d.to
				if name == "" {
					name = d.from
				}
				u := func(n int) int64 { return int64(n) }
				out = append(out, sql.NewRow(name, u(d.unmodified), u(d.added), u(d.deleted), u(d.modified),
					u(d.added*d.columns), u(d.deleted*d.oldCols), u(d.modified), u(d.oldRows), u(d.newRows),
					u(d.oldRows*d.oldCols), u(d.newRows*d.columns)))
			}
			return out, nil
		})
}

package sqltask

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/geoflow/geoflow/internal/sqlscript"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// problem is something wrong with a script, at a line and column of it.
type problem struct {
	line, col int
	msg       string
}

// at says the problem where the script comes from: "sql/by_zoning.sql:3:12: ..." for a
// file, "line 3, column 12: ..." for the task's sql: key.
func (p problem) at(source string) string {
	if source == "sql" {
		return fmt.Sprintf("line %d, column %d: %s", p.line, p.col, p.msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", source, p.line, p.col, p.msg)
}

// problems returns what is wrong with script text whose parameters are names: it does not
// split into statements (a quote or comment never closed), it holds none, a statement
// would end the unit's transaction, or a parameter is unknown or of another form. With d
// nil (a flow validated without a store) the script is read as PostgreSQL and as SQLite,
// and only what is wrong in either where it splits is reported; with d it is read as
// d's, and a statement that calls a function d does not have (d.Functions) is refused.
func problems(text string, names []string, d *store.SQLDialect) []problem {
	dialects := []sqlscript.Dialect{sqlscript.PostgreSQL, sqlscript.SQLite}
	if d != nil {
		dialects = []sqlscript.Dialect{d.Dialect}
	}
	var out []problem
	add := func(off int, format string, args ...any) {
		line, col := sqlscript.Position(text, off)
		p := problem{line: line, col: col, msg: fmt.Sprintf(format, args...)}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	var split [][]sqlscript.Statement
	var scanErr *sqlscript.ScanError
	for _, dl := range dialects {
		sts, err := sqlscript.Split(text, dl)
		if se, ok := err.(*sqlscript.ScanError); ok && scanErr == nil {
			scanErr = se
		}
		if err == nil {
			split = append(split, sts)
			for _, st := range sts {
				checkStatement(st, dl, names, d, add)
			}
		}
	}
	switch {
	case len(split) == 0 && scanErr != nil:
		add(scanErr.Offset, "%s", scanErr.Msg)
	case len(split) > 0 && len(split[0]) == 0:
		add(0, "the script holds no statement")
	}
	sort.SliceStable(out, func(i, j int) bool {
		return out[i].line < out[j].line || out[i].line == out[j].line && out[i].col < out[j].col
	})
	return out
}

// checkStatement reports through add what is wrong with one statement read in dialect dl.
func checkStatement(st sqlscript.Statement, dl sqlscript.Dialect, names []string, d *store.SQLDialect, add func(int, string, ...any)) {
	if tok, ok := st.EndsTransaction(); ok {
		add(tok.Start, "%s: a SQL step runs in one transaction with its unit's done state, which geoflow begins and commits: "+
			"leave out BEGIN, COMMIT and ROLLBACK (SAVEPOINT and ROLLBACK TO are fine)", strings.ToUpper(tok.Text))
	}
	for _, p := range st.Params() {
		if msg := store.ParamProblem(p.Text, names); msg != "" {
			add(p.Start, "%s", msg)
		}
	}
	if dl == sqlscript.PostgreSQL {
		for _, w := range st.Glued() {
			if slices.Contains(names, w.Text) {
				add(w.Start-1, "PostgreSQL reads the @ of @%s as part of the operator before it: put a space between them", w.Text)
			}
		}
	}
	if d != nil && d.Functions != nil {
		for _, c := range st.Calls() {
			if !d.Functions[strings.ToLower(c.Text)] {
				add(c.Start, "%s() is not a function %s has: %s", c.Text, dl, d.Advice)
			}
		}
	}
}

// races says which tables the script names that another task of the flow writes while it
// may run at the same time (neither before nor after this one): what the script reads of
// them would be half-harvested.
func races(text string, f tasks.FlowInfo) []string {
	words := sqlscript.Words(text)
	var out []string
	for _, id := range slices.Sorted(maps.Keys(f.Tables)) {
		if f.Upstream[id] || f.Downstream[id] {
			continue
		}
		if _, name, err := store.SplitTable(f.Tables[id]); err == nil && words[strings.ToLower(name)] {
			out = append(out, fmt.Sprintf("the script names %s, the table task %q writes, and may run while %q does: add %q to depends_on (or make %q depend on this task)",
				f.Tables[id], id, id, id, id))
		}
	}
	return out
}

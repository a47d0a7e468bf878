package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/internal/sqlscript"
)

// SQLScript is a flow's SQL step as one unit runs it (UnitTx.ExecSQL): its statements in
// the unit's transaction, with its parameters bound by the driver.
type SQLScript struct {
	// Source names the script in messages: its file as the flow names it
	// ("sql/by_zoning.sql"), or the task's sql: key ("tasks.by_zoning.sql").
	Source string
	Text   string
	Params SQLParams
}

// SQLParams are the values of a script's named parameters. Each store binds them in its
// own types (see the parameter list in docs/flows.md).
type SQLParams struct {
	RunID      int64  // @run_id
	Flow, Task string // @flow, @task
	// Area is the run's --bbox, lon/lat (@bbox, @bbox_xmin ... @bbox_ymax); nil for a
	// run of the whole area, when they are NULL.
	Area *orb.Bound
	// Tables maps each upstream task id to the [schema.]table it writes, as its flow
	// names it (@<id>_table); the store binds the name as it names the table.
	Tables map[string]string
}

// The parameters every script has, besides an upstream task's @<id>_table.
const (
	ParamRunID = "run_id"
	ParamFlow  = "flow"
	ParamTask  = "task"
	ParamBBox  = "bbox"
	ParamXMin  = "bbox_xmin"
	ParamYMin  = "bbox_ymin"
	ParamXMax  = "bbox_xmax"
	ParamYMax  = "bbox_ymax"
)

// TableParam is the parameter naming the table upstream task id writes: "parcels_table".
func TableParam(id string) string { return id + "_table" }

// SQLParamNames lists the parameters a script with the given upstream tables (task ids)
// may use, without their @, sorted.
func SQLParamNames(tables []string) []string {
	names := []string{ParamRunID, ParamFlow, ParamTask, ParamBBox, ParamXMin, ParamYMin, ParamXMax, ParamYMax}
	for _, id := range tables {
		names = append(names, TableParam(id))
	}
	slices.Sort(names)
	return names
}

// Names lists p's parameters, without their @, sorted.
func (p SQLParams) Names() []string {
	return SQLParamNames(slices.Collect(maps.Keys(p.Tables)))
}

// Corners are the Area's corners as the four @bbox_ parameters take them (xmin, ymin,
// xmax, ymax); nil values when the run has no area.
func (p SQLParams) Corners() map[string]any {
	if p.Area == nil {
		return map[string]any{ParamXMin: nil, ParamYMin: nil, ParamXMax: nil, ParamYMax: nil}
	}
	a := p.Area
	return map[string]any{ParamXMin: a.Min[0], ParamYMin: a.Min[1], ParamXMax: a.Max[0], ParamYMax: a.Max[1]}
}

// SQLDialect is the SQL a store's database runs.
type SQLDialect struct {
	Dialect sqlscript.Dialect
	// Functions, when not nil, are all the functions a statement can call, lower-cased:
	// SQLite's own, its table-valued ones and the store's. Nil means not known in
	// advance (PostgreSQL: a script may create its own).
	Functions map[string]bool
	// Advice is what to tell about a function not in Functions.
	Advice string
}

// SQLStore is what a flow's SQL step asks the store before a run: which SQL it runs.
type SQLStore interface {
	SQLDialect(ctx context.Context) (SQLDialect, error)
}

// Split splits the script in dialect d; a quote or comment never closed fails it with a
// *Fault naming where it opens.
func (s *SQLScript) Split(d sqlscript.Dialect) ([]sqlscript.Statement, error) {
	sts, err := sqlscript.Split(s.Text, d)
	var se *sqlscript.ScanError
	if errors.As(err, &se) {
		line, col := sqlscript.Position(s.Text, se.Offset)
		return nil, &Fault{Class: dlq.ClassDatabase, Op: fmt.Sprintf("reading %s", s.Source),
			Msg: fmt.Sprintf("line %d, column %d: %s", line, col, se.Msg), Err: err}
	}
	return sts, err
}

// SQLStatementError is where statement i of n of the script failed, for a Fault's Op:
// "statement 2 of 3 (sql/by_zoning.sql line 5) failed at line 6, column 12". at is the
// byte offset in the script the database pointed at, or -1.
func (s *SQLScript) SQLStatementError(i, n int, st sqlscript.Statement, at int) string {
	op := fmt.Sprintf("statement %d of %d (%s line %d) failed", i+1, n, s.Source, st.Line(s.Text))
	if at >= 0 {
		line, col := sqlscript.Position(s.Text, at)
		op += fmt.Sprintf(" at line %d, column %d", line, col)
	}
	return op
}

// CheckParams refuses a parameter of st that the script cannot have: a name not in
// names, or a form other than @name ($1, ?, :name, which would bind a value of the
// store's own or NULL). A store checks before binding; flows are checked alike when they
// are validated.
func (s *SQLScript) CheckParams(i, n int, st sqlscript.Statement, names []string) error {
	for _, p := range st.Params() {
		if msg := ParamProblem(p.Text, names); msg != "" {
			return &Fault{Class: dlq.ClassDatabase, Op: s.SQLStatementError(i, n, st, p.Start), Msg: msg}
		}
	}
	return nil
}

// ParamProblem says what is wrong with the parameter written as text ("@run_id", "$1")
// in a script whose parameters are names; "" when nothing is.
func ParamProblem(text string, names []string) string {
	name, ok := strings.CutPrefix(text, "@")
	switch {
	case !ok:
		return fmt.Sprintf("%s: a SQL step takes named parameters only (@%s)", text, strings.Join(names, ", @"))
	case !slices.Contains(names, name):
		return fmt.Sprintf("%s is not a parameter of this step (@%s; names are lower-case; PostgreSQL's @ operator needs a space after it)", text, strings.Join(names, ", @"))
	}
	return ""
}

package gpkg

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/geoflow/geoflow/internal/sqlscript"
	"github.com/geoflow/geoflow/store"
)

// SQLDialect implements store.SQLStore: SQLite's, with every function a statement can
// call here (pragma_function_list, which holds those the store registers, such as
// ST_MinX), the table-valued ones (pragma_module_list: json_each ...) and the pragma
// functions (pragma_table_info ...). A GeoPackage has no other spatial SQL.
func (s *Store) SQLDialect(ctx context.Context) (store.SQLDialect, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT name FROM pragma_function_list
		UNION SELECT name FROM pragma_module_list
		UNION SELECT 'pragma_' || name FROM pragma_pragma_list`)
	if err != nil {
		return store.SQLDialect{}, translate("listing SQLite's functions", err)
	}
	defer rows.Close()
	// JSON's table-valued functions are not modules SQLite lists.
	fns := map[string]bool{"json_each": true, "json_tree": true, "jsonb_each": true, "jsonb_tree": true}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return store.SQLDialect{}, translate("listing SQLite's functions", err)
		}
		fns[strings.ToLower(name)] = true
	}
	if err := rows.Err(); err != nil {
		return store.SQLDialect{}, translate("listing SQLite's functions", err)
	}
	return store.SQLDialect{Dialect: sqlscript.SQLite, Functions: fns, Advice: noSpatialSQL}, nil
}

// sqliteParams are a script's parameters as SQLite takes them: @bbox a GeoPackage
// geometry blob (a polygon, srs_id 4326), which a geometry column takes as it is and
// ST_MinX() and the like read; the corners REAL; the tables as this GeoPackage names them.
func sqliteParams(p store.SQLParams) (map[string]any, error) {
	m := map[string]any{store.ParamRunID: p.RunID, store.ParamFlow: p.Flow, store.ParamTask: p.Task, store.ParamBBox: nil}
	if p.Area != nil {
		blob, err := encodeGeometry(p.Area.ToPolygon(), 4326)
		if err != nil {
			return nil, fmt.Errorf("encoding @bbox: %w", err)
		}
		m[store.ParamBBox] = blob
	}
	for name, v := range p.Corners() {
		m[name] = v
	}
	for id, table := range p.Tables {
		if schema, name, err := store.SplitTable(table); err == nil {
			table = tableName(schema, name)
		}
		m[store.TableParam(id)] = table
	}
	return m, nil
}

// ExecSQL implements store.UnitTx: each statement with the parameters it names, bound by
// name. SQLite reports rows affected for INSERT, UPDATE, DELETE and REPLACE only (not
// for CREATE TABLE ... AS); a statement of another kind adds none.
func (u *unitTx) ExecSQL(ctx context.Context, sc *store.SQLScript) (int64, error) {
	sts, err := sc.Split(sqlscript.SQLite)
	if err != nil {
		return 0, err
	}
	params, err := sqliteParams(sc.Params)
	if err != nil {
		return 0, err
	}
	tx, err := u.begin(ctx)
	if err != nil {
		return 0, err
	}
	names := sc.Params.Names()
	var total int64
	for i, st := range sts {
		if err := sc.CheckParams(i, len(sts), st, names); err != nil {
			return total, err
		}
		var args []any
		seen := map[string]bool{}
		for _, p := range st.Params() {
			if name := p.Text[1:]; !seen[name] {
				seen[name] = true
				args = append(args, sql.Named(name, params[name]))
			}
		}
		res, err := tx.ExecContext(ctx, st.Text, args...)
		if err != nil {
			return total, sqliteFault(sc, i, len(sts), st, err)
		}
		switch st.Verb() {
		case "INSERT", "UPDATE", "DELETE", "REPLACE":
			n, _ := res.RowsAffected()
			total += n
		}
	}
	return total, nil
}

// sqliteFault is the Fault of statement i of n of sc that failed with err. SQLite tells
// no position; a function it does not have gets the advice to use PostGIS.
func sqliteFault(sc *store.SQLScript, i, n int, st sqlscript.Statement, err error) error {
	op := sc.SQLStatementError(i, n, st, -1)
	f, ok := store.AsFault(translate(op, err))
	if !ok {
		return fmt.Errorf("%s: %w", op, err)
	}
	if strings.Contains(f.Msg, "no such function") {
		f.Msg += "; " + noSpatialSQL
	}
	return f
}

// noSpatialSQL is the advice (store.SQLDialect.Advice) for a statement that calls a function SQLite does not have.
const noSpatialSQL = "a GeoPackage store has no spatial SQL functions (beyond ST_MinX, ST_MaxX, ST_MinY, ST_MaxY, their PostGIS names ST_XMin, ST_XMax, ST_YMin, ST_YMax, and ST_IsEmpty): use PostGIS (--database postgres://...) for them"

// rowsAffected sums, by task, the rows the run's SQL steps affected.
func (s *Store) rowsAffected(ctx context.Context, runID int64) (map[string]int64, error) {
	what := fmt.Sprintf("summing the rows run %d's SQL steps affected", runID)
	rows, err := s.r.QueryContext(ctx, `SELECT task, sum(rows_affected) FROM geoflow_units
		WHERE run_id = ? AND rows_affected <> 0 GROUP BY task`, runID)
	if err != nil {
		return nil, translate(what, err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var task string
		var n int64
		if err := rows.Scan(&task, &n); err != nil {
			return nil, translate(what, err)
		}
		out[task] = n
	}
	return out, translate(what, rows.Err())
}

// runRowsAffected is the rows all the run's SQL steps affected.
func (s *Store) runRowsAffected(ctx context.Context, runID int64) (int64, error) {
	var n int64
	err := s.r.QueryRowContext(ctx, `SELECT coalesce(sum(rows_affected), 0) FROM geoflow_units WHERE run_id = ?`, runID).Scan(&n)
	return n, translate(fmt.Sprintf("summing the rows run %d's SQL steps affected", runID), err)
}

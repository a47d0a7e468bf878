package postgis

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/paulmach/orb/encoding/wkt"

	"github.com/geoflow/geoflow/internal/sqlscript"
	"github.com/geoflow/geoflow/store"
)

// SQLDialect implements store.SQLStore. The functions a script may call are not known
// in advance: a script may create its own, and all of PostGIS is there.
func (s *Store) SQLDialect(context.Context) (store.SQLDialect, error) {
	return store.SQLDialect{Dialect: sqlscript.PostgreSQL}, nil
}

// pgParam is a parameter's value and the type it is cast to where it stands, so that
// PostgreSQL knows its type wherever it is used, NULL included.
type pgParam struct {
	value any
	cast  string
}

// pgParams are sc's parameters as PostgreSQL takes them: @bbox a geometry(Polygon, 4326)
// (from EWKT text), the corners double precision, the tables schema-qualified text.
func pgParams(p store.SQLParams) map[string]pgParam {
	m := map[string]pgParam{
		store.ParamRunID: {p.RunID, "bigint"},
		store.ParamFlow:  {p.Flow, "text"},
		store.ParamTask:  {p.Task, "text"},
		store.ParamBBox:  {nil, "geometry(Polygon, 4326)"},
	}
	if p.Area != nil {
		m[store.ParamBBox] = pgParam{"SRID=4326;" + wkt.MarshalString(p.Area.ToPolygon()), m[store.ParamBBox].cast}
	}
	for name, v := range p.Corners() {
		m[name] = pgParam{v, "double precision"}
	}
	for id, table := range p.Tables {
		if schema, name, err := store.SplitTable(table); err == nil {
			table = schema + "." + name
		}
		m[store.TableParam(id)] = pgParam{table, "text"}
	}
	return m
}

// ExecSQL implements store.UnitTx. Each @name becomes a positional parameter with its
// type, ($1::bigint), and the statement is described and executed unprepared, so that
// nothing of a script (whose tables it may drop and create) stays cached on the
// connection; a statement with none runs as it is, in the simple protocol.
func (u *unitTx) ExecSQL(ctx context.Context, sc *store.SQLScript) (int64, error) {
	if err := u.flush(ctx); err != nil {
		return 0, err
	}
	sts, err := sc.Split(sqlscript.PostgreSQL)
	if err != nil {
		return 0, err
	}
	params := pgParams(sc.Params)
	names := sc.Params.Names()
	restore, err := u.scriptSearchPath(ctx)
	if err != nil {
		return 0, err
	}
	defer restore()
	var total int64
	for i, st := range sts {
		if err := sc.CheckParams(i, len(sts), st, names); err != nil {
			return total, err
		}
		var args []any
		index := map[string]int{}
		text, m := st.Rewrite(func(t sqlscript.Token) (string, bool) {
			if t.Kind != sqlscript.Param {
				return "", false
			}
			name := t.Text[1:]
			if _, ok := index[name]; !ok {
				args = append(args, params[name].value)
				index[name] = len(args)
			}
			return fmt.Sprintf("($%d::%s)", index[name], params[name].cast), true
		})
		if len(args) > 0 {
			args = append([]any{pgx.QueryExecModeDescribeExec}, args...)
		}
		tag, err := u.tx.Exec(ctx, text, args...)
		if err != nil {
			return total, sqlFault(sc, i, len(sts), st, text, m, err, u.tx.Conn().IsClosed())
		}
		if v := st.Verb(); tag.Select() && (v == "SELECT" || v == "VALUES" || v == "TABLE") {
			continue // rows returned, not affected
		}
		total += tag.RowsAffected()
	}
	return total, nil
}

// scriptSearchPath makes a script's statements resolve names as the server would without
// geoflow (its unqualified CREATE TABLE lands in public, not in the bookkeeping schema),
// until the returned func puts the bookkeeping schema back for the rest of the unit's
// transaction. After a failed statement the transaction is aborted and rolled back, which
// restores it anyway.
func (u *unitTx) scriptSearchPath(ctx context.Context) (func(), error) {
	var prev, user string
	if err := u.tx.QueryRow(ctx, "SELECT current_setting('search_path'), current_user").Scan(&prev, &user); err != nil {
		return nil, translate("reading the search_path", err)
	}
	path := scriptPath(u.s.userSearchPath(), u.s.schema, user)
	if _, err := u.tx.Exec(ctx, "SELECT set_config('search_path', $1, true)", path); err != nil {
		return nil, translate("setting the search_path of the script", err)
	}
	return func() {
		_, _ = u.tx.Exec(context.WithoutCancel(ctx), "SELECT set_config('search_path', $1, true)", prev)
	}, nil
}

// scriptPath is the search_path a script runs with: the server's (path), without the
// bookkeeping schema, named or as "$user" for a role of its name (docker-compose.yml's
// role is geoflow), so that the script's unqualified tables land where they did before
// that schema existed: in public, for the default "$user", public.
func scriptPath(path, schema, user string) string {
	var keep []string
	for _, p := range strings.Split(path, ",") {
		p = strings.TrimSpace(p)
		name := strings.Trim(p, `"`)
		if p == "" || name == schema || (name == "$user" && user == schema) {
			continue
		}
		keep = append(keep, p)
	}
	if len(keep) == 0 {
		return "public"
	}
	return strings.Join(keep, ", ")
}

// sqlFault is the Fault of statement i of n of sc, run as text, that failed with err:
// translated as every database error is, and placed in the script where PostgreSQL
// pointed (its position in text, mapped back by m), with its detail, hint and context.
// An error the server did not answer is temporary only when the connection is gone
// (closed): otherwise the driver refused the statement (parameters where PostgreSQL
// takes none), and it would refuse it again.
func sqlFault(sc *store.SQLScript, i, n int, st sqlscript.Statement, text string, m sqlscript.Map, err error, closed bool) error {
	f, ok := store.AsFault(translate("", err))
	if !ok {
		return fmt.Errorf("%s: %w", sc.SQLStatementError(i, n, st, -1), err)
	}
	at := -1
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) && !closed {
		f.Temp = false
		if len(st.Params()) > 0 {
			f.Msg += " (PostgreSQL takes no parameters in this statement, such as a view's definition: use them in INSERT, UPDATE, DELETE or CREATE TABLE ... AS)"
		}
	}
	if pgErr != nil {
		if pgErr.Position > 0 {
			at = m.Script(sqlscript.CharOffset(text, int(pgErr.Position)))
		}
		f.Msg = fmt.Sprintf("%s (SQLSTATE %s)", pgErr.Message, pgErr.Code)
		for _, part := range [][2]string{{"detail", pgErr.Detail}, {"hint", pgErr.Hint}, {"context", pgErr.Where}} {
			if part[1] != "" {
				f.Msg += "; " + part[0] + ": " + part[1]
			}
		}
	}
	f.Op = sc.SQLStatementError(i, n, st, at)
	return f
}

// rowsAffected sums, by task, the rows the run's SQL steps affected.
func (s *Store) rowsAffected(ctx context.Context, runID int64) (map[string]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT task, sum(rows_affected) FROM geoflow_units
		WHERE run_id = $1 AND rows_affected <> 0 GROUP BY task`, runID)
	if err != nil {
		return nil, translate(fmt.Sprintf("summing the rows run %d's SQL steps affected", runID), err)
	}
	out := map[string]int64{}
	var task string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&task, &n}, func() error { out[task] = n; return nil })
	return out, translate(fmt.Sprintf("summing the rows run %d's SQL steps affected", runID), err)
}

// runRowsAffected is the rows all the run's SQL steps affected.
func (s *Store) runRowsAffected(ctx context.Context, runID int64) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(rows_affected), 0) FROM geoflow_units WHERE run_id = $1`, runID).Scan(&n)
	return n, translate(fmt.Sprintf("summing the rows run %d's SQL steps affected", runID), err)
}

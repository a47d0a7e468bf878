package postgis

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/paulmach/orb/encoding/wkb"

	"github.com/geoflow/geoflow/internal/sqlscript"
	"github.com/geoflow/geoflow/store"
)

var _ store.Queries = (*Store)(nil)

// queryHead is what wraps a query to describe its result; an error's position in it is
// mapped back into the query by its length.
const queryHead = "SELECT * FROM (\n"

// QueryFeatures implements store.Queries. The query runs in a READ ONLY transaction,
// wrapped as SELECT * FROM (query) q: its result is described first (a prepared
// statement, which runs nothing), then read as one statement that streams. The
// geometry column is the one of type geometry or geography (two fail, naming them);
// its values are read as WKB with their SRID, brought into q.SRID by ST_Transform when
// it is not 0. The other columns are read as ReadFeatures reads a table's (propertySQL):
// integers as bigint, real and numeric as double precision, dates and times as ISO text,
// and anything else as its text.
func (s *Store) QueryFeatures(ctx context.Context, q store.Query, head func(store.QueryResult) error, fn func(*store.StoredFeature) error) error {
	const what = "running the query"
	text, err := store.OneQuery(q.SQL, sqlscript.PostgreSQL)
	if err != nil {
		return err
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return translate(what, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read only: nothing to keep
	sd, err := tx.Conn().Prepare(ctx, "", queryHead+text+"\n) q")
	if err != nil {
		return queryFault(text, len([]rune(queryHead)), err)
	}
	cols, geom, err := describeQuery(ctx, tx, sd.Fields)
	if err != nil {
		return err
	}
	sql, args := queryStreamSQL(text, cols, geom, q.SRID)
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return translate(what, err)
	}
	defer rows.Close()
	qs := &store.QueryStream{Geometry: geom, SRID: q.SRID, Head: head, Fn: fn}
	for _, c := range cols {
		qs.Columns = append(qs.Columns, store.Column{Name: c.Name, Property: c.Name, Type: store.DeclaredType(c.Type)})
	}
	for rows.Next() {
		vals, err := scanQueryRow(rows, len(cols), geom)
		if err != nil {
			return translate(what, err)
		}
		if err := qs.Row(vals); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return translate(what, err)
	}
	return qs.End()
}

// describeQuery names and types the columns of a query's result (format_type's names),
// and returns the index of its geometry column (-1 for none).
func describeQuery(ctx context.Context, tx pgx.Tx, fields []pgconn.FieldDescription) ([]store.StoredColumn, int, error) {
	names := make([]string, len(fields))
	oids, mods := make([]uint32, len(fields)), make([]int32, len(fields))
	for i, f := range fields {
		names[i], oids[i], mods[i] = f.Name, f.DataTypeOID, f.TypeModifier
	}
	if err := store.CheckQueryColumns(names); err != nil {
		return nil, 0, err
	}
	rows, err := tx.Query(ctx, `SELECT format_type(o, m) FROM unnest($1::oid[], $2::int[]) WITH ORDINALITY AS u(o, m, i) ORDER BY i`, oids, mods)
	if err != nil {
		return nil, 0, translate("describing the query's columns", err)
	}
	types, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, 0, translate("describing the query's columns", err)
	}
	cols := make([]store.StoredColumn, len(names))
	geom := -1
	var geoms []string
	for i := range names {
		cols[i] = store.StoredColumn{Name: names[i], Type: types[i]}
		if isGeometryType(types[i]) {
			geom, geoms = i, append(geoms, fmt.Sprintf("%s (%s)", names[i], types[i]))
		}
	}
	if len(geoms) > 1 {
		return nil, 0, fmt.Errorf("the query's result has %d geometry columns, %s: an export writes one; leave the others out, or make them text (ST_AsText)", len(geoms), strings.Join(geoms, ", "))
	}
	return cols, geom, nil
}

// isGeometryType tells PostGIS's spatial types as format_type names them: geometry,
// geometry(Polygon,4326), geography(Point,4326).
func isGeometryType(t string) bool {
	base := baseType(t)
	return base == "geometry" || base == "geography"
}

// queryStreamSQL is the statement that reads the query's rows: the geometry as WKB and
// its SRID (in srid, when not 0), then every column, the geometry's as NULL.
func queryStreamSQL(text string, cols []store.StoredColumn, geom, srid int) (string, []any) {
	var args sqlArgs
	sel := []string{"NULL::bytea", "NULL::int"}
	if geom >= 0 {
		g := "q." + pgx.Identifier{cols[geom].Name}.Sanitize() + "::geometry"
		if srid != 0 {
			g = "ST_Transform(" + g + ", " + args.add(srid) + "::int)"
		}
		sel = []string{"ST_AsBinary(" + g + ")", "ST_SRID(" + g + ")"}
	}
	for i, c := range cols {
		if i == geom {
			sel = append(sel, "NULL")
			continue
		}
		sel = append(sel, propertySQL("q", c))
	}
	return "SELECT " + strings.Join(sel, ", ") + " FROM (\n" + text + "\n) q", args
}

// scanQueryRow reads one row of queryStreamSQL as store.QueryStream takes it.
func scanQueryRow(rows pgx.Rows, n, geom int) ([]any, error) {
	var g []byte
	var srid *int32
	vals := make([]any, n)
	dest := []any{&g, &srid}
	for i := range vals {
		dest = append(dest, &vals[i])
	}
	if err := rows.Scan(dest...); err != nil {
		return nil, err
	}
	if geom >= 0 && g != nil {
		gm, err := wkb.Unmarshal(g)
		if err != nil {
			return nil, fmt.Errorf("decoding a geometry of the query's column %d: %w", geom+1, err)
		}
		qg := store.QueryGeometry{G: gm}
		if srid != nil {
			qg.SRID = int(*srid)
		}
		vals[geom] = qg
	}
	return vals, nil
}

// queryFault is the error of a query PostgreSQL refused when describing it: translated
// as every database error is, and placed in the query where PostgreSQL pointed (at a
// character position of the statement, whose first head characters wrap the query).
func queryFault(text string, head int, err error) error {
	f, ok := store.AsFault(translate("running the query", err))
	if !ok {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		f.Msg = fmt.Sprintf("%s (SQLSTATE %s)", pgErr.Message, pgErr.Code)
		if pgErr.Hint != "" {
			f.Msg += "; hint: " + pgErr.Hint
		}
		if pos := int(pgErr.Position) - head; pgErr.Position > 0 && pos > 0 {
			line, col := sqlscript.Position(text, sqlscript.CharOffset(text, pos))
			f.Op = fmt.Sprintf("running the query: line %d, column %d", line, col)
		}
	}
	return f
}

package postgis

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/store"
)

// What the web UI's maps and downloads read of the tables geoflow wrote (store.Tables):
// the tables are found in the catalog, never in a list of geoflow's own, so a table
// written by an older geoflow or restored from a dump is found as well.

var _ store.Tables = (*Store)(nil)

// featureTablesSQL lists the tables geoflow wrote: ordinary or partitioned tables (not
// views, not partitions) outside the system schemas with a bytea gf_payload_hash and a
// geometry geom, with the SRID of geom's type, the property columns in table order (not
// the identity fid, the rows' number, which is no property),
// whether they carry gf_key and gf_valid_to, and what their stamp is made of (tableMeta).
// $1 and $2, when not NULL, select one schema and name.
const featureTablesSQL = `
SELECT n.nspname, c.relname,
	coalesce(max(postgis_typmod_srid(a.atttypmod)) FILTER (WHERE a.attname = 'geom' AND a.atttypmod <> -1), 0),
	coalesce(array_agg(a.attname::text ORDER BY a.attnum) FILTER (WHERE p.prop), '{}'),
	coalesce(array_agg(format_type(a.atttypid, a.atttypmod) ORDER BY a.attnum) FILTER (WHERE p.prop), '{}'),
	bool_or(a.attname = 'gf_key'), bool_or(a.attname = 'gf_valid_to'),
	c.oid::bigint, c.relfilenode::bigint,
	(SELECT version FROM geoflow_table_stamps WHERE target = n.nspname || '.' || c.relname)
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
CROSS JOIN LATERAL (SELECT a.attname <> 'geom' AND a.attname NOT LIKE 'gf\_%'
	AND NOT (a.attname = 'fid' AND a.attidentity <> '')) p (prop)
WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND has_table_privilege(c.oid, 'SELECT')
	AND n.nspname NOT IN ('information_schema', 'pg_catalog', 'pg_toast') AND n.nspname NOT LIKE 'pg\_%'
	AND ($1::text IS NULL OR n.nspname = $1) AND ($2::text IS NULL OR c.relname = $2)
GROUP BY n.nspname, c.relname, c.oid
HAVING bool_or(a.attname = 'gf_payload_hash' AND a.atttypid = 'bytea'::regtype)
	AND bool_or(a.attname = 'geom' AND format_type(a.atttypid, NULL) = 'geometry')
ORDER BY 1, 2`

// tableMeta is what a table's stamp is made of besides its rows: the table itself (a
// table dropped and created again, or truncated, is another) and its version in
// geoflow_table_stamps, nil when no write of geoflow's has raised it yet (a table written
// by a geoflow before the version was kept, or by others).
type tableMeta struct {
	oid, filenode int64
	version       *int64
}

// tableCounts are a table's counts and extent as of a stamp, which StoredTable keeps so
// that a table unchanged since is not scanned again.
type tableCounts struct {
	stamp          string
	rows, versions int64
	extent         *orb.Bound
}

// StoredTables implements store.Tables.
func (s *Store) StoredTables(ctx context.Context) ([]store.StoredTable, error) {
	tables, metas, err := s.featureTables(ctx, nil, nil)
	if err != nil {
		return nil, err
	}
	for i := range tables {
		if err := s.tableStats(ctx, &tables[i], metas[i]); err != nil {
			return nil, err
		}
	}
	return tables, nil
}

// StoredTable implements store.Tables. An empty schema is public. A table whose version
// geoflow keeps costs a look at the catalog while it is unchanged, and a scan (its counts
// and extent) once after each change; one whose version it does not keep, a scan each
// time (see tableStats).
func (s *Store) StoredTable(ctx context.Context, schema, name string) (store.StoredTable, error) {
	if schema == "" {
		schema = "public"
	}
	tables, metas, err := s.featureTables(ctx, &schema, &name)
	if err != nil {
		return store.StoredTable{}, err
	}
	if len(tables) == 0 {
		return store.StoredTable{}, fmt.Errorf("table %s is not a feature table geoflow wrote: %w",
			pgx.Identifier{schema, name}.Sanitize(), store.ErrNotFound)
	}
	t := tables[0]
	return t, s.tableStats(ctx, &t, metas[0])
}

// featureTables reads the catalog's description of the tables geoflow wrote (all of
// them, or the one schema.name selects), without their counts.
func (s *Store) featureTables(ctx context.Context, schema, name *string) ([]store.StoredTable, []tableMeta, error) {
	const what = "listing the feature tables geoflow wrote"
	rows, err := s.pool.Query(ctx, featureTablesSQL, schema, name)
	if err != nil {
		return nil, nil, translate(what, err)
	}
	var tables []store.StoredTable
	var metas []tableMeta
	var cols, types []string
	t, m := store.StoredTable{Kind: store.KindFeatures}, tableMeta{}
	_, err = pgx.ForEachRow(rows, []any{&t.Schema, &t.Name, &t.SRID, &cols, &types, &t.Keyed, &t.History, &m.oid, &m.filenode, &m.version},
		func() error {
			one := t
			one.Columns = make([]store.StoredColumn, len(cols))
			for i, c := range cols {
				one.Columns[i] = store.StoredColumn{Name: c, Type: types[i]}
			}
			meta := m
			if m.version != nil { // scanned into again for the next row
				v := *m.version
				meta.version = &v
			}
			tables, metas = append(tables, one), append(metas, meta)
			return nil
		})
	return tables, metas, translate(what, err)
}

// tableStats fills t's counts, extent and stamp.
//
// The stamp of a table whose version geoflow keeps is made of the table's identity and
// that version; the counts and extent are read by a scan once per stamp. For any other
// table the stamp is a hash of the row count and of the sum of a hash of each row's
// xmin, the transaction that wrote that version of the row: an insert adds a row, an
// update replaces a row's xmin with the updating transaction's, a deletion removes a
// row. Unlike max(gf_fetched_at) it also changes when a transaction that started before
// another (now() is its start) commits after it; but it costs a scan every time.
func (s *Store) tableStats(ctx context.Context, t *store.StoredTable, m tableMeta) error {
	key := t.Schema + "." + t.Name
	if m.version != nil {
		t.Stamp = stamp("v", m.oid, m.filenode, *m.version)
		if c, ok := s.counts.Load(key); ok && c.(tableCounts).stamp == t.Stamp {
			c := c.(tableCounts)
			t.Rows, t.Versions, t.Extent = c.rows, c.versions, c.extent
			return nil
		}
	}
	version, xmins, err := s.scanTable(ctx, t, m.version == nil)
	if err != nil {
		return err
	}
	if version == nil || m.version == nil {
		// Without a version (or one a write made while the catalog was read, which the
		// next call finds), the rows' xmins are the stamp.
		t.Stamp = stamp("x", m.oid, m.filenode, t.Versions, xmins)
		return nil
	}
	// The scan's own version: a write may have committed since the catalog was read.
	t.Stamp = stamp("v", m.oid, m.filenode, *version)
	s.counts.Store(key, tableCounts{stamp: t.Stamp, rows: t.Rows, versions: t.Versions, extent: t.Extent})
	return nil
}

// scanTable fills t's counts and extent in one pass over the table, and returns the
// table's version in geoflow_table_stamps as of that pass (nil when none is kept) and,
// when asked, the sum of the hashes of its rows' xmins (see tableStats).
func (s *Store) scanTable(ctx context.Context, t *store.StoredTable, xmins bool) (*int64, int64, error) {
	ident := pgx.Identifier{t.Schema, t.Name}.Sanitize()
	current := "true"
	if t.History {
		current = "gf_valid_to IS NULL"
	}
	// The extent in lon/lat: a box of SRID 0 is taken as lon/lat; one of another CRS
	// PostGIS knows is transformed with its edges densified (a box's edges are curves in
	// lon/lat unless it is Web Mercator); in an unknown CRS there is none.
	xminSum := "0::bigint"
	if xmins {
		xminSum = "coalesce(sum(hashint8(xmin::text::bigint)), 0)"
	}
	sql := fmt.Sprintf(`WITH s AS (
			SELECT count(*) FILTER (WHERE %[2]s) AS cur, count(*) AS n, ST_Extent(geom) FILTER (WHERE %[2]s) AS e,
				%[3]s AS x
			FROM %[1]s),
		b AS (SELECT CASE
			WHEN $1 IN (0, 4326) THEN e::geometry
			WHEN EXISTS (SELECT 1 FROM spatial_ref_sys WHERE srid = $1) THEN
				ST_Transform(ST_Segmentize(ST_SetSRID(e::geometry, $1), greatest(ST_XMax(e) - ST_XMin(e), ST_YMax(e) - ST_YMin(e), 1e-9) / 32), 4326)
			END AS g FROM s)
		SELECT cur, n, x, ST_XMin(g), ST_YMin(g), ST_XMax(g), ST_YMax(g),
			(SELECT version FROM geoflow_table_stamps WHERE target = $2)
		FROM s, b`, ident, current, xminSum)
	var x int64
	var version *int64
	var minX, minY, maxX, maxY *float64
	err := s.pool.QueryRow(ctx, sql, t.SRID, t.Schema+"."+t.Name).Scan(&t.Rows, &t.Versions, &x, &minX, &minY, &maxX, &maxY, &version)
	if err != nil {
		return nil, 0, translate(fmt.Sprintf("counting the rows of %s", ident), err)
	}
	t.Extent = nil
	if minX != nil && minY != nil && maxX != nil && maxY != nil {
		t.Extent = &orb.Bound{Min: orb.Point{*minX, *minY}, Max: orb.Point{*maxX, *maxY}}
	}
	return version, x, nil
}

// stamp is a Stamp made of parts.
func stamp(parts ...any) string {
	sum := sha256.Sum256([]byte(fmt.Sprintln(parts...)))
	return hex.EncodeToString(sum[:12])
}

// RasterTile implements store.Tables: PostGIS keeps a tile task's tiles as files (its
// tile tables index them), never as a pyramid in the database, so it holds none.
func (s *Store) RasterTile(_ context.Context, t store.StoredTable, z, x, y int) ([]byte, string, error) {
	return nil, "", fmt.Errorf("tile %d/%d/%d of %s: PostGIS keeps tile pyramids as files, not in the database: %w",
		z, x, y, pgx.Identifier{t.Schema, t.Name}.Sanitize(), store.ErrNotFound)
}

// sqlArgs collects the parameters of a statement built piece by piece.
type sqlArgs []any

// add appends v and returns its placeholder.
func (a *sqlArgs) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// baseType is a column type as format_type spells it, without its modifiers:
// "numeric(10,2)" is numeric, "timestamp(3) with time zone" timestamp with time zone.
func baseType(typ string) string {
	for {
		i := strings.IndexByte(typ, '(')
		j := strings.IndexByte(typ, ')')
		if i < 0 || j < i {
			return typ
		}
		typ = strings.TrimSpace(typ[:i]) + typ[j+1:]
	}
}

// rfc3339 is the SQL of a timestamptz as RFC 3339 text in UTC, with the fraction of a
// second Go's time.RFC3339Nano would write: 2024-05-01T10:00:00Z, 2024-05-01T10:00:00.5Z.
const rfc3339 = `rtrim(rtrim(to_char(%s AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z'`

// propertySQL is the SQL of column col of alias as a property value both ST_AsMVT and a
// client can take: text, bigint, double precision or boolean. Integers become bigint,
// real and numeric double precision (numeric loses digits beyond a double's 15 to 17),
// a date its ISO text (2024-05-01), a timestamp with time zone RFC 3339 text in UTC, one
// without time zone the same without the Z, and anything else (json, jsonb, arrays) its
// text.
func propertySQL(alias string, col store.StoredColumn) string {
	c := alias + "." + pgx.Identifier{col.Name}.Sanitize()
	switch baseType(col.Type) {
	case "text", "character varying", "character", "boolean", "bigint", "double precision":
		return c
	case "integer", "smallint":
		return c + "::bigint"
	case "real", "numeric":
		return c + "::double precision"
	case "date":
		return fmt.Sprintf("to_char(%s, 'YYYY-MM-DD')", c)
	case "timestamp with time zone":
		return fmt.Sprintf(rfc3339, c)
	case "timestamp without time zone":
		return fmt.Sprintf(`rtrim(rtrim(to_char(%s, 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.')`, c)
	}
	return c + "::text"
}

// versionsSQL selects the rows of t (alias t) a history query asks for: every version,
// those current after run asOf, or (asOf 0) the current ones. A table without history
// has one version of each row.
func versionsSQL(t store.StoredTable, asOf int64, all bool, args *sqlArgs) string {
	switch {
	case !t.History || all:
		return "true"
	case asOf > 0:
		run := args.add(asOf)
		return fmt.Sprintf("t.gf_run_id <= %[1]s AND (t.gf_closed_run IS NULL OR t.gf_closed_run > %[1]s)", run)
	}
	return "t.gf_valid_to IS NULL"
}

// lonLatSQL is the SQL of t's geometry (alias t) in lon/lat: as it is for SRID 4326, and
// for SRID 0, which is taken as lon/lat.
func lonLatSQL(t store.StoredTable) string {
	if t.SRID == 0 || t.SRID == 4326 {
		return "t.geom"
	}
	return "ST_Transform(t.geom, 4326)"
}

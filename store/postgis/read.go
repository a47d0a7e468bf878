package postgis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/store"
)

// ReadFeatures implements store.Tables. Rows stream from the database as fn takes them.
// The order is the table's unique key: gf_key (and gf_valid_from, with history) for a
// keyed table, else gf_payload_hash. Properties are typed as propertySQL makes them:
// int64, float64 (numeric too), bool, or text (dates and timestamps as RFC 3339, JSON as
// its text); nulls are left out. Geometries are brought into q.SRID (lon/lat for 0) by
// ST_Transform unless the table is in it already: a CRS spatial_ref_sys does not hold,
// or a table of unknown CRS (SRID 0) read in another, fails wrapping
// store.ErrNoTransform. A q.Where is checked (store.CheckWhere) and the rows are then
// read in a READ ONLY transaction, so that the user's expression can read but not write.
func (s *Store) ReadFeatures(ctx context.Context, t store.StoredTable, q store.FeatureQuery, fn func(*store.StoredFeature) error) error {
	return s.read(ctx, t, q, func(rs *rowScanner, rows pgx.Rows) error {
		f, err := rs.scan(rows)
		if err != nil {
			return err
		}
		return fn(f)
	})
}

// ReadRows implements store.RowReader: ReadFeatures' rows, as FeatureRows.
func (s *Store) ReadRows(ctx context.Context, t store.StoredTable, q store.FeatureQuery, fn func(*store.FeatureRow) error) error {
	q.FeaturesOnly = true
	return s.read(ctx, t, q, func(rs *rowScanner, rows pgx.Rows) error {
		r, err := rs.row(rows)
		if err != nil {
			return err
		}
		return fn(r)
	})
}

// read runs ReadFeatures' statement and calls each with every row, and the scanner
// that decodes it; an error of each's own (not the scan's) is returned as it is.
func (s *Store) read(ctx context.Context, t store.StoredTable, q store.FeatureQuery, each func(*rowScanner, pgx.Rows) error) error {
	ident := pgx.Identifier{t.Schema, t.Name}.Sanitize()
	what := fmt.Sprintf("reading the features of %s", ident)
	if t.Kind != store.KindFeatures {
		return fmt.Errorf("%s: a %q table has no features", what, t.Kind)
	}
	if err := s.checkTransform(ctx, t, q.SRID); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if q.Where != "" {
		if err := store.CheckWhere(q.Where); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	var db interface {
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	} = s.pool
	if q.Where != "" {
		tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
		if err != nil {
			return translate(what, err)
		}
		defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read only: nothing to keep
		db = tx
	}
	sql, args := readSQL(t, q, false)
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return translate(what, err)
	}
	rs := newRowScanner(rows, t, q.FeaturesOnly)
	if !rs.rawBinary() { // the simple protocol: text, which the casts make right
		rows.Close()
		sql, args = readSQL(t, q, true)
		if rows, err = db.Query(ctx, sql, args...); err != nil {
			return translate(what, err)
		}
		rs = newRowScanner(rows, t, q.FeaturesOnly)
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rs, rows); err != nil {
			var se scanError
			if errors.As(err, &se) {
				return translate(what, se.err)
			}
			return err
		}
	}
	return translate(what, rows.Err())
}

// checkTransform fails wrapping store.ErrNoTransform when t's geometries cannot be
// read in CRS srid (0: lon/lat): t's CRS or srid is not in spatial_ref_sys, or t's is
// unknown. Reading in t's own CRS needs nothing.
func (s *Store) checkTransform(ctx context.Context, t store.StoredTable, srid int) error {
	target := cmp.Or(srid, 4326)
	if t.SRID == target || (srid == 0 && t.SRID == 0) {
		return nil
	}
	if t.SRID == 0 {
		return fmt.Errorf("its CRS is unknown (SRID 0), so it cannot be read in EPSG:%d: %w", target, store.ErrNoTransform)
	}
	var known int
	if err := s.pool.QueryRow(ctx, "SELECT count(DISTINCT srid) FROM spatial_ref_sys WHERE srid IN ($1, $2)", t.SRID, target).Scan(&known); err != nil {
		return translate("looking up its CRS", err)
	}
	if known != 2 {
		return fmt.Errorf("EPSG:%d or EPSG:%d is not in spatial_ref_sys: %w", t.SRID, target, store.ErrNoTransform)
	}
	return nil
}

// geomSQL is the geometry of t's rows (alias t) in CRS srid: lon/lat for 0, as stored
// when t is in it already.
func geomSQL(t store.StoredTable, srid int, args *sqlArgs) string {
	if srid == 0 {
		return lonLatSQL(t)
	}
	if srid == t.SRID {
		return "t.geom"
	}
	return "ST_Transform(t.geom, " + args.add(srid) + "::int)"
}

// readSQL is the statement of ReadFeatures: the bookkeeping columns (with FeaturesOnly,
// the geometry and the feature id alone), then the property columns, of the rows q
// selects (q.Where, checked, as it is), in ReadFeatures' order unless AnyOrder. The
// columns clientCast names are read as stored unless serverCasts.
func readSQL(t store.StoredTable, q store.FeatureQuery, serverCasts bool) (string, []any) {
	var args sqlArgs
	cols := []string{"ST_AsBinary(" + geomSQL(t, q.SRID, &args) + ")", "t.gf_payload_hash", "t.gf_feature_id", "t.gf_run_id", "t.gf_fetched_at",
		"NULL::text", "NULL::bigint", "NULL::timestamptz", "NULL::timestamptz"}
	order := "t.gf_payload_hash"
	if t.Keyed {
		cols[5], order = "t.gf_key", "t.gf_key"
	}
	if t.History {
		cols[6], cols[7], cols[8], order = "t.gf_closed_run", "t.gf_valid_from", "t.gf_valid_to", "t.gf_key, t.gf_valid_from"
	}
	if q.FeaturesOnly {
		cols = []string{cols[0], "t.gf_feature_id"}
	}
	for _, c := range t.Columns {
		if serverCasts {
			cols = append(cols, propertySQL("t", c))
		} else {
			cols = append(cols, readColumnSQL("t", c))
		}
	}
	where := []string{versionsSQL(t, q.AsOfRun, q.AllVersions, &args)}
	if q.BBox != nil {
		where = append(where, bboxSQL(t, *q.BBox, &args))
	}
	if q.TileID != 0 {
		lo, hi := store.TileIDRange(q.TileID)
		where = append(where, fmt.Sprintf("t.gf_payload_hash >= %s AND t.gf_payload_hash < %s", args.add(lo), args.add(hi)))
	}
	if q.Key != "" {
		if t.Keyed {
			where = append(where, "t.gf_key = "+args.add(q.Key))
		} else {
			where = append(where, "false") // no row of a table without keys has one
		}
	}
	if q.Where != "" {
		where = append(where, "(\n"+q.Where+"\n)")
	}
	sql := fmt.Sprintf("SELECT %s FROM %s t WHERE %s", strings.Join(cols, ", "),
		pgx.Identifier{t.Schema, t.Name}.Sanitize(), strings.Join(where, " AND "))
	if !q.AnyOrder {
		sql += " ORDER BY " + order
	}
	if q.Limit > 0 {
		sql += " LIMIT " + args.add(q.Limit)
	}
	return sql, args
}

// mercatorLat is the latitude Web Mercator ends at.
const mercatorLat = 85.0511287798066

// bboxSQL selects the rows of t (alias t) whose geometry meets box b (lon/lat), through
// the spatial index: the box is brought into the table's CRS (exactly for lon/lat and
// Web Mercator, where it stays a box; with its edges densified in another CRS).
func bboxSQL(t store.StoredTable, b orb.Bound, args *sqlArgs) string {
	if t.SRID == 3857 {
		b.Min[1], b.Max[1] = max(b.Min[1], -mercatorLat), min(b.Max[1], mercatorLat)
	}
	env := fmt.Sprintf("ST_MakeEnvelope(%s, %s, %s, %s, 4326)", args.add(b.Min[0]), args.add(b.Min[1]), args.add(b.Max[0]), args.add(b.Max[1]))
	switch t.SRID {
	case 4326:
	case 0:
		env = "ST_SetSRID(" + env + ", 0)"
	case 3857:
		env = "ST_Transform(" + env + ", 3857)"
	default:
		env = fmt.Sprintf("ST_Transform(ST_Segmentize(%s, %s), %s::int)", env,
			args.add(max(b.Max[0]-b.Min[0], b.Max[1]-b.Min[1], 1e-9)/32), args.add(t.SRID))
	}
	return "ST_Intersects(t.geom, " + env + ")"
}

package postgis

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkb"

	"github.com/geoflow/geoflow/store"
)

// ReadFeatures implements store.Tables. Rows stream from the database as fn takes them.
// The order is the table's unique key: gf_key (and gf_valid_from, with history) for a
// keyed table, else gf_payload_hash. Properties are typed as propertySQL makes them:
// int64, float64 (numeric too), bool, or text (dates and timestamps as RFC 3339, JSON as
// its text); nulls are left out. A table in a CRS spatial_ref_sys does not hold fails
// wrapping store.ErrNoTransform.
func (s *Store) ReadFeatures(ctx context.Context, t store.StoredTable, q store.FeatureQuery, fn func(*store.StoredFeature) error) error {
	ident := pgx.Identifier{t.Schema, t.Name}.Sanitize()
	what := fmt.Sprintf("reading the features of %s", ident)
	if t.Kind != store.KindFeatures {
		return fmt.Errorf("%s: a %q table has no features", what, t.Kind)
	}
	if t.SRID != 0 && t.SRID != 4326 {
		var known bool
		if err := s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM spatial_ref_sys WHERE srid = $1)", t.SRID).Scan(&known); err != nil {
			return translate(what, err)
		}
		if !known {
			return fmt.Errorf("%s: EPSG:%d is not in spatial_ref_sys: %w", what, t.SRID, store.ErrNoTransform)
		}
	}
	sql, args := readSQL(t, q)
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return translate(what, err)
	}
	defer rows.Close()
	for rows.Next() {
		f, err := scanFeature(rows, t)
		if err != nil {
			return translate(what, err)
		}
		if err := fn(f); err != nil {
			return err
		}
	}
	return translate(what, rows.Err())
}

// readSQL is the statement of ReadFeatures: the bookkeeping columns (readColumns), then
// the property columns, of the rows q selects.
func readSQL(t store.StoredTable, q store.FeatureQuery) (string, []any) {
	var args sqlArgs
	cols := []string{"ST_AsBinary(" + lonLatSQL(t) + ")", "t.gf_payload_hash", "t.gf_feature_id", "t.gf_run_id", "t.gf_fetched_at",
		"NULL::text", "NULL::bigint", "NULL::timestamptz", "NULL::timestamptz"}
	order := "t.gf_payload_hash"
	if t.Keyed {
		cols[5], order = "t.gf_key", "t.gf_key"
	}
	if t.History {
		cols[6], cols[7], cols[8], order = "t.gf_closed_run", "t.gf_valid_from", "t.gf_valid_to", "t.gf_key, t.gf_valid_from"
	}
	for _, c := range t.Columns {
		cols = append(cols, propertySQL("t", c))
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
	sql := fmt.Sprintf("SELECT %s FROM %s t WHERE %s ORDER BY %s", strings.Join(cols, ", "),
		pgx.Identifier{t.Schema, t.Name}.Sanitize(), strings.Join(where, " AND "), order)
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

// scanFeature reads one row of readSQL.
func scanFeature(rows pgx.Rows, t store.StoredTable) (*store.StoredFeature, error) {
	var g, hash []byte
	var id, key *string
	var run, closed *int64
	var validFrom, validTo *time.Time
	f := &store.StoredFeature{}
	props := make([]any, len(t.Columns))
	dest := []any{&g, &hash, &id, &run, &f.FetchedAt, &key, &closed, &validFrom, &validTo}
	for i := range props {
		dest = append(dest, &props[i])
	}
	if err := rows.Scan(dest...); err != nil {
		return nil, err
	}
	f.TileID, f.ValidFrom, f.ValidTo = store.TileID(hash), validFrom, validTo
	if id != nil {
		f.ID = *id
	}
	if key != nil {
		f.Key = *key
	}
	if run != nil {
		f.RunID = *run
	}
	if closed != nil {
		f.ClosedRun = *closed
	}
	if len(g) > 0 {
		geom, err := wkb.Unmarshal(g)
		if err != nil {
			return nil, fmt.Errorf("feature %q: decoding its geometry: %w", f.ID, err)
		}
		f.Geometry = geom
	}
	f.Properties = make(map[string]any, len(props))
	for i, v := range props {
		if v != nil {
			f.Properties[t.Columns[i].Name] = v
		}
	}
	return f, nil
}

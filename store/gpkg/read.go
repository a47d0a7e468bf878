package gpkg

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/planar"

	"github.com/geoflow/geoflow/store"
)

// ReadFeatures implements store.Tables, in fid order. The rows stream from one
// statement on a maps' reader; in WAL mode that reader keeps its snapshot of the file
// until the last row is read, which holds back checkpoints (the WAL grows while a slow
// client downloads) but never the writer. A BBox selects through the R-tree, then by
// each geometry itself (meets); a TileID through the payload hash, which the tables of
// append and upsert mode index (mirror and history tables are read whole for it).
// Geometries are read in q.SRID as readCRS allows. A q.Where is checked
// (store.CheckWhere) and runs on the maps' reader, whose connection is query-only.
func (s *Store) ReadFeatures(ctx context.Context, t store.StoredTable, q store.FeatureQuery, fn func(*store.StoredFeature) error) error {
	return s.read(ctx, t, q, q.FeaturesOnly, func(fs *featureScanner, g orb.Geometry) error {
		f := fs.feature()
		if err := fs.times.bookkeeping(f, fs); err != nil {
			return err
		}
		f.Geometry = g
		return fn(f)
	})
}

// ReadRows implements store.RowReader: ReadFeatures' rows, as FeatureRows.
func (s *Store) ReadRows(ctx context.Context, t store.StoredTable, q store.FeatureQuery, fn func(*store.FeatureRow) error) error {
	return s.read(ctx, t, q, true, func(fs *featureScanner, g orb.Geometry) error {
		return fn(&store.FeatureRow{ID: fs.featureID.String, Geometry: g, Values: fs.values()})
	})
}

// read runs ReadFeatures' statement (bare: FeaturesOnly's) and calls each with the
// scanner of each row it keeps and the row's geometry, decoded and brought into q.SRID.
func (s *Store) read(ctx context.Context, t store.StoredTable, q store.FeatureQuery, bare bool, each func(*featureScanner, orb.Geometry) error) error {
	name := gpkgName(t.Schema, t.Name)
	what := fmt.Sprintf("reading the features of %s", name)
	if t.Kind != store.KindFeatures {
		return fmt.Errorf("gpkg: %s: a %s table has no features", what, t.Kind)
	}
	conv, err := readCRS(t.SRID, q.SRID)
	if err != nil {
		return fmt.Errorf("gpkg: %s: %w", what, err)
	}
	if q.Where != "" {
		if err := store.CheckWhere(q.Where); err != nil {
			return fmt.Errorf("gpkg: %s: %w", what, err)
		}
	}
	if q.Key != "" && !t.Keyed {
		return nil // no row of an unkeyed table has a key
	}
	rq := rowQuery{t: t, full: true, bare: bare}
	query, args, area, err := s.readQuery(ctx, rq, name, q)
	if err != nil {
		return translate(what, err)
	}
	rows, err := s.m.QueryContext(ctx, query, args...)
	if err != nil {
		return translate(what, err)
	}
	defer rows.Close()
	fs := newFeatureScanner(rq)
	n := 0
	for rows.Next() {
		if err := rows.Scan(fs.dest...); err != nil {
			return translate(what, err)
		}
		g, keep, err := fs.geometry(area, conv)
		if err != nil {
			return fmt.Errorf("gpkg: %s: %w", what, err)
		}
		if !keep {
			continue // its box meets the area, the geometry does not
		}
		if err := each(fs, g); err != nil {
			return err
		}
		if n++; q.Limit > 0 && n >= q.Limit {
			return nil
		}
	}
	return translate(what, rows.Err())
}

// readQuery builds ReadFeatures' statement for q and its arguments, and returns q's
// BBox in the table's CRS (nil for none).
func (s *Store) readQuery(ctx context.Context, rq rowQuery, name string, q store.FeatureQuery) (string, []any, *orb.Bound, error) {
	versions, args := versionCond(rq.t.History, q.AsOfRun, q.AllVersions)
	conds := []string{versions}
	var area *orb.Bound
	if q.BBox != nil {
		b, err := areaIn(rq.t.SRID, *q.BBox)
		if err != nil {
			return "", nil, nil, err
		}
		match, margs, err := boxMatch(ctx, s.m, name, "t", b, false)
		if err != nil {
			return "", nil, nil, err
		}
		conds, args, area = append(conds, match), append(args, margs...), &b
	}
	if q.TileID != 0 {
		lo, hi := store.TileIDRange(q.TileID)
		conds, args = append(conds, "t.gf_payload_hash >= ? AND t.gf_payload_hash < ?"), append(args, lo, hi)
	}
	if q.Key != "" {
		conds, args = append(conds, "t.gf_key = ?"), append(args, q.Key)
	}
	if q.Where != "" {
		conds = append(conds, "(\n"+q.Where+"\n)")
	}
	return fmt.Sprintf(`SELECT %s FROM %s t WHERE %s ORDER BY t.fid`, rq.columns(), quote(name), strings.Join(conds, " AND ")), args, area, nil
}

// readCRS is how geometries of a table in CRS table are brought into CRS want (0:
// lon/lat): as they are when both are the same (or lon/lat and unknown), else through
// spatial/proj (transformer), which fails wrapping store.ErrNoTransform for a code it
// does not support. A table of unknown CRS (0) is read only as stored or in lon/lat. A
// nil func leaves geometries as they are.
func readCRS(table, want int) (func(orb.Geometry) (orb.Geometry, error), error) {
	switch {
	case table == want, want == 0 && lonLat(table), isMercator(table) && isMercator(want):
		return nil, nil
	case table == 0:
		return nil, fmt.Errorf("from a table of unknown CRS to EPSG:%d: %w", want, store.ErrNoTransform)
	}
	tr, err := transformer(table, cmp.Or(want, 4326))
	if err != nil {
		return nil, fmt.Errorf("from EPSG:%d to EPSG:%d: %w", table, cmp.Or(want, 4326), err)
	}
	return tr.Geometry, nil
}

// meets tells whether geometry g meets box b (touching counts): a point of it in b, an
// edge of it crossing b's edge, or b inside one of its polygons.
func meets(g orb.Geometry, b orb.Bound) bool {
	if !b.Intersects(g.Bound()) {
		return false
	}
	switch g := g.(type) {
	case orb.Point:
		return b.Contains(g)
	case orb.MultiPoint:
		for _, p := range g {
			if b.Contains(p) {
				return true
			}
		}
		return false
	case orb.LineString:
		return lineMeets(g, b)
	case orb.MultiLineString:
		for _, ls := range g {
			if lineMeets(ls, b) {
				return true
			}
		}
		return false
	case orb.Ring:
		return meets(orb.Polygon{g}, b)
	case orb.Polygon:
		for _, r := range g {
			if lineMeets(orb.LineString(r), b) {
				return true
			}
		}
		return planar.PolygonContains(g, b.Min) // b wholly inside, no edge crossing it
	case orb.MultiPolygon:
		for _, p := range g {
			if meets(p, b) {
				return true
			}
		}
		return false
	case orb.Collection:
		for _, c := range g {
			if meets(c, b) {
				return true
			}
		}
		return false
	case orb.Bound:
		return true // intersecting bounds, above
	}
	return true
}

// lineMeets tells whether a line has a point in b or crosses its edge.
func lineMeets(ls orb.LineString, b orb.Bound) bool {
	for _, p := range ls {
		if b.Contains(p) {
			return true
		}
	}
	corners := [5]orb.Point{b.Min, {b.Max[0], b.Min[1]}, b.Max, {b.Min[0], b.Max[1]}, b.Min}
	for i := 1; i < len(ls); i++ {
		for j := 1; j < len(corners); j++ {
			if segmentsCross(ls[i-1], ls[i], corners[j-1], corners[j]) {
				return true
			}
		}
	}
	return false
}

// segmentsCross tells whether segments ab and cd have a point in common.
func segmentsCross(a, b, c, d orb.Point) bool {
	d1, d2 := orientation(c, d, a), orientation(c, d, b)
	d3, d4 := orientation(a, b, c), orientation(a, b, d)
	if ((d1 > 0 && d2 < 0) || (d1 < 0 && d2 > 0)) && ((d3 > 0 && d4 < 0) || (d3 < 0 && d4 > 0)) {
		return true
	}
	return (d1 == 0 && onSegment(c, d, a)) || (d2 == 0 && onSegment(c, d, b)) ||
		(d3 == 0 && onSegment(a, b, c)) || (d4 == 0 && onSegment(a, b, d))
}

// orientation is the sign of the turn from pq to pr: positive counter-clockwise.
func orientation(p, q, r orb.Point) float64 {
	return (q[0]-p[0])*(r[1]-p[1]) - (q[1]-p[1])*(r[0]-p[0])
}

// onSegment tells whether r, collinear with pq, lies within it.
func onSegment(p, q, r orb.Point) bool {
	return min(p[0], q[0]) <= r[0] && r[0] <= max(p[0], q[0]) && min(p[1], q[1]) <= r[1] && r[1] <= max(p[1], q[1])
}

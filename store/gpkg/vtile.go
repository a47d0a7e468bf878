package gpkg

import (
	"cmp"
	"context"
	"fmt"
	"math"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/maptile"

	"github.com/geoflow/geoflow/spatial/mvt"
	"github.com/geoflow/geoflow/store"
)

// Vector tiles drawn in Go: SQLite finds the rows whose R-tree box meets a tile, each
// geometry is tested against the tile itself (meets), and spatial/mvt projects, clips,
// simplifies and encodes those that meet it, as it does PostGIS's rows. A tile holds exactly the features that
// meet it, as the PostGIS store's do: a feature in the buffer around it alone is its
// neighbour's.

// maxTileZoom is the deepest zoom level VectorTile draws (orb's maptile numbers tiles
// in uint32 up to 32; MVT clients stop well before).
const maxTileZoom = 30

// VectorTile implements store.Tables. t is what StoredTable gave: its Rows and Extent
// estimate how many rows meet the tile (store.ExpectedInTile) and so where thinning starts,
// and its Columns are the properties drawn. A table in a CRS other than lon/lat and
// Web Mercator is drawn through spatial/proj, and one it does not support fails wrapping
// store.ErrNoTransform; one FinishFeatureTable has not
// indexed yet is read row by row (boxMatch).
func (s *Store) VectorTile(ctx context.Context, t store.StoredTable, q store.TileQuery) (store.VectorTile, error) {
	name := gpkgName(t.Schema, t.Name)
	what := fmt.Sprintf("drawing tile %d/%d/%d of %s", q.Z, q.X, q.Y, name)
	if t.Kind != store.KindFeatures {
		return store.VectorTile{}, fmt.Errorf("gpkg: %s: a %s table has no vector tiles", what, t.Kind)
	}
	if q.Z < 0 || q.Z > maxTileZoom || q.X < 0 || q.Y < 0 || q.X >= 1<<q.Z || q.Y >= 1<<q.Z {
		return store.VectorTile{}, fmt.Errorf("gpkg: %s: no such tile: %w", what, store.ErrNotFound)
	}
	tile := maptile.New(uint32(q.X), uint32(q.Y), maptile.Zoom(q.Z))
	area, err := tileArea(t.SRID, tile)
	if err != nil {
		return store.VectorTile{}, fmt.Errorf("gpkg: %s: %w", what, err)
	}
	maxFeatures, maxBytes := cmp.Or(q.MaxFeatures, store.DefaultTileFeatures), cmp.Or(q.MaxBytes, store.DefaultTileBytes)
	sel := tileSelect{rows: rowQuery{t: t}, name: name, area: area, asOfRun: q.AsOfRun}
	below := startBelow(store.ExpectedInTile(t.Rows, t.Extent, tile.Bound()), maxFeatures)
	thinned := false
	var rows []tableRow
	for {
		if rows, err = s.tileRows(ctx, sel, below, maxFeatures+1); err != nil {
			return store.VectorTile{}, translate(what, err)
		}
		next, again := resample(below, len(rows), maxFeatures, 0, maxBytes)
		if !again {
			break
		}
		below, thinned = next, true
	}
	for {
		data, n, err := drawTile(sel.rows, rows, tile, t.SRID)
		if err != nil {
			return store.VectorTile{}, fmt.Errorf("gpkg: %s: %w", what, err)
		}
		next, again := resample(below, 0, maxFeatures, len(data), maxBytes)
		if !again {
			if !thinned && below < sampleAll {
				thinned, err = s.anyAbove(ctx, sel, below)
			}
			return store.VectorTile{Data: data, Features: n, Thinned: thinned}, translate(what, err)
		}
		// The rows below half the threshold are among those read: no new query; their
		// geometries, projected by drawTile, are decoded again.
		below, thinned = next, true
		if rows, err = keepBelow(rows, below); err != nil {
			return store.VectorTile{}, fmt.Errorf("gpkg: %s: %w", what, err)
		}
	}
}

// sampleAll is the threshold that keeps every row (store.SampleBelow).
const sampleAll = 65536

// startBelow is the threshold a tile expected to meet expected rows is first drawn
// below: store.SampleBelow's for a limit three standard deviations short of
// maxFeatures. A sample of a tile whose estimate is right holds about as many rows as
// its threshold promises, more or less by the square root of that: aimed at the limit
// itself, it would overflow half the time, and halving would leave those tiles half as
// full as the limit allows (and their thresholds unlike their neighbours').
func startBelow(expected float64, maxFeatures int) int {
	aim := max(1, maxFeatures-int(3*math.Sqrt(float64(maxFeatures))))
	return store.SampleBelow(expected, aim)
}

// resample decides, for a tile drawn from the rows whose hash prefix is below the
// threshold below, whether it holds too much: more than maxFeatures rows read, or more
// than maxBytes of MVT. Then next is the threshold to try instead, half of it; at 0 a
// tile keeps nothing, which always fits.
func resample(below, rows, maxFeatures, size, maxBytes int) (next int, again bool) {
	if (rows <= maxFeatures && size <= maxBytes) || below == 0 {
		return below, false
	}
	return below / 2, true
}

// hashPrefix is the first two bytes of a payload hash as a big-endian number, what the
// thinning threshold compares.
func hashPrefix(hash []byte) int {
	if len(hash) < 2 {
		return 0
	}
	return int(hash[0])<<8 | int(hash[1])
}

// keepBelow keeps the rows whose hash prefix is below below, in place, their
// geometries decoded afresh.
func keepBelow(rows []tableRow, below int) ([]tableRow, error) {
	kept := rows[:0]
	for _, r := range rows {
		if hashPrefix(r.hash) < below {
			g, _, err := decodeGeometry(r.geom)
			if err != nil {
				return nil, fmt.Errorf("feature %q: decoding its geometry: %w", r.featureID.String, err)
			}
			r.g = g
			kept = append(kept, r)
		}
	}
	return kept, nil
}

// tileSelect is what selects a tile's rows: the rows of table name whose geometry meets
// area (the tile, in the table's CRS), in the versions asOfRun draws.
type tileSelect struct {
	rows    rowQuery
	name    string
	area    orb.Bound
	asOfRun int64
}

// where is the condition of sel's rows whose R-tree box meets the tile and whose hash
// prefix compares with below as op ("<" or ">="), and its arguments.
func (s *Store) where(ctx context.Context, sel tileSelect, op string, below int) (string, []any, error) {
	match, args, err := boxMatch(ctx, s.m, sel.name, "t", sel.area, false)
	if err != nil {
		return "", nil, err
	}
	versions, vargs := versionCond(sel.rows.t.History, sel.asOfRun, false)
	cond := match + " AND " + versions
	args = append(args, vargs...)
	if below < sampleAll {
		// A blob compares as memcmp does: the two-byte prefix as a big-endian number.
		cond += " AND substr(t.gf_payload_hash, 1, 2) " + op + " ?"
		args = append(args, []byte{byte(below >> 8), byte(below)})
	}
	return cond, args, nil
}

// tileRows reads at most limit rows of sel whose hash prefix is below below, their
// geometries decoded.
func (s *Store) tileRows(ctx context.Context, sel tileSelect, below, limit int) ([]tableRow, error) {
	if below <= 0 {
		return nil, nil
	}
	var out []tableRow
	err := s.meetingRows(ctx, sel, "<", below, func(r tableRow) bool {
		out = append(out, r)
		return len(out) < limit
	})
	return out, err
}

// anyAbove tells whether a row of sel has a hash prefix at or above below: whether a
// tile drawn below it left a row out.
func (s *Store) anyAbove(ctx context.Context, sel tileSelect, below int) (bool, error) {
	found := false
	err := s.meetingRows(ctx, sel, ">=", below, func(tableRow) bool {
		found = true
		return false
	})
	return found, err
}

// meetingRows calls fn with each row of sel whose hash prefix compares with below as op
// and whose geometry meets the tile, decoded, until fn returns false.
func (s *Store) meetingRows(ctx context.Context, sel tileSelect, op string, below int, fn func(tableRow) bool) error {
	cond, args, err := s.where(ctx, sel, op, below)
	if err != nil {
		return err
	}
	rows, err := s.m.QueryContext(ctx, fmt.Sprintf(`SELECT %s FROM %s t WHERE %s`, sel.rows.columns(), quote(sel.name), cond), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var r tableRow
		if err := sel.rows.scan(rows, &r); err != nil {
			return err
		}
		if r.g, _, err = decodeGeometry(r.geom); err != nil {
			return fmt.Errorf("feature %q: decoding its geometry: %w", r.featureID.String, err)
		}
		if meets(r.g, sel.area) && !fn(r) {
			return nil
		}
	}
	return rows.Err()
}

// drawTile encodes rows as tile's MVT (spatial/mvt) and returns it and how many features
// it holds; nil when none is left. The geometries, decoded in the CRS of EPSG code srid
// (lon/lat or Web Mercator), are projected in place.
func drawTile(rq rowQuery, rows []tableRow, tile maptile.Tile, srid int) ([]byte, int, error) {
	features := make([]mvt.Feature, len(rows))
	for i := range rows {
		r := &rows[i]
		g := r.g
		if !isMercator(srid) && !lonLat(srid) {
			var err error
			if g, err = toLonLat(g, srid); err != nil {
				return nil, 0, err
			}
		}
		features[i] = mvt.Feature{ID: store.TileID(r.hash), Geometry: g, Properties: rq.properties(r)}
		addOwnProperties(features[i].Properties, r, rq.t.Keyed)
	}
	return mvt.Encode(rq.t.Name, tile, isMercator(srid), features)
}

// addOwnProperties adds geoflow's columns a tile's feature carries: gf_feature_id,
// gf_run_id, and gf_key when the table is keyed, each when not NULL.
func addOwnProperties(props map[string]any, r *tableRow, keyed bool) {
	if r.featureID.Valid {
		props["gf_feature_id"] = r.featureID.String
	}
	if r.runID.Valid {
		props["gf_run_id"] = r.runID.Int64
	}
	if keyed && r.key.Valid {
		props["gf_key"] = r.key.String
	}
}

// isMercator tells the EPSG codes of Web Mercator.
func isMercator(srid int) bool { return srid == 3857 || srid == 900913 }

// tileArea is tile's box in the CRS of EPSG code srid: Web Mercator metres, or lon/lat
// for 4326 and 0 (unknown, taken as lon/lat), maptile's bound. Another CRS fails
// wrapping store.ErrNoTransform.
func tileArea(srid int, tile maptile.Tile) (orb.Bound, error) {
	switch {
	case isMercator(srid):
		size := 2 * worldHalf / float64(uint64(1)<<tile.Z)
		x, y := float64(tile.X), float64(tile.Y)
		return orb.Bound{Min: orb.Point{-worldHalf + x*size, worldHalf - (y+1)*size}, Max: orb.Point{-worldHalf + (x+1)*size, worldHalf - y*size}}, nil
	case srid == 0 || srid == 4326:
		return tile.Bound(), nil
	}
	return areaIn(srid, tile.Bound())
}

package gpkg

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/paulmach/orb"
)

// The exact extent of a feature table's current rows, without reading every row.
// gpkg_contents' extent is set by FinishFeatureTable only (the writes of a run after it,
// and a mirror's updates and deletions, leave it behind), and an R-tree's boxes are
// float32 rounded outward, a metre or so off. The R-tree's root node holds the box
// around every entry; the rows that may hold the extreme coordinate on one side are the
// few whose R-tree box reaches as far, whose exact envelopes (in their blobs' headers)
// decide. With history the extreme rows may be closed versions, so the search widens
// until it meets current ones (extremeSide).

// featureExtent returns the exact extent, in the table's CRS, of the geometries of
// table name's current rows (with history, those with gf_valid_to NULL); ok is false
// when none has one. A table FinishFeatureTable has not indexed yet is read whole.
func (s *Store) featureExtent(ctx context.Context, name string, history bool) (orb.Bound, bool, error) {
	current := ""
	if history {
		current = " AND t.gf_valid_to IS NULL"
	}
	rtree := "rtree_" + name + "_geom"
	var root []byte
	err := s.m.QueryRowContext(ctx, fmt.Sprintf(`SELECT data FROM %s WHERE nodeno = 1`, quote(rtree+"_node"))).Scan(&root)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return orb.Bound{}, false, nil // an R-tree without a root: no entry
	case err != nil && !s.hasTable(ctx, rtree+"_node"):
		return s.scanExtent(ctx, name, current)
	case err != nil:
		return orb.Bound{}, false, err
	}
	box, ok, err := rootBox(root)
	if err != nil || !ok {
		return orb.Bound{}, false, err
	}
	var ext [4]float64 // minx, maxx, miny, maxy
	for i, side := range extentSides {
		v, found, err := s.extremeSide(ctx, name, rtree, current, side, box)
		if err != nil || !found {
			return orb.Bound{}, false, err
		}
		ext[i] = v
	}
	return orb.Bound{Min: orb.Point{ext[0], ext[2]}, Max: orb.Point{ext[1], ext[3]}}, true, nil
}

// hasTable tells whether the file has a table (or virtual table) named name.
func (s *Store) hasTable(ctx context.Context, name string) bool {
	var n int
	err := s.m.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = ?`, name).Scan(&n)
	return err == nil && n > 0
}

// scanExtent reads the extent of table name's rows meeting current (" AND ...", or "")
// from every row's envelope.
func (s *Store) scanExtent(ctx context.Context, name, current string) (orb.Bound, bool, error) {
	var b [4]sql.NullFloat64
	err := s.m.QueryRowContext(ctx, fmt.Sprintf(`SELECT min(ST_MinX(t.geom)), max(ST_MaxX(t.geom)), min(ST_MinY(t.geom)), max(ST_MaxY(t.geom))
		FROM %s t WHERE t.geom IS NOT NULL%s`, quote(name), current)).Scan(&b[0], &b[1], &b[2], &b[3])
	if err != nil || !b[0].Valid {
		return orb.Bound{}, false, err
	}
	return orb.Bound{Min: orb.Point{b[0].Float64, b[2].Float64}, Max: orb.Point{b[1].Float64, b[3].Float64}}, true, nil
}

// rootBox is the box around the cells of an R-tree node in the module's format (see
// nodeBlob); ok is false for a node without cells (an empty tree).
func rootBox(node []byte) (rtreeEntry, bool, error) {
	if len(node) < 4 {
		return rtreeEntry{}, false, fmt.Errorf("an R-tree node of %d bytes", len(node))
	}
	n := int(binary.BigEndian.Uint16(node[2:]))
	if len(node) < 4+n*rtreeCell {
		return rtreeEntry{}, false, fmt.Errorf("an R-tree node of %d bytes holds %d cells", len(node), n)
	}
	if n == 0 {
		return rtreeEntry{}, false, nil
	}
	cells := make([]rtreeEntry, n)
	for i := range cells {
		c := node[4+i*rtreeCell:]
		cells[i] = rtreeEntry{
			minx: math.Float32frombits(binary.BigEndian.Uint32(c[8:])), maxx: math.Float32frombits(binary.BigEndian.Uint32(c[12:])),
			miny: math.Float32frombits(binary.BigEndian.Uint32(c[16:])), maxy: math.Float32frombits(binary.BigEndian.Uint32(c[20:])),
		}
	}
	return bound(cells), true, nil
}

// extentSide is one side of an extent: the R-tree column bounding it, the function that
// reads it from a geometry's envelope, and whether it is a minimum (else a maximum).
type extentSide struct {
	col, fn string
	min     bool
}

// extentSides are minx, maxx, miny, maxy, in that order.
var extentSides = []extentSide{{"minx", "ST_MinX", true}, {"maxx", "ST_MaxX", false}, {"miny", "ST_MinY", true}, {"maxy", "ST_MaxY", false}}

// extremeSide returns the exact extreme of side among table name's rows meeting current,
// whose R-tree rtree is bounded by box; found is false when no such row has a geometry.
// An R-tree box is its row's envelope rounded outward, so a row's box reaches at least as
// far as the row does: the rows whose boxes reach past a limit hold every row that does.
// The limit starts a float32 step inside the root's edge (where every row on the edge
// has its box) and moves inward (sideLimits) until some row meeting current is within;
// the best of those, v, is the answer when it is within the limit too, else once the
// rows whose boxes reach v have been read as well.
func (s *Store) extremeSide(ctx context.Context, name, rtree, current string, side extentSide, box rtreeEntry) (float64, bool, error) {
	agg, op := "max", ">="
	if side.min {
		agg, op = "min", "<="
	}
	q := fmt.Sprintf(`SELECT %s(%s(t.geom)) FROM %s t WHERE t.fid IN (SELECT id FROM %s WHERE %s %s ?)%s`,
		agg, side.fn, quote(name), quote(rtree), side.col, op, current)
	best := func(limit float64) (sql.NullFloat64, error) {
		var v sql.NullFloat64
		err := s.m.QueryRowContext(ctx, q, limit).Scan(&v)
		return v, err
	}
	for _, limit := range sideLimits(side, box) {
		v, err := best(limit)
		if err != nil || !v.Valid {
			if err != nil {
				return 0, false, err
			}
			continue
		}
		// A row beyond v has its box beyond v too. Within the limit, v's row and any
		// such row were read; else the rows whose boxes reach v, rounded outward, hold
		// them all.
		if side.min && v.Float64 <= limit || !side.min && v.Float64 >= limit {
			return v.Float64, true, nil
		}
		reach := float64(up(v.Float64))
		if !side.min {
			reach = float64(down(v.Float64))
		}
		final, err := best(reach)
		if err != nil || !final.Valid { // not valid cannot be: v's own row reaches as far
			return v.Float64, err == nil, err
		}
		return final.Float64, true, nil
	}
	return 0, false, nil
}

// sideLimits are the limits extremeSide tries for side in turn: a float32 step inside
// the edge of the R-tree's box on that side (a row on the edge, its envelope rounded out
// to it, lies within), then inward by 1/1024 of the box's width, doubling, and last the
// opposite edge, which every box reaches.
func sideLimits(side extentSide, box rtreeEntry) []float64 {
	lo, hi := box.minx, box.maxx
	if side.col == "miny" || side.col == "maxy" {
		lo, hi = box.miny, box.maxy
	}
	from, to, dir := float64(lo), float64(hi), 1.0
	first := float64(min(math.Nextafter32(lo, hi), hi))
	if !side.min {
		from, to, dir = to, from, -1.0
		first = float64(max(math.Nextafter32(hi, lo), lo))
	}
	limits := []float64{first}
	for step := (float64(hi) - float64(lo)) / 1024; step > 0 && (to-from)*dir > 2*step; step *= 2 {
		limits = append(limits, from+dir*step)
	}
	return append(limits, to)
}

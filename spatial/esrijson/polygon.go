package esrijson

import (
	"fmt"
	"math"
	"slices"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/planar"
)

// polygon groups the flat ring list into polygons: a clockwise ring is an exterior, a
// counter-clockwise ring a hole of the smallest exterior that contains it. When the
// winding cannot be right (no clockwise ring, an exterior inside another, a hole inside
// none), nesting decides instead: a ring inside an even number of rings is an exterior,
// in an odd number a hole. A hole inside no exterior is an exterior. Rings are written as GeoJSON winds
// them: exteriors counter-clockwise, holes clockwise. A ring that is not closed is an
// error; an empty one is no ring (the REST API's null shape is "rings": []).
func polygon(rings [][][]float64) (orb.Geometry, error) {
	rs, err := closedRings(rings)
	if err != nil || len(rs) == 0 {
		return nil, err
	}
	// By orientation: clockwise rings are exteriors. Servers that wind rings backwards (or
	// all one way) give exteriors inside exteriors, or none: then nesting decides, a ring
	// inside an odd number of others being a hole.
	outers, holes := rs.byOrientation()
	if !rs.windingHolds(outers, holes) {
		outers, holes = rs.byNesting(outers[:0], holes[:0])
	}
	return rs.assemble(outers, holes), nil
}

// ring is one ring of a polygon's ring list, with what grouping asks of it again and
// again.
type ring struct {
	r    orb.Ring
	area float64 // signed, y up: negative is clockwise
	b    orb.Bound
}

// ringSet is the non-empty rings of a polygon, in the order written.
type ringSet []ring

// closedRings converts the rings of a polygon, refusing a ring that is not closed and
// dropping empty ones.
func closedRings(rings [][][]float64) (ringSet, error) {
	var rs ringSet
	for i, rc := range rings {
		r := make(orb.Ring, 0, len(rc))
		for _, c := range rc {
			p, err := point(c)
			if err != nil {
				return nil, fmt.Errorf("ring %d: %w", i, err)
			}
			r = append(r, p)
		}
		if len(r) == 0 {
			continue
		}
		if len(r) < 4 {
			return nil, fmt.Errorf("ring %d has %d points, fewer than a closed ring needs", i, len(r))
		}
		if first, last := r[0], r[len(r)-1]; first != last {
			// Not closed by the server: refused, not closed here, as every reader does
			// (see spatial.Validate); the ArcGIS REST API writes every ring closed.
			return nil, fmt.Errorf("ring %d is not closed (first %g,%g last %g,%g)", i, first[0], first[1], last[0], last[1])
		}
		rs = append(rs, ring{r: r, area: planar.Area(r), b: r.Bound()}) // a ring's area is signed
	}
	return rs, nil
}

// in tells whether ring a lies in ring b, the boxes first: a multipolygon of thousands
// of rings must not cost a point test for every pair.
func (rs ringSet) in(a, b int) bool {
	ba, bb := rs[a].b, rs[b].b
	if ba.Min[0] < bb.Min[0] || ba.Min[1] < bb.Min[1] || ba.Max[0] > bb.Max[0] || ba.Max[1] > bb.Max[1] {
		return false
	}
	return inside(rs[a].r, rs[b].r)
}

// byOrientation takes clockwise rings for exteriors and the others for holes.
func (rs ringSet) byOrientation() (outers, holes []int) {
	for i, r := range rs {
		if r.area < 0 {
			outers = append(outers, i)
		} else {
			holes = append(holes, i)
		}
	}
	return outers, holes
}

// windingHolds tells whether exteriors and holes taken by orientation can be right:
// there is an exterior, none lies in another, and every hole lies in one.
func (rs ringSet) windingHolds(outers, holes []int) bool {
	if len(outers) == 0 {
		return false
	}
	for _, a := range outers {
		for _, b := range outers {
			if a != b && rs.in(a, b) {
				return false
			}
		}
	}
	for _, h := range holes {
		if !slices.ContainsFunc(outers, func(o int) bool { return rs.in(h, o) }) {
			return false // a hole in no exterior
		}
	}
	return true
}

// byNesting takes a ring inside an even number of others for an exterior, inside an
// odd number for a hole, appending to outers and holes.
func (rs ringSet) byNesting(outers, holes []int) ([]int, []int) {
	for i := range rs {
		depth := 0
		for j := range rs {
			if i != j && rs.in(i, j) {
				depth++
			}
		}
		if depth%2 == 0 {
			outers = append(outers, i)
		} else {
			holes = append(holes, i)
		}
	}
	return outers, holes
}

// assemble makes a polygon of each exterior and puts each hole in the smallest exterior
// that contains it; a hole inside none is an exterior itself. One polygon is a Polygon,
// more a MultiPolygon.
func (rs ringSet) assemble(outers, holes []int) orb.Geometry {
	polys := make([]orb.Polygon, len(outers))
	for k, i := range outers {
		polys[k] = orb.Polygon{wind(rs[i].r, true)}
	}
	for _, h := range holes {
		best, bestArea := -1, math.Inf(1)
		for k, i := range outers {
			if a := math.Abs(rs[i].area); a < bestArea && rs.in(h, i) {
				best, bestArea = k, a
			}
		}
		if best < 0 { // a hole inside no exterior: an exterior itself
			polys = append(polys, orb.Polygon{wind(rs[h].r, true)})
			continue
		}
		polys[best] = append(polys[best], wind(rs[h].r, false))
	}
	if len(polys) == 1 {
		return polys[0]
	}
	return orb.MultiPolygon(polys)
}

// wind returns r counter-clockwise (ccw) or clockwise.
func wind(r orb.Ring, ccw bool) orb.Ring {
	if (r.Orientation() == orb.CCW) != ccw {
		r.Reverse()
	}
	return r
}

// inside tells whether ring h lies in ring o: its first vertex that is not on o's
// boundary is inside o.
func inside(h, o orb.Ring) bool {
	for _, p := range h {
		if in, on := ringContains(o, p); !on {
			return in
		}
	}
	return false
}

// ringContains is the even-odd test of p against r, and whether p lies on r's boundary.
func ringContains(r orb.Ring, p orb.Point) (in, on bool) {
	for i, j := 0, len(r)-1; i < len(r); j, i = i, i+1 {
		a, b := r[j], r[i]
		if onSegment(a, b, p) {
			return false, true
		}
		if (a[1] > p[1]) != (b[1] > p[1]) && p[0] < (b[0]-a[0])*(p[1]-a[1])/(b[1]-a[1])+a[0] {
			in = !in
		}
	}
	return in, false
}

func onSegment(a, b, p orb.Point) bool {
	cross := (b[0]-a[0])*(p[1]-a[1]) - (b[1]-a[1])*(p[0]-a[0])
	if math.Abs(cross) > 1e-12*(math.Abs(b[0]-a[0])+math.Abs(b[1]-a[1])+1) {
		return false
	}
	return p[0] >= math.Min(a[0], b[0]) && p[0] <= math.Max(a[0], b[0]) && p[1] >= math.Min(a[1], b[1]) && p[1] <= math.Max(a[1], b[1])
}

package harvest

import "github.com/paulmach/orb"

// geometryBound is g.Bound() for the box checks of featureSource.Next, computed by plain
// comparisons for a polygon and a multipolygon, the geometries of most layers, where
// orb's Bound pays math.Min and math.Max and a Contains for every vertex. It can differ
// from orb's only in the sign of a zero, which no comparison sees (a message shows orb's
// own). Any other geometry, an empty ring and a NaN are left to orb.
func geometryBound(g orb.Geometry) orb.Bound {
	switch g := g.(type) {
	case orb.Polygon:
		if len(g) > 0 {
			if b, ok := pointsBound(g[0], orb.Bound{}, false); ok {
				return b
			}
		}
	case orb.MultiPolygon:
		var b orb.Bound
		ok := len(g) > 0
		for i := 0; ok && i < len(g); i++ {
			ok = len(g[i]) > 0
			if ok {
				b, ok = pointsBound(g[i][0], b, i > 0)
			}
		}
		if ok {
			return b
		}
	}
	return g.Bound()
}

// pointsBound extends b (started from ps[0] unless started) by ps; false for no points
// or a NaN coordinate.
func pointsBound(ps []orb.Point, b orb.Bound, started bool) (orb.Bound, bool) {
	if len(ps) == 0 {
		return b, false
	}
	if !started {
		b = orb.Bound{Min: ps[0], Max: ps[0]}
	}
	for _, p := range ps {
		x, y := p[0], p[1]
		if x != x || y != y {
			return b, false
		}
		if x < b.Min[0] {
			b.Min[0] = x
		} else if x > b.Max[0] {
			b.Max[0] = x
		}
		if y < b.Min[1] {
			b.Min[1] = y
		} else if y > b.Max[1] {
			b.Max[1] = y
		}
	}
	return b, true
}

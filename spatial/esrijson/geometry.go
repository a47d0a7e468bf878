package esrijson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/planar"

	"github.com/geoflow/geoflow/spatial"
)

// geometry is an Esri JSON geometry of any type; which members are set says which type.
type geometry struct {
	X          any           `json:"x"`
	Y          any           `json:"y"`
	Points     [][]float64   `json:"points"`
	Paths      [][][]float64 `json:"paths"`
	Rings      [][][]float64 `json:"rings"`
	CurvePaths any           `json:"curvePaths"`
	CurveRings any           `json:"curveRings"`
	XMin       *float64      `json:"xmin"`
}

// Geometry converts one Esri JSON geometry: a point, multipoint, polyline, polygon or
// envelope. Null, empty and NaN points are a nil geometry. A feature with more than
// maxVertices coordinates (0: the default) is a *spatial.TooLargeError; curves wrap
// spatial.ErrCurve.
func Geometry(raw []byte, maxVertices int) (orb.Geometry, error) {
	if maxVertices <= 0 {
		maxVertices = spatial.DefaultVertices
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) || bytes.Equal(raw, []byte("{}")) {
		return nil, nil
	}
	var g geometry
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, fmt.Errorf("geometry: %w", err)
	}
	if g.CurvePaths != nil || g.CurveRings != nil {
		return nil, fmt.Errorf("geometry with curvePaths/curveRings (asked with returnTrueCurves): %w", spatial.ErrCurve)
	}
	n := len(g.Points)
	for _, p := range g.Paths {
		n += len(p)
	}
	for _, r := range g.Rings {
		n += len(r)
	}
	if n > maxVertices {
		return nil, &spatial.TooLargeError{Limit: "max_vertices", Max: int64(maxVertices)}
	}
	switch {
	case g.Rings != nil:
		return polygon(g.Rings)
	case g.Paths != nil:
		return polyline(g.Paths)
	case g.Points != nil:
		mp := make(orb.MultiPoint, 0, len(g.Points))
		for i, c := range g.Points {
			p, err := point(c)
			if err != nil {
				return nil, fmt.Errorf("multipoint point %d: %w", i, err)
			}
			mp = append(mp, p)
		}
		if len(mp) == 0 {
			return nil, nil
		}
		return mp, nil
	case g.XMin != nil:
		var e struct{ XMin, YMin, XMax, YMax *float64 }
		if err := json.Unmarshal(raw, &e); err != nil || e.YMin == nil || e.XMax == nil || e.YMax == nil {
			return nil, errors.New("envelope without xmin, ymin, xmax and ymax")
		}
		b := orb.Bound{Min: orb.Point{*e.XMin, *e.YMin}, Max: orb.Point{*e.XMax, *e.YMax}}
		return b.ToPolygon(), nil
	case g.X != nil || g.Y != nil:
		x, okx := number(g.X)
		y, oky := number(g.Y)
		if !okx || !oky {
			if isNaN(g.X) || g.X == nil {
				return nil, nil // an empty point
			}
			return nil, fmt.Errorf("point with x %v, y %v", g.X, g.Y)
		}
		if math.IsNaN(x) || math.IsNaN(y) {
			return nil, nil
		}
		return orb.Point{x, y}, nil
	}
	return nil, nil // {"spatialReference":...} only: no geometry
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

func isNaN(v any) bool {
	s, ok := v.(string)
	return ok && (s == "NaN" || s == "nan")
}

// point takes x and y of [x, y(, z)(, m)].
func point(c []float64) (orb.Point, error) {
	if len(c) < 2 {
		return orb.Point{}, fmt.Errorf("coordinate with %d values", len(c))
	}
	return orb.Point{c[0], c[1]}, nil
}

func polyline(paths [][][]float64) (orb.Geometry, error) {
	var ml orb.MultiLineString
	for i, p := range paths {
		ls := make(orb.LineString, 0, len(p))
		for _, c := range p {
			pt, err := point(c)
			if err != nil {
				return nil, fmt.Errorf("path %d: %w", i, err)
			}
			ls = append(ls, pt)
		}
		if len(ls) == 0 {
			continue
		}
		if len(ls) < 2 {
			return nil, fmt.Errorf("path %d has one point", i)
		}
		ml = append(ml, ls)
	}
	switch len(ml) {
	case 0:
		return nil, nil
	case 1:
		return ml[0], nil
	}
	return ml, nil
}

// polygon groups the flat ring list into polygons: a clockwise ring is an exterior, a
// counter-clockwise ring a hole of the smallest exterior that contains it. When the
// winding cannot be right (no clockwise ring, an exterior inside another, a hole inside
// none), nesting
// decides instead: a ring inside an even number of rings is an exterior, in an odd number
// a hole. A hole inside no exterior is an exterior. Rings are written as GeoJSON winds
// them: exteriors counter-clockwise, holes clockwise. A ring that is not closed is an
// error; an empty one is no ring (the REST API's null shape is "rings": []).
func polygon(rings [][][]float64) (orb.Geometry, error) {
	type ring struct {
		r    orb.Ring
		area float64 // signed, y up: negative is clockwise
		b    orb.Bound
	}
	var rs []ring
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
	if len(rs) == 0 {
		return nil, nil
	}
	// in tells whether ring a lies in ring b, the boxes first: a multipolygon of
	// thousands of rings must not cost a point test for every pair.
	in := func(a, b int) bool {
		ba, bb := rs[a].b, rs[b].b
		if ba.Min[0] < bb.Min[0] || ba.Min[1] < bb.Min[1] || ba.Max[0] > bb.Max[0] || ba.Max[1] > bb.Max[1] {
			return false
		}
		return inside(rs[a].r, rs[b].r)
	}
	// By orientation: clockwise rings are exteriors. Servers that wind rings backwards (or
	// all one way) give exteriors inside exteriors, or none: then nesting decides, a ring
	// inside an odd number of others being a hole.
	var outers, holes []int
	for i, r := range rs {
		if r.area < 0 {
			outers = append(outers, i)
		} else {
			holes = append(holes, i)
		}
	}
	consistent := len(outers) > 0
	for _, a := range outers {
		for _, b := range outers {
			if consistent && a != b && in(a, b) {
				consistent = false
			}
		}
	}
	for _, h := range holes {
		if consistent && !slices.ContainsFunc(outers, func(o int) bool { return in(h, o) }) {
			consistent = false // a hole in no exterior
		}
	}
	if !consistent {
		outers, holes = outers[:0], holes[:0]
		for i := range rs {
			depth := 0
			for j := range rs {
				if i != j && in(i, j) {
					depth++
				}
			}
			if depth%2 == 0 {
				outers = append(outers, i)
			} else {
				holes = append(holes, i)
			}
		}
	}
	polys := make([]orb.Polygon, len(outers))
	for k, i := range outers {
		polys[k] = orb.Polygon{wind(rs[i].r, true)}
	}
	for _, h := range holes {
		best, bestArea := -1, math.Inf(1)
		for k, i := range outers {
			if a := math.Abs(rs[i].area); a < bestArea && in(h, i) {
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
		return polys[0], nil
	}
	return orb.MultiPolygon(polys), nil
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

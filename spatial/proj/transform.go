package proj

import (
	"fmt"
	"math"

	"github.com/paulmach/orb"
)

// Transformer converts coordinates from one supported CRS to another, through WGS 84
// longitude/latitude. It is immutable and safe for concurrent use.
type Transformer struct {
	from, to CRS
}

// New returns the Transformer from EPSG code from to EPSG code to, or an error wrapping
// ErrUnsupported when either is outside the supported set.
func New(from, to int) (*Transformer, error) {
	f, err := Lookup(from)
	if err != nil {
		return nil, err
	}
	t, err := Lookup(to)
	if err != nil {
		return nil, err
	}
	return &Transformer{from: f, to: t}, nil
}

// Identity tells whether t leaves coordinates as they are (both CRSs geographic, or the
// same code).
func (t *Transformer) Identity() bool {
	return t.from.Code == t.to.Code || t.from.Geographic() && t.to.Geographic()
}

// Point converts p; an error when the result is not finite (a point the target CRS
// cannot show, such as a pole in Web Mercator).
func (t *Transformer) Point(p orb.Point) (orb.Point, error) {
	q := p
	if !t.Identity() {
		q = t.to.Forward(t.from.Inverse(p))
	}
	if math.IsNaN(q[0]) || math.IsNaN(q[1]) || math.IsInf(q[0], 0) || math.IsInf(q[1], 0) {
		return q, fmt.Errorf("proj: (%g %g) in EPSG:%d has no coordinates in EPSG:%d", p[0], p[1], t.from.Code, t.to.Code)
	}
	return q, nil
}

// Geometry returns a copy of g with every coordinate converted; g itself is left alone. A
// nil g gives nil. The first coordinate that cannot be converted fails it.
func (t *Transformer) Geometry(g orb.Geometry) (orb.Geometry, error) {
	if g == nil {
		return nil, nil
	}
	g = orb.Clone(g)
	if t.Identity() {
		return g, nil
	}
	return t.inPlace(g)
}

func (t *Transformer) inPlace(g orb.Geometry) (orb.Geometry, error) {
	var err error
	conv := func(ps []orb.Point) {
		for i := range ps {
			if err == nil {
				ps[i], err = t.Point(ps[i])
			}
		}
	}
	switch g := g.(type) {
	case orb.Point:
		return t.Point(g)
	case orb.MultiPoint:
		conv(g)
	case orb.LineString:
		conv(g)
	case orb.Ring:
		conv(g)
	case orb.MultiLineString:
		for _, ls := range g {
			conv(ls)
		}
	case orb.Polygon:
		for _, r := range g {
			conv(r)
		}
	case orb.MultiPolygon:
		for _, p := range g {
			for _, r := range p {
				conv(r)
			}
		}
	case orb.Collection:
		for i := range g {
			if g[i], err = t.inPlace(g[i]); err != nil {
				return nil, err
			}
		}
	case orb.Bound:
		return t.Bound(g)
	default:
		return nil, fmt.Errorf("proj: cannot convert a %T", g)
	}
	if err != nil {
		return nil, err
	}
	return g, nil
}

// boundSteps is how many pieces Bound cuts each edge of a box into: a box's edges are
// curves in the other CRS, and the box of its corners alone can miss their bulge.
const boundSteps = 32

// Bound returns the box, in the target CRS, around b's outline converted: each edge
// sampled at 33 points, so that the curved image of an edge is covered to within a
// thousandth of the box's size.
func (t *Transformer) Bound(b orb.Bound) (orb.Bound, error) {
	if t.Identity() {
		return b, nil
	}
	var out orb.Bound
	first := true
	for i := 0; i <= boundSteps; i++ {
		f := float64(i) / boundSteps
		x := b.Min[0] + f*(b.Max[0]-b.Min[0])
		y := b.Min[1] + f*(b.Max[1]-b.Min[1])
		for _, p := range [4]orb.Point{{x, b.Min[1]}, {x, b.Max[1]}, {b.Min[0], y}, {b.Max[0], y}} {
			q, err := t.Point(p)
			if err != nil {
				return orb.Bound{}, err
			}
			if first {
				out, first = orb.Bound{Min: q, Max: q}, false
			}
			out = out.Extend(q)
		}
	}
	return out, nil
}

// InnerBound returns a box, in the target CRS, that lies wholly within b's outline
// converted: Bound's opposite, for a question such as "is this row wholly inside the
// area", where a box reaching beyond the area would take in rows outside it. Each edge is
// sampled as in Bound, and the box is bounded by the innermost sample of each side.
func (t *Transformer) InnerBound(b orb.Bound) (orb.Bound, error) {
	if t.Identity() {
		return b, nil
	}
	inner := orb.Bound{Min: orb.Point{math.Inf(-1), math.Inf(-1)}, Max: orb.Point{math.Inf(1), math.Inf(1)}}
	for i := 0; i <= boundSteps; i++ {
		f := float64(i) / boundSteps
		x := b.Min[0] + f*(b.Max[0]-b.Min[0])
		y := b.Min[1] + f*(b.Max[1]-b.Min[1])
		sides := [4]orb.Point{{b.Min[0], y}, {b.Max[0], y}, {x, b.Min[1]}, {x, b.Max[1]}} // west, east, south, north
		var q [4]orb.Point
		for k, p := range sides {
			var err error
			if q[k], err = t.Point(p); err != nil {
				return orb.Bound{}, err
			}
		}
		inner.Min[0], inner.Max[0] = math.Max(inner.Min[0], q[0][0]), math.Min(inner.Max[0], q[1][0])
		inner.Min[1], inner.Max[1] = math.Max(inner.Min[1], q[2][1]), math.Min(inner.Max[1], q[3][1])
	}
	return inner, nil
}

package spatial

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/paulmach/orb"
)

// ErrInvalidGeometry is matched (errors.Is) by every *GeometryError.
var ErrInvalidGeometry = errors.New("spatial: invalid geometry")

// GeometryError says which part of a geometry Validate refused and why.
type GeometryError struct {
	// Part names the part from the top, in GeoJSON's lower-case type names and 0-based
	// indexes: "polygon ring 2", "multipolygon polygon 3 ring 0", "linestring".
	Part string
	// Problem is what is wrong with it: "is not closed (first 1,2 last 3,4)".
	Problem string
}

func (e *GeometryError) Error() string { return "invalid geometry: " + e.Part + " " + e.Problem }

// Is makes errors.Is(err, ErrInvalidGeometry) true.
func (e *GeometryError) Is(target error) bool { return target == ErrInvalidGeometry }

// Validate tells whether g can be stored as a feature's geometry, the same way in every
// store, returning a *GeometryError naming the first part at fault. A nil g (a feature
// without geometry) is valid. It refuses:
//
//   - a coordinate that is NaN or infinite;
//   - a ring that is not closed, has fewer than 4 points or fewer than 3 distinct ones
//     (it encloses nothing);
//   - a linestring with fewer than 2 points or fewer than 2 distinct ones;
//   - anything empty: a polygon without rings, a multi or collection without members, a
//     member that is nil. A feature that has no geometry says so with none (nil).
//
// An unclosed ring is refused, never closed: the server wrote a shape it did not mean
// (a ring cut short, a truncated coordinate list), and closing it would store a shape
// the server never had. It is the source's fault, and the feature is reported as such.
// What SQL/MM calls invalid but is well-formed (self-intersections, holes outside their
// shell, wrong winding) is stored as the server sent it.
//
// Validate allocates only for the error, and for the members of a geometry collection
// (checked by recursion, whose parts the compiler moves to the heap). It is safe for
// concurrent use.
func Validate(g orb.Geometry) error {
	if g == nil {
		return nil
	}
	return validate(g, nil)
}

// part is a part of the geometry being checked, as an error names it ("multipolygon
// polygon 1 ring 0"): a chain from the part up to the whole, kept on the stack and made
// into text only for an error.
type part struct {
	up    *part
	name  string
	index int // the part's place among its parent's members, -1 when it has none
}

// String is the part's path from the whole: names and indexes joined by spaces.
func (p *part) String() string { return string(p.appendPath(nil)) }

// appendPath appends the path to b, copying each name, so that no part escapes through
// the text of an error.
func (p *part) appendPath(b []byte) []byte {
	if p == nil {
		return b
	}
	if b = p.up.appendPath(b); len(b) > 0 {
		b = append(b, ' ')
	}
	b = append(b, p.name...)
	if p.index >= 0 {
		b = strconv.AppendInt(append(b, ' '), int64(p.index), 10)
	}
	return b
}

// validate checks g, whose place in the whole is up (nil at the top).
func validate(g orb.Geometry, up *part) error {
	switch g := g.(type) {
	case orb.Point:
		return points([]orb.Point{g}, &part{up, "point", -1}, 1, 1, false)
	case orb.MultiPoint:
		path := &part{up, "multipoint", -1}
		if len(g) == 0 {
			return fail(path, "is empty")
		}
		for i, p := range g {
			if err := points([]orb.Point{p}, &part{path, "point", i}, 1, 1, false); err != nil {
				return err
			}
		}
	case orb.LineString:
		return points(g, &part{up, "linestring", -1}, 2, 2, false)
	case orb.Ring:
		return points(g, &part{up, "ring", -1}, 4, 3, true)
	case orb.MultiLineString:
		path := &part{up, "multilinestring", -1}
		if len(g) == 0 {
			return fail(path, "is empty")
		}
		for i, l := range g {
			if err := points(l, &part{path, "linestring", i}, 2, 2, false); err != nil {
				return err
			}
		}
	case orb.Polygon:
		return polygon(g, &part{up, "polygon", -1})
	case orb.MultiPolygon:
		path := &part{up, "multipolygon", -1}
		if len(g) == 0 {
			return fail(path, "is empty")
		}
		for i, p := range g {
			if err := polygon(p, &part{path, "polygon", i}); err != nil {
				return err
			}
		}
	case orb.Collection:
		return collection(g, &part{up, "collection", -1})
	case orb.Bound:
		return bound(g, &part{up, "bound", -1})
	default:
		return fail(&part{up, fmt.Sprintf("%T", g), -1}, "is not a geometry type geoflow stores")
	}
	return nil
}

// collection checks that c has members, none of them nil, and each valid.
func collection(c orb.Collection, path *part) error {
	if len(c) == 0 {
		return fail(path, "is empty")
	}
	for i, m := range c {
		if m == nil {
			return fail(&part{path, "geometry", i}, "is missing (nil)")
		}
		if err := validate(m, &part{path, "geometry", i}); err != nil {
			return err
		}
	}
	return nil
}

// bound checks that b's corners are finite and min is not beyond max.
func bound(b orb.Bound, path *part) error {
	if err := points([]orb.Point{b.Min, b.Max}, path, 2, 1, false); err != nil {
		return err
	}
	if b.Min[0] > b.Max[0] || b.Min[1] > b.Max[1] {
		return fail(path, fmt.Sprintf("is inverted (min %s max %s)", xy(b.Min), xy(b.Max)))
	}
	return nil
}

func polygon(p orb.Polygon, path *part) error {
	if len(p) == 0 {
		return fail(path, "is empty (no rings)")
	}
	for i, r := range p {
		if err := points(r, &part{path, "ring", i}, 4, 3, true); err != nil {
			return err
		}
	}
	return nil
}

// points checks one sequence: every point finite, at least min points and distinct
// distinct ones (at most 3), and closed when it is a ring.
func points(ps []orb.Point, path *part, min, distinct int, ring bool) error {
	for i, p := range ps {
		if !finitePoint(p) {
			if len(ps) == 1 && min == 1 {
				return fail(path, fmt.Sprintf("is not finite (%s)", xy(p)))
			}
			return fail(path, fmt.Sprintf("point %d is not finite (%s)", i, xy(p)))
		}
	}
	if len(ps) < min {
		noun := "points"
		if len(ps) == 1 {
			noun = "point"
		}
		return fail(path, fmt.Sprintf("has %d %s, fewer than %d", len(ps), noun, min))
	}
	if ring && ps[0] != ps[len(ps)-1] {
		return fail(path, fmt.Sprintf("is not closed (first %s last %s)", xy(ps[0]), xy(ps[len(ps)-1])))
	}
	if distinct > 1 {
		if n := countDistinct(ps, distinct); n < distinct {
			return fail(path, fmt.Sprintf("has %d distinct points, fewer than %d (all at %s)", n, distinct, distinctAt(ps, n)))
		}
	}
	return nil
}

// countDistinct counts the distinct points of ps, stopping at enough (at most 3).
func countDistinct(ps []orb.Point, enough int) int {
	var arr [3]orb.Point
	seen := arr[:0]
	for _, p := range ps {
		dup := false
		for _, q := range seen {
			if p == q {
				dup = true
				break
			}
		}
		if !dup {
			if seen = append(seen, p); len(seen) == enough {
				break
			}
		}
	}
	return len(seen)
}

// distinctAt lists the first n distinct points of ps for an error message.
func distinctAt(ps []orb.Point, n int) string {
	var s []string
	var seen []orb.Point
	for _, p := range ps {
		dup := false
		for _, q := range seen {
			dup = dup || p == q
		}
		if !dup {
			seen = append(seen, p)
			s = append(s, xy(p))
			if len(seen) == n {
				break
			}
		}
	}
	return strings.Join(s, " and ")
}

// finitePoint: x-x is 0 for every finite x and NaN for an infinite or NaN one.
func finitePoint(p orb.Point) bool { return p[0]-p[0] == 0 && p[1]-p[1] == 0 }

func xy(p orb.Point) string {
	return strconv.FormatFloat(p[0], 'g', -1, 64) + "," + strconv.FormatFloat(p[1], 'g', -1, 64)
}

func fail(path *part, problem string) error {
	return &GeometryError{Part: path.String(), Problem: problem}
}

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
// Validate allocates only for the error and is safe for concurrent use.
func Validate(g orb.Geometry) error {
	if g == nil {
		return nil
	}
	return validate(g, nil)
}

// validate checks g, whose place in the whole is path (nil at the top).
func validate(g orb.Geometry, path []string) error {
	switch g := g.(type) {
	case orb.Point:
		return points([]orb.Point{g}, append(path, "point"), 1, 1, false)
	case orb.MultiPoint:
		path = append(path, "multipoint")
		if len(g) == 0 {
			return fail(path, "is empty")
		}
		for i, p := range g {
			if err := points([]orb.Point{p}, append(path, "point", strconv.Itoa(i)), 1, 1, false); err != nil {
				return err
			}
		}
	case orb.LineString:
		return points(g, append(path, "linestring"), 2, 2, false)
	case orb.Ring:
		return points(g, append(path, "ring"), 4, 3, true)
	case orb.MultiLineString:
		path = append(path, "multilinestring")
		if len(g) == 0 {
			return fail(path, "is empty")
		}
		for i, l := range g {
			if err := points(l, append(path, "linestring", strconv.Itoa(i)), 2, 2, false); err != nil {
				return err
			}
		}
	case orb.Polygon:
		return polygon(g, append(path, "polygon"))
	case orb.MultiPolygon:
		path = append(path, "multipolygon")
		if len(g) == 0 {
			return fail(path, "is empty")
		}
		for i, p := range g {
			if err := polygon(p, append(path, "polygon", strconv.Itoa(i))); err != nil {
				return err
			}
		}
	case orb.Collection:
		return collection(g, append(path, "collection"))
	case orb.Bound:
		return bound(g, append(path, "bound"))
	default:
		return fail(append(path, fmt.Sprintf("%T", g)), "is not a geometry type geoflow stores")
	}
	return nil
}

// collection checks that c has members, none of them nil, and each valid.
func collection(c orb.Collection, path []string) error {
	if len(c) == 0 {
		return fail(path, "is empty")
	}
	for i, m := range c {
		if m == nil {
			return fail(append(path, "geometry", strconv.Itoa(i)), "is missing (nil)")
		}
		if err := validate(m, append(path, "geometry", strconv.Itoa(i))); err != nil {
			return err
		}
	}
	return nil
}

// bound checks that b's corners are finite and min is not beyond max.
func bound(b orb.Bound, path []string) error {
	if err := points([]orb.Point{b.Min, b.Max}, path, 2, 1, false); err != nil {
		return err
	}
	if b.Min[0] > b.Max[0] || b.Min[1] > b.Max[1] {
		return fail(path, fmt.Sprintf("is inverted (min %s max %s)", xy(b.Min), xy(b.Max)))
	}
	return nil
}

func polygon(p orb.Polygon, path []string) error {
	if len(p) == 0 {
		return fail(path, "is empty (no rings)")
	}
	for i, r := range p {
		if err := points(r, append(path, "ring", strconv.Itoa(i)), 4, 3, true); err != nil {
			return err
		}
	}
	return nil
}

// points checks one sequence: every point finite, at least min points and distinct
// distinct ones, and closed when it is a ring.
func points(ps []orb.Point, path []string, min, distinct int, ring bool) error {
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

// countDistinct counts the distinct points of ps, stopping at enough.
func countDistinct(ps []orb.Point, enough int) int {
	seen := make([]orb.Point, 0, enough)
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

func fail(path []string, problem string) error {
	return &GeometryError{Part: strings.Join(path, " "), Problem: problem}
}

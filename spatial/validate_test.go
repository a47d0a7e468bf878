package spatial

import (
	"errors"
	"math"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkb"
)

func TestValidate(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	square := orb.Ring{{0, 0}, {1, 0}, {1, 1}, {0, 1}, {0, 0}}
	hole := orb.Ring{{0.2, 0.2}, {0.2, 0.8}, {0.8, 0.8}, {0.2, 0.2}}
	unclosed := orb.Ring{{1, 2}, {5, 2}, {5, 6}, {3, 4}}
	tests := []struct {
		name string
		g    orb.Geometry
		want string // "" when valid
	}{
		{name: "nil", g: nil},
		{name: "point", g: orb.Point{1, 2}},
		{name: "point at zero", g: orb.Point{}},
		{name: "point NaN", g: orb.Point{nan, 2}, want: "point is not finite (NaN,2)"},
		{name: "point infinite", g: orb.Point{1, -inf}, want: "point is not finite (1,-Inf)"},
		{name: "multipoint", g: orb.MultiPoint{{1, 2}, {1, 2}}},
		{name: "multipoint empty", g: orb.MultiPoint{}, want: "multipoint is empty"},
		{name: "multipoint nil", g: orb.MultiPoint(nil), want: "multipoint is empty"},
		{name: "multipoint NaN", g: orb.MultiPoint{{1, 2}, {3, nan}}, want: "multipoint point 1 is not finite (3,NaN)"},
		{name: "linestring", g: orb.LineString{{0, 0}, {1, 1}}},
		{name: "linestring back and forth", g: orb.LineString{{0, 0}, {0, 0}, {1, 1}, {0, 0}}},
		{name: "linestring empty", g: orb.LineString{}, want: "linestring has 0 points, fewer than 2"},
		{name: "linestring one point", g: orb.LineString{{1, 2}}, want: "linestring has 1 point, fewer than 2"},
		{name: "linestring one place", g: orb.LineString{{1, 2}, {1, 2}, {1, 2}}, want: "linestring has 1 distinct points, fewer than 2 (all at 1,2)"},
		{name: "linestring infinite", g: orb.LineString{{0, 0}, {inf, 1}}, want: "linestring point 1 is not finite (+Inf,1)"},
		{name: "ring", g: square},
		{name: "ring triangle", g: orb.Ring{{0, 0}, {1, 0}, {0, 1}, {0, 0}}},
		{name: "ring unclosed", g: unclosed, want: "ring is not closed (first 1,2 last 3,4)"},
		{name: "ring three points", g: orb.Ring{{0, 0}, {1, 0}, {0, 0}}, want: "ring has 3 points, fewer than 4"},
		{name: "ring two places", g: orb.Ring{{0, 0}, {1, 1}, {0, 0}, {0, 0}}, want: "ring has 2 distinct points, fewer than 3 (all at 0,0 and 1,1)"},
		{name: "ring NaN closes nothing", g: orb.Ring{{nan, 0}, {1, 0}, {1, 1}, {nan, 0}}, want: "ring point 0 is not finite (NaN,0)"},
		{name: "polygon", g: orb.Polygon{square}},
		{name: "polygon with hole", g: orb.Polygon{square, hole}},
		{name: "polygon self-intersecting is stored", g: orb.Polygon{{{0, 0}, {1, 1}, {1, 0}, {0, 1}, {0, 0}}}},
		{name: "polygon empty", g: orb.Polygon{}, want: "polygon is empty (no rings)"},
		{name: "polygon unclosed hole", g: orb.Polygon{square, hole, unclosed}, want: "polygon ring 2 is not closed (first 1,2 last 3,4)"},
		{name: "polygon empty ring", g: orb.Polygon{square, {}}, want: "polygon ring 1 has 0 points, fewer than 4"},
		{name: "polygon short ring", g: orb.Polygon{{{0, 0}, {1, 0}, {0, 0}}}, want: "polygon ring 0 has 3 points, fewer than 4"},
		{name: "multilinestring", g: orb.MultiLineString{{{0, 0}, {1, 1}}, {{2, 2}, {3, 3}}}},
		{name: "multilinestring empty", g: orb.MultiLineString{}, want: "multilinestring is empty"},
		{name: "multilinestring empty part", g: orb.MultiLineString{{{0, 0}, {1, 1}}, {}}, want: "multilinestring linestring 1 has 0 points, fewer than 2"},
		{name: "multilinestring degenerate part", g: orb.MultiLineString{{{0, 0}, {0, 0}}}, want: "multilinestring linestring 0 has 1 distinct points, fewer than 2 (all at 0,0)"},
		{name: "multipolygon", g: orb.MultiPolygon{{square}, {hole}}},
		{name: "multipolygon empty", g: orb.MultiPolygon{}, want: "multipolygon is empty"},
		{name: "multipolygon empty polygon", g: orb.MultiPolygon{{square}, {}}, want: "multipolygon polygon 1 is empty (no rings)"},
		{name: "multipolygon unclosed", g: orb.MultiPolygon{{square}, {square, unclosed}}, want: "multipolygon polygon 1 ring 1 is not closed (first 1,2 last 3,4)"},
		{name: "multipolygon infinite", g: orb.MultiPolygon{{{{0, 0}, {1, 0}, {1, inf}, {0, 0}}}}, want: "multipolygon polygon 0 ring 0 point 2 is not finite (1,+Inf)"},
		{name: "collection", g: orb.Collection{orb.Point{1, 2}, orb.Polygon{square}, orb.Collection{orb.LineString{{0, 0}, {1, 0}}}}},
		{name: "collection empty", g: orb.Collection{}, want: "collection is empty"},
		{name: "collection nil member", g: orb.Collection{orb.Point{1, 2}, nil}, want: "collection geometry 1 is missing (nil)"},
		{name: "collection nested unclosed", g: orb.Collection{orb.Point{1, 2}, orb.Collection{orb.Polygon{unclosed}}},
			want: "collection geometry 1 collection geometry 0 polygon ring 0 is not closed (first 1,2 last 3,4)"},
		{name: "bound", g: orb.Bound{Min: orb.Point{0, 0}, Max: orb.Point{1, 1}}},
		{name: "bound of a point", g: orb.Bound{Min: orb.Point{1, 1}, Max: orb.Point{1, 1}}},
		{name: "bound inverted", g: orb.Bound{Min: orb.Point{2, 0}, Max: orb.Point{1, 1}}, want: "bound is inverted (min 2,0 max 1,1)"},
		{name: "bound NaN", g: orb.Bound{Min: orb.Point{nan, 0}, Max: orb.Point{1, 1}}, want: "bound point 0 is not finite (NaN,0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.g)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate(%v) = %v, want valid", tt.g, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate(%v) = nil, want %q", tt.g, tt.want)
			}
			if got := err.Error(); got != "invalid geometry: "+tt.want {
				t.Errorf("Validate(%v) = %q, want %q", tt.g, got, "invalid geometry: "+tt.want)
			}
			var ge *GeometryError
			if !errors.As(err, &ge) || !errors.Is(err, ErrInvalidGeometry) {
				t.Errorf("Validate(%v) = %#v: not a *GeometryError matching ErrInvalidGeometry", tt.g, err)
			}
		})
	}
}

// FuzzValidate decodes WKB into any of orb's geometries and checks Validate against an
// independent statement of its rules: what it accepts is finite, closed where it must be
// and never empty; what it refuses it refuses with a *GeometryError; it never panics. A
// refused part refuses every geometry it is a part of.
func FuzzValidate(f *testing.F) {
	for _, g := range []orb.Geometry{
		orb.Point{1, 2},
		orb.MultiPoint{{1, 2}, {3, 4}},
		orb.LineString{{0, 0}, {1, 1}},
		orb.LineString{{0, 0}, {0, 0}},
		orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}},
		orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 1}}}, // unclosed
		orb.Polygon{{{0, 0}, {1, 0}, {0, 0}}},
		orb.MultiPolygon{{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}}, {}},
		orb.MultiLineString{{{0, 0}, {1, 1}}, {{2, 2}}},
		orb.Collection{orb.Point{1, 2}, orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}}},
		orb.Point{math.NaN(), 1},
	} {
		b, err := wkb.Marshal(g)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := wkb.Unmarshal(b)
		if err != nil || g == nil {
			return
		}
		err = Validate(g)
		if err != nil {
			var ge *GeometryError
			if !errors.As(err, &ge) || ge.Part == "" || ge.Problem == "" {
				t.Fatalf("Validate(%v) = %#v: not a *GeometryError naming a part and a problem", g, err)
			}
			if Validate(orb.Collection{orb.Point{0, 0}, g}) == nil {
				t.Fatalf("Validate refuses %v but accepts a collection holding it", g)
			}
			return
		}
		if why := invalid(g); why != "" {
			t.Fatalf("Validate(%v) accepted %s", g, why)
		}
	})
}

// invalid is the fuzz target's oracle: Validate's rules written plainly, with orb's own
// methods, without Validate's error reporting.
func invalid(g orb.Geometry) string {
	finite := func(ps []orb.Point) bool {
		for _, p := range ps {
			for _, v := range p {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return false
				}
			}
		}
		return true
	}
	distinct := func(ps []orb.Point) int {
		m := map[orb.Point]bool{}
		for _, p := range ps {
			m[p] = true
		}
		return len(m)
	}
	line := func(l orb.LineString) string {
		if !finite(l) || len(l) < 2 || distinct(l) < 2 {
			return "a bad linestring"
		}
		return ""
	}
	ring := func(r orb.Ring) string {
		if !finite(r) || len(r) < 4 || !r.Closed() || distinct(r) < 3 {
			return "a bad ring"
		}
		return ""
	}
	poly := func(p orb.Polygon) string {
		if len(p) == 0 {
			return "an empty polygon"
		}
		for _, r := range p {
			if why := ring(r); why != "" {
				return why
			}
		}
		return ""
	}
	switch g := g.(type) {
	case orb.Point:
		if !finite([]orb.Point{g}) {
			return "a non-finite point"
		}
	case orb.MultiPoint:
		if len(g) == 0 || !finite(g) {
			return "a bad multipoint"
		}
	case orb.LineString:
		return line(g)
	case orb.MultiLineString:
		if len(g) == 0 {
			return "an empty multilinestring"
		}
		for _, l := range g {
			if why := line(l); why != "" {
				return why
			}
		}
	case orb.Polygon:
		return poly(g)
	case orb.MultiPolygon:
		if len(g) == 0 {
			return "an empty multipolygon"
		}
		for _, p := range g {
			if why := poly(p); why != "" {
				return why
			}
		}
	case orb.Collection:
		if len(g) == 0 {
			return "an empty collection"
		}
		for _, m := range g {
			if m == nil {
				return "a nil member"
			}
			if why := invalid(m); why != "" {
				return why
			}
		}
	}
	return ""
}

// BenchmarkValidate measures one pass over a polygon of a million vertices: Validate runs
// in the task's source and again in the store, beside WKB encoding of the same points.
func BenchmarkValidate(b *testing.B) {
	ring := make(orb.Ring, 0, 1_000_001)
	for i := range 1_000_000 {
		a := 2 * math.Pi * float64(i) / 1_000_000
		ring = append(ring, orb.Point{11.5 + 0.01*math.Cos(a), 48.1 + 0.01*math.Sin(a)})
	}
	ring = append(ring, ring[0])
	p := orb.Polygon{ring}
	b.SetBytes(int64(len(ring)) * 16)
	for b.Loop() {
		if err := Validate(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWKB is the same polygon's WKB encoding, for comparison.
func BenchmarkWKB(b *testing.B) {
	ring := make(orb.Ring, 0, 1_000_001)
	for i := range 1_000_000 {
		a := 2 * math.Pi * float64(i) / 1_000_000
		ring = append(ring, orb.Point{11.5 + 0.01*math.Cos(a), 48.1 + 0.01*math.Sin(a)})
	}
	ring = append(ring, ring[0])
	p := orb.Polygon{ring}
	b.SetBytes(int64(len(ring)) * 16)
	for b.Loop() {
		if _, err := wkb.Marshal(p); err != nil {
			b.Fatal(err)
		}
	}
}

// TestValidateAllocatesNothing holds Validate to its word: a valid geometry of any type
// but a collection, however many parts it has, costs no allocation (it runs twice for
// every feature a harvest stores); only an error builds the text that names the part.
func TestValidateAllocatesNothing(t *testing.T) {
	square := orb.Ring{{0, 0}, {1, 0}, {1, 1}, {0, 1}, {0, 0}}
	for _, g := range []orb.Geometry{
		orb.Point{1, 2}, orb.MultiPoint{{1, 2}, {3, 4}}, orb.LineString{{0, 0}, {1, 1}}, square,
		orb.MultiLineString{{{0, 0}, {1, 1}}}, orb.Polygon{square, square}, orb.MultiPolygon{{square}, {square}},
		orb.Bound{Max: orb.Point{1, 1}},
	} {
		if n := testing.AllocsPerRun(100, func() {
			if err := Validate(g); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%s: %v allocations", g.GeoJSONType(), n)
		}
	}
	if err := Validate(orb.Collection{orb.MultiPolygon{{square}, {{{0, 0}, {0, 0}}}}}); err == nil ||
		err.Error() != "invalid geometry: collection geometry 0 multipolygon polygon 1 ring 0 has 2 points, fewer than 4" {
		t.Errorf("nested error %v", err)
	}
}

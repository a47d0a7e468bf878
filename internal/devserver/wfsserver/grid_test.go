package wfsserver

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/clip"
)

func TestHitsMatchGroundTruth(t *testing.T) {
	for _, n := range []int{1, 7, 1000, 12345} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			s, ts := newTestServer(t, Options{Features: n, Seed: int64(n)})
			rng := rand.New(rand.NewPCG(uint64(n), 2))
			for k := range min(25, 100_000/n) {
				w, h := rng.Float64()*0.05, rng.Float64()*0.05
				x, y := 11.44+rng.Float64()*0.12, 48.04+rng.Float64()*0.12
				b := orb.Bound{Min: orb.Point{x, y}, Max: orb.Point{x + w, y + h}}
				got := s.FeaturesIn(b)
				var brute []int
				for i := range n {
					if c := clip.Geometry(b, s.Feature(i).Geometry); c != nil && len(flatten(c)) > 0 {
						brute = append(brute, i)
					}
				}
				if !slices.Equal(got, brute) {
					t.Fatalf("bbox %d %v: grid search %d parcels, brute force %d", k, b, len(got), len(brute))
				}
				for _, v := range []string{"2.0.0", "1.1.0"} {
					r := get(t, ts, kvp("SERVICE", "WFS", "VERSION", v, "REQUEST", "GetFeature", "TYPENAME", "gf:parcels",
						"RESULTTYPE", "hits", "BBOX", fmt.Sprintf("%v,%v,%v,%v,EPSG:4326", b.Min[0], b.Min[1], b.Max[0], b.Max[1])))
					p := parsePage(t, r)
					hits := cmpOr(p.numberMatched, p.numberReturned)
					if hits != strconv.Itoa(len(got)) {
						t.Fatalf("%s hits %s, FeaturesIn %d", v, hits, len(got))
					}
				}
			}
		})
	}
}

func flatten(g orb.Geometry) []orb.Point {
	var pts []orb.Point
	switch g := g.(type) {
	case orb.Polygon:
		for _, r := range g {
			pts = append(pts, r...)
		}
	case orb.MultiPolygon:
		for _, p := range g {
			pts = append(pts, flatten(p)...)
		}
	}
	return pts
}

func TestGeometryIsValidAndSomeStraddle(t *testing.T) {
	s := New(Options{Features: 20000, Seed: 3})
	g := &s.grid
	var holes, multis, straddle int
	for i := range g.n {
		f := s.Feature(i)
		var polys orb.MultiPolygon
		switch geom := f.Geometry.(type) {
		case orb.Polygon:
			polys = orb.MultiPolygon{geom}
			if len(geom) > 1 {
				holes++
			}
		case orb.MultiPolygon:
			polys = geom
			multis++
		}
		for _, p := range polys {
			for k, r := range p {
				if len(r) < 4 || r[0] != r[len(r)-1] {
					t.Fatalf("parcel %d ring %d not closed", i, k)
				}
				if selfIntersects(r) {
					t.Fatalf("parcel %d ring %d self-intersects", i, k)
				}
				if ccw := signedArea(r) > 0; ccw != (k == 0) {
					t.Fatalf("parcel %d ring %d has the wrong orientation", i, k)
				}
				if k > 0 && !ringContains(p[0], r[0]) {
					t.Fatalf("parcel %d hole outside exterior", i)
				}
			}
		}
		cell := orb.Bound{
			Min: orb.Point{g.ext.Min[0] + float64(i%g.cols)*g.dx, g.ext.Min[1] + float64(i/g.cols)*g.dy},
		}
		cell.Max = orb.Point{cell.Min[0] + g.dx, cell.Min[1] + g.dy}
		if b := f.Geometry.Bound(); !cell.Contains(b.Min) || !cell.Contains(b.Max) {
			straddle++
			if b.Min[0] < cell.Min[0]-maxOverhang*g.dx || b.Max[0] > cell.Max[0]+maxOverhang*g.dx {
				t.Fatalf("parcel %d reaches beyond maxOverhang", i)
			}
		}
	}
	t.Logf("holes %d, multipolygons %d, straddling %d of %d", holes, multis, straddle, g.n)
	for name, c := range map[string]int{"holes": holes, "multipolygons": multis, "straddling": straddle} {
		if c < g.n/100 || c > g.n/5 {
			t.Errorf("%s: %d of %d", name, c, g.n)
		}
	}
}

func signedArea(r orb.Ring) float64 {
	var a float64
	for j := 0; j+1 < len(r); j++ {
		a += r[j][0]*r[j+1][1] - r[j+1][0]*r[j][1]
	}
	return a / 2
}

func selfIntersects(r orb.Ring) bool {
	cross := func(o, a, b orb.Point) float64 { return (a[0]-o[0])*(b[1]-o[1]) - (a[1]-o[1])*(b[0]-o[0]) }
	n := len(r) - 1
	for i := range n {
		for j := i + 2; j < n; j++ {
			if i == 0 && j == n-1 {
				continue // adjacent through the closing point
			}
			a, b, c, d := r[i], r[i+1], r[j], r[j+1]
			if cross(a, b, c)*cross(a, b, d) < 0 && cross(c, d, a)*cross(c, d, b) < 0 {
				return true
			}
		}
	}
	return false
}

func TestMillionFeaturesCheap(t *testing.T) {
	s := New(Options{Features: 1_000_000})
	b := orb.Bound{Min: orb.Point{11.50, 48.10}, Max: orb.Point{11.5005, 48.1005}}
	start := time.Now()
	ids := s.FeaturesIn(b)
	if len(ids) == 0 || len(ids) > 100 {
		t.Errorf("%d parcels in a small box", len(ids))
	}
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Errorf("small bbox query took %v: not using the grid", d)
	}
	if n := len(s.FeaturesIn(orb.Bound{Min: orb.Point{11, 48}, Max: orb.Point{12, 49}})); n != 1_000_000 {
		t.Errorf("whole extent holds %d", n)
	}
}

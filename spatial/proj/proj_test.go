package proj

import (
	"errors"
	"math"
	"testing"

	"github.com/paulmach/orb"
)

func TestForwardInverse(t *testing.T) {
	// PROJ 9.1's answers (gdaltransform -s_srs EPSG:4326 -t_srs EPSG:code).
	tests := []struct {
		name   string
		code   int
		lonLat orb.Point
		want   orb.Point
	}{
		{name: "Munich in ETRS89 / UTM 32N", code: 25832, lonLat: orb.Point{11.5, 48.1}, want: orb.Point{686121.755803486, 5330438.130054}},
		{name: "Munich in Web Mercator", code: 3857, lonLat: orb.Point{11.5, 48.1}, want: orb.Point{1280174.14412265, 6123507.42497748}},
		{name: "Munich in LAEA Europe", code: 3035, lonLat: orb.Point{11.5, 48.1}, want: orb.Point{4432769.18303488, 2777405.50776133}},
		{name: "Paris in Lambert-93", code: 2154, lonLat: orb.Point{2.35, 48.85}, want: orb.Point{652301.564830528, 6861302.72589958}},
		{name: "Minneapolis in NAD83 / UTM 15N", code: 26915, lonLat: orb.Point{-93.5, 45}, want: orb.Point{460592.350982754, 4983071.98747271}},
		{name: "Namibia in WGS 84 / UTM 33S", code: 32733, lonLat: orb.Point{14, -30}, want: orb.Point{403549.847433012, 6680793.77724329}},
		{name: "on the central meridian at the equator", code: 32631, lonLat: orb.Point{3, 0}, want: orb.Point{500000, 0}},
		{name: "lon/lat", code: 4326, lonLat: orb.Point{11.5, 48.1}, want: orb.Point{11.5, 48.1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crs, err := Lookup(tt.code)
			if err != nil {
				t.Fatal(err)
			}
			got := crs.Forward(tt.lonLat)
			if d := math.Hypot(got[0]-tt.want[0], got[1]-tt.want[1]); d > 1e-6 {
				t.Errorf("Forward(%v) = %v, want %v (%.3g m off)", tt.lonLat, got, tt.want, d)
			}
			back := crs.Inverse(tt.want)
			if d := groundDistance(back, tt.lonLat); d > 1e-6 {
				t.Errorf("Inverse(%v) = %v, want %v (%.3g m off)", tt.want, back, tt.lonLat, d)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	tests := []struct {
		name        string
		code        int
		unsupported bool
	}{
		{name: "WGS 84", code: 4326},
		{name: "first WGS 84 UTM zone", code: 32601},
		{name: "last southern zone", code: 32760},
		{name: "ETRS89 UTM 38N", code: 25838},
		{name: "NAD83 UTM 1N", code: 26901},
		{name: "NAD83 UTM 23N", code: 26923},
		{name: "old Web Mercator alias", code: 900913},
		{name: "past the WGS 84 zones", code: 32661, unsupported: true},
		{name: "before the ETRS89 zones", code: 25827, unsupported: true},
		{name: "British National Grid", code: 27700, unsupported: true},
		{name: "zero", code: 0, unsupported: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crs, err := Lookup(tt.code)
			if tt.unsupported {
				if !errors.Is(err, ErrUnsupported) {
					t.Fatalf("Lookup(%d) = %v, want ErrUnsupported", tt.code, err)
				}
				return
			}
			if err != nil || crs.Code != tt.code {
				t.Fatalf("Lookup(%d) = %v, %v", tt.code, crs, err)
			}
			if _, ok := areaOfUse(tt.code); !ok {
				t.Errorf("areaOfUse(%d) not known", tt.code)
			}
		})
	}
}

func TestTransformerGeometry(t *testing.T) {
	tr, err := New(4326, 25832)
	if err != nil {
		t.Fatal(err)
	}
	poly := orb.Polygon{{{11.5, 48.1}, {11.6, 48.1}, {11.6, 48.2}, {11.5, 48.1}}}
	g, err := tr.Geometry(orb.Collection{poly, orb.Point{11.5, 48.1}})
	if err != nil {
		t.Fatal(err)
	}
	if poly[0][0] != (orb.Point{11.5, 48.1}) {
		t.Fatalf("Geometry changed its argument: %v", poly)
	}
	got := g.(orb.Collection)[1].(orb.Point)
	if d := math.Hypot(got[0]-686121.755803486, got[1]-5330438.130054); d > 1e-6 {
		t.Errorf("point went to %v", got)
	}
	back, err := New(25832, 4326)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := back.Geometry(g)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range rt.(orb.Collection)[0].(orb.Polygon)[0] {
		if d := groundDistance(p, poly[0][i]); d > 1e-6 {
			t.Errorf("vertex %d came back as %v, %.3g m from %v", i, p, d, poly[0][i])
		}
	}
	if _, err := (&Transformer{from: mustLookup(4326), to: mustLookup(3857)}).Point(orb.Point{0, 90}); err == nil {
		t.Errorf("the pole in Web Mercator: no error")
	}
}

func TestTransformerBound(t *testing.T) {
	tr, err := New(4326, 25832)
	if err != nil {
		t.Fatal(err)
	}
	// A box spanning the zone: in UTM a parallel is lowest on the central meridian, so the
	// southern edge bulges south of its corners.
	b := orb.Bound{Min: orb.Point{6, 50}, Max: orb.Point{12, 52}}
	got, err := tr.Bound(b)
	if err != nil {
		t.Fatal(err)
	}
	crs := mustLookup(25832)
	mid := crs.Forward(orb.Point{9, 50})
	corner := crs.Forward(orb.Point{12, 50})
	if mid[1] >= corner[1] || got.Min[1] > mid[1] {
		t.Errorf("Bound %v misses the edge's bulge to %v (corner at %v)", got, mid, corner)
	}
	in, err := tr.InnerBound(b)
	if err != nil {
		t.Fatal(err)
	}
	if in.Min[1] < corner[1] || !got.Contains(in.Min) || !got.Contains(in.Max) {
		t.Errorf("InnerBound %v reaches beyond the southern edge (corner at %v) or out of %v", in, corner, got)
	}
	back, _ := New(25832, 4326)
	for _, p := range []orb.Point{in.Min, in.Max, {in.Min[0], in.Max[1]}, {in.Max[0], in.Min[1]}} {
		if ll, _ := back.Point(p); !b.Contains(ll) {
			t.Errorf("InnerBound's corner %v is %v, outside %v", p, ll, b)
		}
	}
}

func mustLookup(code int) CRS {
	c, err := Lookup(code)
	if err != nil {
		panic(err)
	}
	return c
}

// FuzzRoundTrip checks that Inverse undoes Forward within a micrometre for any point in
// any supported CRS's area of use.
func FuzzRoundTrip(f *testing.F) {
	f.Add(uint16(0), 0.5, 0.5)
	f.Add(uint16(20), 0.0, 1.0)
	f.Add(uint16(100), 1.0, 0.0)
	all := codes()
	f.Fuzz(func(t *testing.T, i uint16, u, v float64) {
		if math.IsNaN(u) || math.IsNaN(v) || math.IsInf(u, 0) || math.IsInf(v, 0) {
			return
		}
		code := all[int(i)%len(all)]
		b, _ := areaOfUse(code)
		u, v = math.Abs(math.Mod(u, 1)), math.Abs(math.Mod(v, 1))
		p := orb.Point{b.Min[0] + u*(b.Max[0]-b.Min[0]), b.Min[1] + v*(b.Max[1]-b.Min[1])}
		crs := mustLookup(code)
		q := crs.Forward(p)
		back := crs.Inverse(q)
		if math.Abs(p[1]) > 89.999999 {
			return // at a pole every longitude is the same point
		}
		if d := groundDistance(p, back); !(d <= 1e-6) {
			t.Fatalf("EPSG:%d: %v -> %v -> %v: %.3g m", code, p, q, back, d)
		}
	})
}

// BenchmarkForward measures one vertex projected from lon/lat into UTM.
func BenchmarkForward(b *testing.B) {
	crs := mustLookup(25832)
	p := orb.Point{11.5, 48.1}
	for b.Loop() {
		p = crs.Forward(orb.Point{11.5 + p[0]*1e-12, 48.1})
	}
}

// BenchmarkInverse measures one vertex brought from UTM to lon/lat.
func BenchmarkInverse(b *testing.B) {
	crs := mustLookup(25832)
	p := orb.Point{686121.76, 5330438.13}
	for b.Loop() {
		p = crs.Inverse(orb.Point{686121.76 + p[0]*1e-12, 5330438.13})
	}
}

// BenchmarkGeometry measures a 100-vertex polygon converted whole, per vertex.
func BenchmarkGeometry(b *testing.B) {
	tr, _ := New(4326, 25832)
	ring := make(orb.Ring, 100)
	for i := range ring {
		a := 2 * math.Pi * float64(i) / 99
		ring[i] = orb.Point{11.5 + 0.001*math.Cos(a), 48.1 + 0.001*math.Sin(a)}
	}
	g := orb.Polygon{ring}
	for b.Loop() {
		if _, err := tr.Geometry(g); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/vertex")
}

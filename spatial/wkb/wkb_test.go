package wkb

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"math"
	"strings"
	"testing"

	"github.com/paulmach/orb"
	orbwkb "github.com/paulmach/orb/encoding/wkb"
)

// notGeometry is an orb.Geometry that WKB cannot hold.
type notGeometry struct{ orb.Point }

// le builds expected WKB: a byte order, type and count heads, doubles.
type le []byte

func (b le) head(typ uint32) le { return binary.LittleEndian.AppendUint32(append(b, 1), typ) }
func (b le) u32(v uint32) le    { return binary.LittleEndian.AppendUint32(b, v) }
func (b le) bits(v uint64) le   { return binary.LittleEndian.AppendUint64(b, v) }
func (b le) f64(vs ...float64) le {
	for _, v := range vs {
		b = b.bits(math.Float64bits(v))
	}
	return b
}

func TestAppend(t *testing.T) {
	const payloadNaN = 0x7ff0000000000001 // a signalling NaN
	sNaN := math.Float64frombits(payloadNaN)
	gpkg := Options{NilAsEmpty: true, QuietNaN: true}
	tests := []struct {
		name string
		g    orb.Geometry
		opt  Options
		want le
	}{
		{name: "point", g: orb.Point{1, 2}, want: le{}.head(1).f64(1, 2)},
		{name: "empty point keeps its NaN bits", g: orb.Point{sNaN, sNaN}, want: le{}.head(1).bits(payloadNaN).bits(payloadNaN)},
		{name: "empty point, QuietNaN", g: orb.Point{sNaN, sNaN}, opt: gpkg, want: le{}.head(1).bits(quietNaN).bits(quietNaN)},
		{name: "half-NaN point is not empty", g: orb.Point{sNaN, 1}, opt: gpkg, want: le{}.head(1).bits(payloadNaN).f64(1)},
		{name: "linestring", g: orb.LineString{{1, 2}, {3, 4}}, want: le{}.head(2).u32(2).f64(1, 2, 3, 4)},
		{name: "NaN in a linestring is kept", g: orb.LineString{{sNaN, sNaN}}, opt: gpkg, want: le{}.head(2).u32(1).bits(payloadNaN).bits(payloadNaN)},
		{name: "nil linestring writes nothing", g: orb.LineString(nil), want: le{}},
		{name: "nil linestring, NilAsEmpty", g: orb.LineString(nil), opt: gpkg, want: le{}.head(2).u32(0)},
		{name: "empty linestring", g: orb.LineString{}, want: le{}.head(2).u32(0)},
		{name: "ring is a polygon", g: orb.Ring{{0, 0}, {1, 1}}, want: le{}.head(3).u32(1).u32(2).f64(0, 0, 1, 1)},
		{name: "nil ring writes nothing", g: orb.Ring(nil), want: le{}},
		{name: "nil ring, NilAsEmpty: a polygon of one empty ring", g: orb.Ring(nil), opt: gpkg, want: le{}.head(3).u32(1).u32(0)},
		{name: "bound is a polygon", g: orb.Bound{Min: orb.Point{1, 2}, Max: orb.Point{3, 4}},
			want: le{}.head(3).u32(1).u32(5).f64(1, 2, 3, 2, 3, 4, 1, 4, 1, 2)},
		{name: "multipoint", g: orb.MultiPoint{{1, 2}}, want: le{}.head(4).u32(1).head(1).f64(1, 2)},
		{name: "nil multipoint", g: orb.MultiPoint(nil), want: le{}},
		{name: "nil multipoint, NilAsEmpty", g: orb.MultiPoint(nil), opt: gpkg, want: le{}.head(4).u32(0)},
		{name: "nil member of a multilinestring leaves a hole", g: orb.MultiLineString{nil}, want: le{}.head(5).u32(1)},
		{name: "nil member of a multilinestring, NilAsEmpty", g: orb.MultiLineString{nil}, opt: gpkg, want: le{}.head(5).u32(1).head(2).u32(0)},
		{name: "nil member of a multipolygon leaves a hole", g: orb.MultiPolygon{nil}, want: le{}.head(6).u32(1)},
		{name: "nil member of a multipolygon, NilAsEmpty", g: orb.MultiPolygon{nil}, opt: gpkg, want: le{}.head(6).u32(1).head(3).u32(0)},
		{name: "nil member of a collection writes nothing", g: orb.Collection{nil, orb.Point{1, 2}}, opt: gpkg,
			want: le{}.head(7).u32(2).head(1).f64(1, 2)},
		{name: "nested collections", g: orb.Collection{orb.Collection{orb.Point{1, 2}}}, want: le{}.head(7).u32(1).head(7).u32(1).head(1).f64(1, 2)},
		{name: "nil collection", g: orb.Collection(nil), want: le{}},
		{name: "nil collection, NilAsEmpty", g: orb.Collection(nil), opt: gpkg, want: le{}.head(7).u32(0)},
		{name: "nil geometry", g: nil, opt: gpkg, want: le{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Append([]byte("dst"), tt.g, tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			if want := append([]byte("dst"), tt.want...); !bytes.Equal(got, want) {
				t.Errorf("Append wrote\n%s\nwant\n%s", hex.EncodeToString(got), hex.EncodeToString(want))
			}
		})
	}
}

func TestAppendForeignType(t *testing.T) {
	for _, g := range []orb.Geometry{notGeometry{}, orb.Collection{orb.Point{1, 2}, notGeometry{}}} {
		got, err := Append([]byte("dst"), g, Options{})
		if err == nil || !strings.Contains(err.Error(), "wkb.notGeometry is not a geometry WKB can hold") {
			t.Errorf("Append(%T) error %v", g, err)
		}
		if string(got) != "dst" {
			t.Errorf("Append(%T) failed leaving %q, want dst unchanged", g, got)
		}
	}
}

// TestAppendMatchesOrb holds the package comment to its word: the zero Options write
// what orb/encoding/wkb writes.
func TestAppendMatchesOrb(t *testing.T) {
	ring := orb.Ring{{0, 0}, {1, 0}, {1, 1}, {0, 0}}
	for _, g := range []orb.Geometry{
		orb.Point{1, 2}, orb.MultiPoint{{1, 2}, {3, 4}}, orb.MultiPoint{}, orb.LineString{{1, 2}, {3, 4}},
		orb.LineString(nil), orb.MultiLineString{{{1, 2}}, {}}, ring, orb.Ring(nil),
		orb.Bound{Max: orb.Point{1, 1}}, orb.Polygon{ring, ring}, orb.Polygon(nil), orb.MultiPolygon{{ring}, {}},
		orb.Collection{orb.Point{1, 2}, orb.Collection{ring}, orb.Collection{}}, orb.Collection(nil),
	} {
		want, err := orbwkb.Marshal(g, binary.LittleEndian)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := Append(nil, g, Options{}); !bytes.Equal(got, want) {
			t.Errorf("%T %v: Append wrote\n%x\norb\n%x", g, g, got, want)
		}
	}
}

func TestAppendExtent(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name  string
		g     orb.Geometry
		empty bool
		want  orb.Bound
	}{
		{name: "point", g: orb.Point{1, 2}, want: orb.Bound{Min: orb.Point{1, 2}, Max: orb.Point{1, 2}}},
		{name: "empty point", g: orb.Point{nan, nan}, empty: true},
		{name: "linestring without its NaN", g: orb.LineString{{1, 5}, {nan, 9}, {-3, 2}}, want: orb.Bound{Min: orb.Point{-3, 2}, Max: orb.Point{1, 5}}},
		{name: "collection", g: orb.Collection{orb.MultiPoint{{0, 0}}, orb.Polygon{{{4, -1}}}, orb.Bound{Max: orb.Point{1, 7}}},
			want: orb.Bound{Min: orb.Point{0, -1}, Max: orb.Point{4, 7}}},
		{name: "infinity is kept", g: orb.LineString{{math.Inf(-1), 0}, {1, 1}}, want: orb.Bound{Min: orb.Point{math.Inf(-1), 0}, Max: orb.Point{1, 1}}},
		{name: "empty linestring", g: orb.LineString{}, empty: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := NewExtent()
			withExtent, err := AppendExtent(nil, tt.g, Options{}, &e)
			if err != nil {
				t.Fatal(err)
			}
			if without, _ := Append(nil, tt.g, Options{}); !bytes.Equal(withExtent, without) {
				t.Error("AppendExtent wrote other bytes than Append")
			}
			if e.Empty() != tt.empty {
				t.Fatalf("Empty() = %v, want %v", e.Empty(), tt.empty)
			}
			if !tt.empty && e.Bound() != tt.want {
				t.Errorf("Bound() = %v, want %v", e.Bound(), tt.want)
			}
		})
	}
}

func TestAppendAllocations(t *testing.T) {
	var g orb.Geometry = benchPolygon()
	buf := make([]byte, 0, 1024)
	e := NewExtent()
	allocs := testing.AllocsPerRun(100, func() {
		buf, _ = AppendExtent(buf[:0], g, Options{NilAsEmpty: true, QuietNaN: true}, &e)
		buf, _ = Append(buf[:0], g, Options{})
	})
	if allocs != 0 {
		t.Errorf("Append into a buffer with room allocates %v times per call, want 0", allocs)
	}
}

// benchPolygon is a 20-vertex ring, the size of a typical building footprint.
func benchPolygon() orb.Polygon {
	r := make(orb.Ring, 0, 20)
	for i := range 19 {
		a := 2 * math.Pi * float64(i) / 19
		r = append(r, orb.Point{600000 + 10*math.Cos(a), 5800000 + 10*math.Sin(a)})
	}
	return orb.Polygon{append(r, r[0])}
}

// BenchmarkAppend compares Append, with and without an extent, with orb/encoding/wkb's
// Marshal on a 20-vertex polygon.
func BenchmarkAppend(b *testing.B) {
	var g orb.Geometry = benchPolygon()
	buf := make([]byte, 0, 1024)
	b.Run("Append", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf, _ = Append(buf[:0], g, Options{})
		}
	})
	b.Run("AppendExtent", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			e := NewExtent()
			buf, _ = AppendExtent(buf[:0], g, Options{NilAsEmpty: true, QuietNaN: true}, &e)
		}
	})
	b.Run("orb Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf, _ = orbwkb.Marshal(g, binary.LittleEndian)
		}
	})
}

package spatial

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial/wkb"
)

// notGeometry is an orb.Geometry that WKB cannot hold.
type notGeometry struct{ orb.Point }

// hashGeometries are the geometries whose WKB the payload hash must keep byte for byte:
// every orb type, empty and nil ones, nil members, NaN points, and a foreign type.
func hashGeometries() []struct {
	name string
	g    orb.Geometry
} {
	nan := math.NaN()
	payloadNaN := math.Float64frombits(0x7ff0000000000001) // a signalling NaN
	ring := orb.Ring{{0, 0}, {1, 0}, {1, 1}, {0, 0}}
	return []struct {
		name string
		g    orb.Geometry
	}{
		{name: "point", g: orb.Point{1, 2}},
		{name: "point -0 and infinity", g: orb.Point{math.Copysign(0, -1), math.Inf(1)}},
		{name: "empty point", g: orb.Point{nan, nan}},
		{name: "empty point with NaN payloads", g: orb.Point{payloadNaN, payloadNaN}},
		{name: "half-NaN point", g: orb.Point{nan, 1}},
		{name: "multipoint", g: orb.MultiPoint{{1, 2}, {payloadNaN, payloadNaN}}},
		{name: "empty multipoint", g: orb.MultiPoint{}},
		{name: "nil multipoint", g: orb.MultiPoint(nil)},
		{name: "linestring", g: orb.LineString{{1, 2}, {3, 4}}},
		{name: "empty linestring", g: orb.LineString{}},
		{name: "nil linestring", g: orb.LineString(nil)},
		{name: "multilinestring with a nil member", g: orb.MultiLineString{{{1, 2}, {3, 4}}, nil, {}}},
		{name: "empty multilinestring", g: orb.MultiLineString{}},
		{name: "nil multilinestring", g: orb.MultiLineString(nil)},
		{name: "ring", g: ring},
		{name: "empty ring", g: orb.Ring{}},
		{name: "nil ring", g: orb.Ring(nil)},
		{name: "bound", g: orb.Bound{Min: orb.Point{1, 2}, Max: orb.Point{3, 4}}},
		{name: "polygon with a hole", g: orb.Polygon{ring, ring}},
		{name: "polygon with a nil ring", g: orb.Polygon{nil}},
		{name: "empty polygon", g: orb.Polygon{}},
		{name: "nil polygon", g: orb.Polygon(nil)},
		{name: "multipolygon with a nil member", g: orb.MultiPolygon{{ring}, nil, {}}},
		{name: "empty multipolygon", g: orb.MultiPolygon{}},
		{name: "nil multipolygon", g: orb.MultiPolygon(nil)},
		{name: "collection of everything", g: orb.Collection{
			orb.Point{1, 2}, orb.MultiPoint{{3, 4}}, orb.LineString{{1, 2}, {3, 4}}, orb.MultiLineString{nil},
			ring, orb.Ring(nil), orb.Bound{Max: orb.Point{1, 1}}, orb.Polygon{ring}, orb.MultiPolygon{{ring}},
			nil, orb.Collection{orb.Collection{orb.Point{5, 6}}, orb.Collection(nil)}, orb.Collection{},
		}},
		{name: "empty collection", g: orb.Collection{}},
		{name: "nil collection", g: orb.Collection(nil)},
		{name: "foreign type", g: notGeometry{}},
		{name: "foreign type in a collection", g: orb.Collection{orb.Point{1, 2}, notGeometry{}}},
	}
}

// TestHashWKBUnchanged proves that the payload hash's WKB, now written by spatial/wkb,
// is byte for byte what the hash's own writer wrote before (appendWKBBefore, kept here
// as it was): stored hashes depend on it.
func TestHashWKBUnchanged(t *testing.T) {
	for _, tt := range hashGeometries() {
		t.Run(tt.name, func(t *testing.T) {
			prefix := []byte("prefix")
			want, wantOK := appendWKBBefore(bytes.Clone(prefix), tt.g)
			got, err := wkb.Append(bytes.Clone(prefix), tt.g, wkb.Options{})
			if (err == nil) != wantOK {
				t.Fatalf("wkb.Append error %v, the old writer ok %v", err, wantOK)
			}
			if wantOK && !bytes.Equal(got, want) {
				t.Errorf("wkb.Append wrote\n%x\nthe old writer\n%x", got, want)
			}
			if !wantOK && !bytes.Equal(got, prefix) {
				t.Errorf("wkb.Append failed, leaving %x, want dst unchanged", got)
			}
			if wantOK {
				// The whole hash, from the encoding as it was built before.
				b := append([]byte(hashVersion), 'G')
				b = withLen(append(b, want[len(prefix):]...), len(hashVersion)+1)
				b = appendValue(b, map[string]any(nil))
				if PayloadHash(&Feature{Geometry: tt.g}) != sha256.Sum256(b) {
					t.Error("PayloadHash differs from the hash of the old encoding")
				}
			}
		})
	}
}

// WKB geometry types.
const (
	wkbPoint              = 1
	wkbLineString         = 2
	wkbPolygon            = 3
	wkbMultiPoint         = 4
	wkbMultiLineString    = 5
	wkbMultiPolygon       = 6
	wkbGeometryCollection = 7
)

// appendWKBBefore is the hash's appendWKB as it was before spatial/wkb, unchanged: it
// appends g as little-endian WKB, byte for byte what
// orb/encoding/wkb writes (nil slices write nothing, a Ring is a Polygon, a
// Bound its Polygon). It reports false for a type it does not know.
func appendWKBBefore(b []byte, g orb.Geometry) ([]byte, bool) {
	le := binary.LittleEndian
	head := func(b []byte, t uint32, n int) []byte {
		b = append(b, 1)
		b = le.AppendUint32(b, t)
		return le.AppendUint32(b, uint32(n))
	}
	points := func(b []byte, ps []orb.Point) []byte {
		for _, p := range ps {
			b = le.AppendUint64(b, math.Float64bits(p[0]))
			b = le.AppendUint64(b, math.Float64bits(p[1]))
		}
		return b
	}
	polygon := func(b []byte, p orb.Polygon) []byte {
		if p == nil {
			return b
		}
		b = head(b, wkbPolygon, len(p))
		for _, r := range p {
			b = le.AppendUint32(b, uint32(len(r)))
			b = points(b, r)
		}
		return b
	}
	switch g := g.(type) {
	case nil:
	case orb.Point:
		b = append(b, 1)
		b = le.AppendUint32(b, wkbPoint)
		b = points(b, []orb.Point{g})
	case orb.MultiPoint:
		if g == nil {
			break
		}
		b = head(b, wkbMultiPoint, len(g))
		for _, p := range g {
			b = append(b, 1)
			b = le.AppendUint32(b, wkbPoint)
			b = points(b, []orb.Point{p})
		}
	case orb.LineString:
		if g == nil {
			break
		}
		b = points(head(b, wkbLineString, len(g)), g)
	case orb.MultiLineString:
		if g == nil {
			break
		}
		b = head(b, wkbMultiLineString, len(g))
		for _, ls := range g {
			if ls != nil {
				b = points(head(b, wkbLineString, len(ls)), ls)
			}
		}
	case orb.Ring:
		if g != nil {
			b = polygon(b, orb.Polygon{g})
		}
	case orb.Bound:
		b = polygon(b, g.ToPolygon())
	case orb.Polygon:
		b = polygon(b, g)
	case orb.MultiPolygon:
		if g == nil {
			break
		}
		b = head(b, wkbMultiPolygon, len(g))
		for _, p := range g {
			b = polygon(b, p)
		}
	case orb.Collection:
		if g == nil {
			break
		}
		b = head(b, wkbGeometryCollection, len(g))
		for _, m := range g {
			var ok bool
			if b, ok = appendWKBBefore(b, m); !ok {
				return b, false
			}
		}
	default:
		return b, false
	}
	return b, true
}

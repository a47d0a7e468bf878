package gpkg

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/paulmach/orb"
)

// TestEncodeGeometryUnchanged proves that the blobs the encoder writes through
// spatial/wkb are byte for byte those its own WKB writer wrote before
// (appendGeometryBefore and the rest of this file, kept as they were), for every orb type,
// empty and nil ones, nil members and NaN points.
func TestEncodeGeometryUnchanged(t *testing.T) {
	nan := math.NaN()
	payloadNaN := math.Float64frombits(0x7ff0000000000001) // a signalling NaN
	ring := orb.Ring{{0, 0}, {1, 0}, {1, 1}, {0, 0}}
	tests := []struct {
		name string
		g    orb.Geometry
	}{
		{name: "point", g: orb.Point{1, 2}},
		{name: "point -0 and infinity", g: orb.Point{math.Copysign(0, -1), math.Inf(1)}},
		{name: "empty point", g: orb.Point{nan, nan}},
		{name: "empty point with NaN payloads", g: orb.Point{payloadNaN, payloadNaN}},
		{name: "half-NaN point", g: orb.Point{nan, 1}},
		{name: "multipoint", g: orb.MultiPoint{{1, 2}, {payloadNaN, payloadNaN}, {nan, 3}}},
		{name: "multipoint of empty points", g: orb.MultiPoint{{payloadNaN, payloadNaN}}},
		{name: "empty multipoint", g: orb.MultiPoint{}},
		{name: "nil multipoint", g: orb.MultiPoint(nil)},
		{name: "linestring", g: orb.LineString{{1, 2}, {3, 4}, {nan, nan}}},
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
			orb.Point{1, 2}, orb.Point{nan, nan}, orb.MultiPoint{{3, 4}}, orb.LineString{{1, 2}, {3, 4}},
			orb.MultiLineString{nil}, ring, orb.Ring(nil), orb.Bound{Max: orb.Point{1, 1}}, orb.Polygon{ring},
			orb.MultiPolygon{{ring}}, orb.Collection{orb.Collection{orb.Point{5, 6}}, orb.Collection(nil)}, orb.Collection{},
		}},
		{name: "collection of empties", g: orb.Collection{orb.Point{nan, nan}, orb.LineString(nil)}},
		{name: "empty collection", g: orb.Collection{}},
		{name: "nil collection", g: orb.Collection(nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, wantErr := appendGeometryBefore([]byte("prefix"), tt.g, 4326)
			got, err := appendGeometry([]byte("prefix"), tt.g, 4326)
			if err != nil || wantErr != nil {
				t.Fatalf("errors %v, before %v", err, wantErr)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("appendGeometry wrote\n%x\nbefore\n%x", got, want)
			}
		})
	}
}

func appendGeometryBefore(dst []byte, g orb.Geometry, srsID int32) ([]byte, error) {
	if g == nil {
		return dst, nil
	}
	switch v := g.(type) {
	case orb.Ring:
		g = orb.Polygon{v}
	case orb.Bound:
		g = v.ToPolygon()
	}
	n, err := wkbSize(g, 0)
	if err != nil {
		return dst, err
	}
	start := len(dst)
	if p, ok := g.(orb.Point); ok {
		flags := byte(flagLittleEndian)
		if math.IsNaN(p[0]) || math.IsNaN(p[1]) {
			flags |= flagEmpty // as envelopeBefore.add decides
		}
		dst = grow(dst, headerLen+n)
		dst = append(dst, 'G', 'P', 0, flags)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(srsID))
		return appendPointBefore(dst, p), nil
	}

	dst = grow(dst, headerLen+32+n)
	dst = append(dst, 'G', 'P', 0, flagLittleEndian|envelopeXY<<1)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(srsID))
	envAt := len(dst)
	dst = dst[:envAt+32]
	e := newEnvelopeBefore()
	dst = appendWKBBefore(dst, g, &e)
	if e.empty() {
		// Rare: move the WKB over the envelopeBefore slot rather than walk the geometry twice.
		dst[start+3] = flagLittleEndian | flagEmpty
		copy(dst[envAt:], dst[envAt+32:])
		return dst[:len(dst)-32], nil
	}
	binary.LittleEndian.PutUint64(dst[envAt:], math.Float64bits(e.minX))
	binary.LittleEndian.PutUint64(dst[envAt+8:], math.Float64bits(e.maxX))
	binary.LittleEndian.PutUint64(dst[envAt+16:], math.Float64bits(e.minY))
	binary.LittleEndian.PutUint64(dst[envAt+24:], math.Float64bits(e.maxY))
	return dst, nil
}

// appendWKBBefore appends g as little-endian WKB, extending e by its coordinates. g has passed
// wkbSize, and dst has the capacity for it.
func appendWKBBefore(dst []byte, g orb.Geometry, e *envelopeBefore) []byte {
	switch g := g.(type) {
	case orb.Point:
		e.add(g[0], g[1])
		return appendPointBefore(dst, g)
	case orb.MultiPoint:
		dst = appendTypeCountBefore(dst, wkbMultiPoint, len(g))
		for _, p := range g {
			e.add(p[0], p[1])
			dst = appendPointBefore(dst, p)
		}
		return dst
	case orb.LineString:
		dst = appendTypeCountBefore(dst, wkbLineString, len(g))
		return appendPointsBefore(dst, g, e)
	case orb.Ring:
		return appendPolygonBefore(dst, orb.Polygon{g}, e)
	case orb.Polygon:
		return appendPolygonBefore(dst, g, e)
	case orb.Bound:
		return appendPolygonBefore(dst, g.ToPolygon(), e)
	case orb.MultiLineString:
		dst = appendTypeCountBefore(dst, wkbMultiLineString, len(g))
		for _, ls := range g {
			dst = appendTypeCountBefore(dst, wkbLineString, len(ls))
			dst = appendPointsBefore(dst, ls, e)
		}
		return dst
	case orb.MultiPolygon:
		dst = appendTypeCountBefore(dst, wkbMultiPolygon, len(g))
		for _, p := range g {
			dst = appendPolygonBefore(dst, p, e)
		}
		return dst
	case orb.Collection:
		dst = appendTypeCountBefore(dst, wkbGeometryCollection, len(g))
		for _, m := range g {
			dst = appendWKBBefore(dst, m, e)
		}
		return dst
	}
	panic(fmt.Sprintf("gpkg geometry: appendWKBBefore got %T, which wkbSize refuses", g))
}

func appendTypeCountBefore(dst []byte, typ uint32, n int) []byte {
	dst = append(dst, 1) // little-endian
	dst = binary.LittleEndian.AppendUint32(dst, typ)
	return binary.LittleEndian.AppendUint32(dst, uint32(n))
}

// appendPointBefore appends a WKB Point; an empty one gets the quiet NaN the GeoPackage
// prescribes, whatever the NaN payloads in p.
func appendPointBefore(dst []byte, p orb.Point) []byte {
	dst = append(dst, 1)
	dst = binary.LittleEndian.AppendUint32(dst, wkbPoint)
	if isEmptyPointBefore(p) {
		dst = binary.LittleEndian.AppendUint64(dst, nanBitsBefore)
		return binary.LittleEndian.AppendUint64(dst, nanBitsBefore)
	}
	dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(p[0]))
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(p[1]))
}

func appendPointsBefore(dst []byte, ps []orb.Point, e *envelopeBefore) []byte {
	for _, p := range ps {
		e.add(p[0], p[1])
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(p[0]))
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(p[1]))
	}
	return dst
}

func appendPolygonBefore(dst []byte, p orb.Polygon, e *envelopeBefore) []byte {
	dst = appendTypeCountBefore(dst, wkbPolygon, len(p))
	for _, r := range p {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(r)))
		dst = appendPointsBefore(dst, r, e)
	}
	return dst
}

// nanBitsBefore is the quiet NaN the GeoPackage requires for the coordinates of an empty point
// (0x7ff8000000000000; little-endian 00 00 00 00 00 00 f8 7f).
const nanBitsBefore = 0x7ff8000000000000

func isEmptyPointBefore(p orb.Point) bool {
	return math.IsNaN(p[0]) && math.IsNaN(p[1])
}

// envelopeBefore is the envelope type the encoder and blobEnvelope shared before wkb.Extent.
type envelopeBefore struct {
	minX, maxX, minY, maxY float64
	points                 int
}

func newEnvelopeBefore() envelopeBefore {
	return envelopeBefore{minX: math.Inf(1), maxX: math.Inf(-1), minY: math.Inf(1), maxY: math.Inf(-1)}
}

// add extends e by (x, y), unless either is NaN: (NaN, NaN) is an empty point, and half
// a coordinate has no place in an envelope.
func (e *envelopeBefore) add(x, y float64) {
	if x != x || y != y {
		return
	}
	e.points++
	if x < e.minX {
		e.minX = x
	}
	if x > e.maxX {
		e.maxX = x
	}
	if y < e.minY {
		e.minY = y
	}
	if y > e.maxY {
		e.maxY = y
	}
}

func (e *envelopeBefore) empty() bool { return e.points == 0 }

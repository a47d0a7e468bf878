// Package wkb appends orb geometries to a byte slice as little-endian two-dimensional
// WKB, the type codes 1-7 on which OGC 06-103r4 and ISO 13249-3 agree. It is geoflow's
// one WKB writer: the payload hash (spatial.PayloadHash) and the GeoPackage store's
// geometry blobs both write through it, each with the Options its stored bytes were
// first written with.
//
// orb/encoding/wkb writes the same bytes as the zero Options, but through an io.Writer
// into a buffer it allocates per call (four allocations for a polygon); Append
// allocates only when dst lacks the capacity, which matters on paths that run once per
// feature.
package wkb

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/paulmach/orb"
)

// WKB geometry type codes.
const (
	typePoint              = 1
	typeLineString         = 2
	typePolygon            = 3
	typeMultiPoint         = 4
	typeMultiLineString    = 5
	typeMultiPolygon       = 6
	typeGeometryCollection = 7
)

// quietNaN is the NaN the GeoPackage prescribes for the coordinates of an empty point
// (0x7ff8000000000000; little-endian 00 00 00 00 00 00 f8 7f).
const quietNaN = 0x7ff8000000000000

// Options choose between the two ways WKB is written here where WKB itself leaves a
// choice to the writer. The zero Options write what orb/encoding/wkb writes.
type Options struct {
	// NilAsEmpty writes a nil slice (orb.LineString(nil), a nil Polygon in a
	// MultiPolygon) as an empty geometry of its type, and a nil orb.Ring as a Polygon
	// of one empty ring, as a GeoPackage wants. Without it a nil slice writes nothing,
	// as in orb/encoding/wkb, even where its parent has counted it.
	NilAsEmpty bool
	// QuietNaN writes an empty point (x and y both NaN, orb's only way to say it) with
	// the quiet NaN 0x7ff8000000000000 for both, whatever the payloads of its NaNs, as a
	// GeoPackage requires. Without it every coordinate is written bit for bit.
	QuietNaN bool
}

// Append appends g's WKB to dst and returns the extended slice; it allocates only when
// dst lacks the capacity. orb.Ring and orb.Bound are written as Polygons. A nil g, and
// a nil member of an orb.Collection, write nothing (the caller decides what no geometry
// is). A geometry type other than orb's is an error, and dst is returned unchanged.
//
// Append does not check counts against WKB's uint32 or bound the nesting of
// collections; a caller whose reader needs that checks before. It is safe for
// concurrent use on distinct dst.
func Append(dst []byte, g orb.Geometry, opt Options) ([]byte, error) {
	return AppendExtent(dst, g, opt, nil)
}

// AppendExtent is Append that also extends e by every coordinate it writes; a nil e
// is Append.
func AppendExtent(dst []byte, g orb.Geometry, opt Options, e *Extent) ([]byte, error) {
	b, err := writer{opt: opt, e: e}.geometry(dst, g)
	if err != nil {
		return dst, err
	}
	return b, nil
}

// writer is one Append call's settings.
type writer struct {
	opt Options
	e   *Extent
}

// skip tells whether a nil slice is left out rather than written as an empty geometry.
func (w writer) skip(isNil bool) bool { return isNil && !w.opt.NilAsEmpty }

func (w writer) geometry(b []byte, g orb.Geometry) ([]byte, error) {
	switch g := g.(type) {
	case nil:
	case orb.Point:
		b = w.point(b, g)
	case orb.MultiPoint:
		if w.skip(g == nil) {
			break
		}
		b = head(b, typeMultiPoint, len(g))
		for _, p := range g {
			b = w.point(b, p)
		}
	case orb.LineString:
		b = w.lineString(b, g)
	case orb.MultiLineString:
		if w.skip(g == nil) {
			break
		}
		b = head(b, typeMultiLineString, len(g))
		for _, ls := range g {
			b = w.lineString(b, ls)
		}
	case orb.Ring:
		if !w.skip(g == nil) {
			b = w.polygon(b, orb.Polygon{g})
		}
	case orb.Bound:
		b = w.polygon(b, g.ToPolygon())
	case orb.Polygon:
		b = w.polygon(b, g)
	case orb.MultiPolygon:
		if w.skip(g == nil) {
			break
		}
		b = head(b, typeMultiPolygon, len(g))
		for _, p := range g {
			b = w.polygon(b, p)
		}
	case orb.Collection:
		// Inline, not in a method of its own: escape analysis takes b to the heap
		// through mutually recursive calls, and with it the caller's stack buffer.
		if w.skip(g == nil) {
			break
		}
		b = head(b, typeGeometryCollection, len(g))
		for _, m := range g {
			var err error
			if b, err = w.geometry(b, m); err != nil {
				return b, err
			}
		}
	default:
		return b, fmt.Errorf("wkb: %T is not a geometry WKB can hold", g)
	}
	return b, nil
}

// head appends a byte order, a type code and a count.
func head(b []byte, typ uint32, n int) []byte {
	b = append(b, 1) // little-endian
	b = binary.LittleEndian.AppendUint32(b, typ)
	return binary.LittleEndian.AppendUint32(b, uint32(n))
}

func (w writer) point(b []byte, p orb.Point) []byte {
	b = append(b, 1)
	b = binary.LittleEndian.AppendUint32(b, typePoint)
	if w.e != nil {
		w.e.Add(p[0], p[1])
	}
	if w.opt.QuietNaN && math.IsNaN(p[0]) && math.IsNaN(p[1]) {
		b = binary.LittleEndian.AppendUint64(b, quietNaN)
		return binary.LittleEndian.AppendUint64(b, quietNaN)
	}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p[0]))
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(p[1]))
}

func (w writer) lineString(b []byte, ls orb.LineString) []byte {
	if w.skip(ls == nil) {
		return b
	}
	return w.coords(head(b, typeLineString, len(ls)), ls)
}

func (w writer) polygon(b []byte, p orb.Polygon) []byte {
	if w.skip(p == nil) {
		return b
	}
	b = head(b, typePolygon, len(p))
	for _, r := range p {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(r)))
		b = w.coords(b, r)
	}
	return b
}

// coords appends the coordinates of a LineString or a ring, bit for bit.
func (w writer) coords(b []byte, ps []orb.Point) []byte {
	for _, p := range ps {
		if w.e != nil {
			w.e.Add(p[0], p[1])
		}
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p[0]))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p[1]))
	}
	return b
}

package gpkg

// GeoPackageBinary geometry blobs (OGC 12-128r18, clause 2.1.3): an 8-byte header
// ("GP", version, flags, srs_id), an optional envelope, then ISO WKB. orb is 2D, so Z
// and M ordinates are read and dropped, never written.
//
// The encoder writes its own WKB rather than going through orb/encoding/wkb: for 2D
// geometries both produce the same bytes (type codes 1-7, ISO and OGC WKB agree), but
// orb's writes through an io.Writer into a bytes.Buffer it allocates per call, while
// appending into the caller's buffer allocates nothing. BenchmarkAppendGeometry and
// BenchmarkAppendGeometryOrbWKB in geom_test.go measure the two on a 20-vertex polygon.

import (
	"math"

	"github.com/paulmach/orb"
)

// Header flag bits (clause 2.1.3.1.1, "bit layout of GeoPackageBinary flags byte").
const (
	flagLittleEndian = 1 << 0     // B: header values are little-endian
	flagEnvelopeMask = 0b111 << 1 // E: envelope contents indicator
	flagEmpty        = 1 << 4     // Y: empty geometry
	flagExtended     = 1 << 5     // X: ExtendedGeoPackageBinary
	flagReserved     = 0b11 << 6  // R: reserved, always 0

	headerLen = 8

	// envelopeXY is the envelope contents indicator for [minx, maxx, miny, maxy].
	envelopeXY = 1

	// maxDepth bounds the nesting of multi-geometries and collections, so a crafted blob
	// cannot exhaust the stack; GDAL uses the same limit. The encoder refuses deeper
	// geometries too, so that whatever it writes the decoder reads.
	maxDepth = 32
)

// envelopeDoubles returns the number of doubles in the envelope for a valid contents
// indicator code 0-4.
func envelopeDoubles(code int) int {
	switch code {
	case 0:
		return 0
	case 1:
		return 4
	case 2, 3:
		return 6
	}
	return 8
}

// WKB geometry type codes (ISO 13249-3; OGC 06-103r4 for 1-7).
const (
	wkbPoint              = 1
	wkbLineString         = 2
	wkbPolygon            = 3
	wkbMultiPoint         = 4
	wkbMultiLineString    = 5
	wkbMultiPolygon       = 6
	wkbGeometryCollection = 7
)

// wkbTypeName names the ISO type codes 0-17, for errors about the ones orb cannot hold,
// and returns "" for the others.
func wkbTypeName(t uint32) string {
	names := [...]string{"Geometry", "Point", "LineString", "Polygon", "MultiPoint",
		"MultiLineString", "MultiPolygon", "GeometryCollection", "CircularString",
		"CompoundCurve", "CurvePolygon", "MultiCurve", "MultiSurface", "Curve", "Surface",
		"PolyhedralSurface", "TIN", "Triangle"}
	if t < uint32(len(names)) {
		return names[t]
	}
	return ""
}

// nanBits is the quiet NaN the GeoPackage requires for the coordinates of an empty point
// (0x7ff8000000000000; little-endian 00 00 00 00 00 00 f8 7f).
const nanBits = 0x7ff8000000000000

func isEmptyPoint(p orb.Point) bool {
	return math.IsNaN(p[0]) && math.IsNaN(p[1])
}

// envelope accumulates [minx, maxx, miny, maxy]. The encoder and blobEnvelope share it,
// so that the envelope written and the envelope computed from WKB agree.
type envelope struct {
	minX, maxX, minY, maxY float64
	points                 int
}

func newEnvelope() envelope {
	return envelope{minX: math.Inf(1), maxX: math.Inf(-1), minY: math.Inf(1), maxY: math.Inf(-1)}
}

// add extends e by (x, y), unless either is NaN: (NaN, NaN) is an empty point, and half
// a coordinate has no place in an envelope.
func (e *envelope) add(x, y float64) {
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

func (e *envelope) empty() bool { return e.points == 0 }

func (e *envelope) bound() orb.Bound {
	return orb.Bound{Min: orb.Point{e.minX, e.minY}, Max: orb.Point{e.maxX, e.maxY}}
}

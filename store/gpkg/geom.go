package gpkg

// GeoPackageBinary geometry blobs (OGC 12-128r18, clause 2.1.3): an 8-byte header
// ("GP", version, flags, srs_id), an optional envelope, then ISO WKB. orb is 2D, so Z
// and M ordinates are read and dropped, never written.
//
// The encoder writes its WKB with spatial/wkb rather than orb/encoding/wkb: for 2D
// geometries both produce the same bytes (type codes 1-7, ISO and OGC WKB agree), but
// orb's writes through an io.Writer into a bytes.Buffer it allocates per call, while
// appending into the caller's buffer allocates nothing. BenchmarkAppendGeometry and
// BenchmarkAppendGeometryOrbWKB in geom_test.go measure the two on a 20-vertex polygon.
// The envelope, written or computed from a blob's WKB, is a wkb.Extent either way, so
// that the two agree.

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

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
	"encoding/binary"
	"fmt"
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

// encodeGeometry returns g as a GeoPackage geometry blob for srs srsID: magic "GP",
// version 0, flags with the little-endian bit set, the int32 srs_id, an envelope, then
// little-endian ISO WKB. nil g returns nil, nil (a NULL geometry); a typed nil slice
// (orb.LineString(nil)) is an empty geometry of its type.
//
// The envelope is [minx, maxx, miny, maxy] (indicator 1) for every non-empty geometry
// except a Point, which gets none (indicator 0), as GDAL writes them: a point's envelope
// is the point itself, readers get it from the 16 bytes of WKB as fast as from the
// header, and storing it would more than double a point row (29 bytes against 61).
// An empty geometry, one without a coordinate whose x and y are both numbers, has the
// empty flag set and no envelope. An empty point is orb.Point{NaN, NaN}, written with
// the quiet NaN the GeoPackage requires; orb has no other way to say it.
//
// orb.Ring and orb.Bound are written as Polygons. Coordinates are written as given, not
// refused: a coordinate with a NaN is left out of the envelope (the R-tree would refuse
// it), infinities are kept.
func encodeGeometry(g orb.Geometry, srsID int32) ([]byte, error) {
	if g == nil {
		return nil, nil
	}
	return appendGeometry(nil, g, srsID)
}

// appendGeometry is encodeGeometry appending to dst, so that a writer can reuse one
// buffer for every row: it allocates only when dst lacks the capacity. nil g appends
// nothing and returns dst (the caller writes NULL). On error dst is returned unchanged.
func appendGeometry(dst []byte, g orb.Geometry, srsID int32) ([]byte, error) {
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
			flags |= flagEmpty // as envelope.add decides
		}
		dst = grow(dst, headerLen+n)
		dst = append(dst, 'G', 'P', 0, flags)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(srsID))
		return appendPoint(dst, p), nil
	}

	dst = grow(dst, headerLen+32+n)
	dst = append(dst, 'G', 'P', 0, flagLittleEndian|envelopeXY<<1)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(srsID))
	envAt := len(dst)
	dst = dst[:envAt+32]
	e := newEnvelope()
	dst = appendWKB(dst, g, &e)
	if e.empty() {
		// Rare: move the WKB over the envelope slot rather than walk the geometry twice.
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

// grow makes room for n more bytes in one allocation.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	nb := make([]byte, len(b), len(b)+n)
	copy(nb, b)
	return nb
}

// wkbSize returns the length of g's WKB, and refuses what the WKB cannot say or the
// decoder would not read back: nil collection members, counts beyond uint32, nesting
// deeper than maxDepth.
func wkbSize(g orb.Geometry, depth int) (int, error) {
	switch g.(type) {
	case orb.MultiPoint, orb.MultiLineString, orb.MultiPolygon, orb.Collection:
		if depth >= maxDepth {
			return 0, fmt.Errorf("gpkg geometry: encoding: collections nested deeper than %d", maxDepth)
		}
	}
	switch g := g.(type) {
	case orb.Point:
		return 21, nil
	case orb.MultiPoint:
		if err := checkCount(len(g), "multipoint"); err != nil {
			return 0, err
		}
		return 9 + 21*len(g), nil
	case orb.LineString:
		if err := checkCount(len(g), "linestring"); err != nil {
			return 0, err
		}
		return 9 + 16*len(g), nil
	case orb.Ring:
		if err := checkCount(len(g), "ring"); err != nil {
			return 0, err
		}
		return 9 + 4 + 16*len(g), nil
	case orb.Polygon:
		return polygonSize(g)
	case orb.Bound:
		return 9 + 4 + 16*5, nil
	case orb.MultiLineString:
		if err := checkCount(len(g), "multilinestring"); err != nil {
			return 0, err
		}
		n := 9
		for _, ls := range g {
			if err := checkCount(len(ls), "linestring"); err != nil {
				return 0, err
			}
			n += 9 + 16*len(ls)
		}
		return n, nil
	case orb.MultiPolygon:
		if err := checkCount(len(g), "multipolygon"); err != nil {
			return 0, err
		}
		n := 9
		for _, p := range g {
			m, err := polygonSize(p)
			if err != nil {
				return 0, err
			}
			n += m
		}
		return n, nil
	case orb.Collection:
		if err := checkCount(len(g), "collection"); err != nil {
			return 0, err
		}
		n := 9
		for i, m := range g {
			if m == nil {
				return 0, fmt.Errorf("gpkg geometry: encoding: collection member %d is nil", i)
			}
			k, err := wkbSize(m, depth+1)
			if err != nil {
				return 0, err
			}
			n += k
		}
		return n, nil
	}
	return 0, fmt.Errorf("gpkg geometry: encoding: unsupported geometry type %T", g)
}

func polygonSize(p orb.Polygon) (int, error) {
	if err := checkCount(len(p), "polygon"); err != nil {
		return 0, err
	}
	n := 9
	for _, r := range p {
		if err := checkCount(len(r), "ring"); err != nil {
			return 0, err
		}
		n += 4 + 16*len(r)
	}
	return n, nil
}

func checkCount(n int, what string) error {
	if uint64(n) > math.MaxUint32 {
		return fmt.Errorf("gpkg geometry: encoding: %s of %d parts does not fit WKB's uint32 count", what, n)
	}
	return nil
}

// appendWKB appends g as little-endian WKB, extending e by its coordinates. g has passed
// wkbSize, and dst has the capacity for it.
func appendWKB(dst []byte, g orb.Geometry, e *envelope) []byte {
	switch g := g.(type) {
	case orb.Point:
		e.add(g[0], g[1])
		return appendPoint(dst, g)
	case orb.MultiPoint:
		dst = appendTypeCount(dst, wkbMultiPoint, len(g))
		for _, p := range g {
			e.add(p[0], p[1])
			dst = appendPoint(dst, p)
		}
		return dst
	case orb.LineString:
		dst = appendTypeCount(dst, wkbLineString, len(g))
		return appendPoints(dst, g, e)
	case orb.Ring:
		return appendPolygon(dst, orb.Polygon{g}, e)
	case orb.Polygon:
		return appendPolygon(dst, g, e)
	case orb.Bound:
		return appendPolygon(dst, g.ToPolygon(), e)
	case orb.MultiLineString:
		dst = appendTypeCount(dst, wkbMultiLineString, len(g))
		for _, ls := range g {
			dst = appendTypeCount(dst, wkbLineString, len(ls))
			dst = appendPoints(dst, ls, e)
		}
		return dst
	case orb.MultiPolygon:
		dst = appendTypeCount(dst, wkbMultiPolygon, len(g))
		for _, p := range g {
			dst = appendPolygon(dst, p, e)
		}
		return dst
	case orb.Collection:
		dst = appendTypeCount(dst, wkbGeometryCollection, len(g))
		for _, m := range g {
			dst = appendWKB(dst, m, e)
		}
		return dst
	}
	panic(fmt.Sprintf("gpkg geometry: appendWKB got %T, which wkbSize refuses", g))
}

func appendTypeCount(dst []byte, typ uint32, n int) []byte {
	dst = append(dst, 1) // little-endian
	dst = binary.LittleEndian.AppendUint32(dst, typ)
	return binary.LittleEndian.AppendUint32(dst, uint32(n))
}

// appendPoint appends a WKB Point; an empty one gets the quiet NaN the GeoPackage
// prescribes, whatever the NaN payloads in p.
func appendPoint(dst []byte, p orb.Point) []byte {
	dst = append(dst, 1)
	dst = binary.LittleEndian.AppendUint32(dst, wkbPoint)
	if isEmptyPoint(p) {
		dst = binary.LittleEndian.AppendUint64(dst, nanBits)
		return binary.LittleEndian.AppendUint64(dst, nanBits)
	}
	dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(p[0]))
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(p[1]))
}

func appendPoints(dst []byte, ps []orb.Point, e *envelope) []byte {
	for _, p := range ps {
		e.add(p[0], p[1])
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(p[0]))
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(p[1]))
	}
	return dst
}

func appendPolygon(dst []byte, p orb.Polygon, e *envelope) []byte {
	dst = appendTypeCount(dst, wkbPolygon, len(p))
	for _, r := range p {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(r)))
		dst = appendPoints(dst, r, e)
	}
	return dst
}

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

// decodeGeometry parses a GeoPackage geometry blob: either byte order in the header and
// in each WKB geometry, any envelope contents indicator 0-4 (the envelope is skipped, not
// checked), ISO WKB with Z, M and ZM types (1001-3007) and EWKB-style Z/M/SRID flags,
// Z and M ordinates dropped. An ExtendedGeoPackageBinary, a type orb cannot hold
// (curves, surfaces), nesting deeper than 32 levels and bytes after the WKB are errors
// that say what is wrong and where.
//
// The empty flag is not trusted over the WKB: an empty blob decodes to the empty
// geometry its WKB holds (an empty point to orb.Point{NaN, NaN}). nil or empty b is an
// error: a NULL geometry is the caller's to recognise before calling.
func decodeGeometry(b []byte) (g orb.Geometry, srsID int32, err error) {
	h, err := parseHeader(b)
	if err != nil {
		return nil, 0, err
	}
	r := wkbReader{b: b, off: h.wkbAt}
	g, err = r.geometry(0)
	if err != nil {
		return nil, 0, err
	}
	if r.off != len(b) {
		return nil, 0, fmt.Errorf("gpkg geometry: %d bytes follow the WKB geometry that ends at byte %d", len(b)-r.off, r.off)
	}
	return g, h.srsID, nil
}

// blobEnvelope returns the envelope of blob b: from its header when the header has one
// without NaN, else computed from the WKB without allocating. empty reports an empty
// geometry (the empty flag, or WKB without a coordinate free of NaN), and then env is
// zero; a non-empty env holds no NaN. It backs ST_MinX, ST_MaxX, ST_MinY, ST_MaxY and ST_IsEmpty, which the R-tree
// triggers call on every insert and update: garbage returns an error, never a panic.
// When the header has an envelope the WKB after it is not validated.
func blobEnvelope(b []byte) (env orb.Bound, empty bool, err error) {
	h, err := parseHeader(b)
	if err != nil {
		return orb.Bound{}, false, err
	}
	if h.empty {
		return orb.Bound{}, true, nil
	}
	// The spec allows an all-NaN envelope for an empty geometry; a NaN anywhere makes the
	// header useless for an R-tree, so the WKB decides then.
	if h.envCode != 0 && !math.IsNaN(h.env[0]+h.env[1]+h.env[2]+h.env[3]) {
		return orb.Bound{Min: orb.Point{h.env[0], h.env[2]}, Max: orb.Point{h.env[1], h.env[3]}}, false, nil
	}
	r := wkbReader{b: b, off: h.wkbAt}
	e := newEnvelope()
	if err := r.scan(0, &e); err != nil {
		return orb.Bound{}, false, err
	}
	if e.empty() {
		return orb.Bound{}, true, nil
	}
	return e.bound(), false, nil
}

// header is a parsed GeoPackageBinaryHeader.
type header struct {
	srsID   int32
	empty   bool
	envCode int        // 0-4
	env     [4]float64 // minx, maxx, miny, maxy when envCode > 0
	wkbAt   int        // offset of the WKB
}

func parseHeader(b []byte) (header, error) {
	var h header
	if len(b) < headerLen {
		return h, fmt.Errorf("gpkg geometry: blob of %d bytes is shorter than its 8-byte header", len(b))
	}
	if b[0] != 'G' || b[1] != 'P' {
		return h, fmt.Errorf("gpkg geometry: blob starts with %#x, not the magic \"GP\"", b[:2])
	}
	if b[2] != 0 {
		return h, fmt.Errorf("gpkg geometry: header version %d, want 0 (GeoPackage 1)", b[2])
	}
	flags := b[3]
	if flags&flagReserved != 0 {
		return h, fmt.Errorf("gpkg geometry: flags %#08b set the reserved bits 6-7", flags)
	}
	if flags&flagExtended != 0 {
		return h, fmt.Errorf("gpkg geometry: flags %#08b mark an ExtendedGeoPackageBinary, which is not supported", flags)
	}
	h.envCode = int(flags&flagEnvelopeMask) >> 1
	if h.envCode > 4 {
		return h, fmt.Errorf("gpkg geometry: envelope contents indicator %d is invalid (0-4)", h.envCode)
	}
	h.empty = flags&flagEmpty != 0
	big := flags&flagLittleEndian == 0
	h.srsID = int32(u32(b[4:], big))
	h.wkbAt = headerLen + 8*envelopeDoubles(h.envCode)
	if len(b) < h.wkbAt {
		return h, fmt.Errorf("gpkg geometry: blob of %d bytes is shorter than its %d-byte header with envelope %d", len(b), h.wkbAt, h.envCode)
	}
	if h.envCode != 0 {
		for i := range h.env {
			h.env[i] = math.Float64frombits(u64(b[headerLen+8*i:], big))
		}
	}
	return h, nil
}

func u32(b []byte, big bool) uint32 {
	if big {
		return binary.BigEndian.Uint32(b)
	}
	return binary.LittleEndian.Uint32(b)
}

func u64(b []byte, big bool) uint64 {
	if big {
		return binary.BigEndian.Uint64(b)
	}
	return binary.LittleEndian.Uint64(b)
}

// wkbReader reads WKB from b at off; offsets in its errors count from the start of the
// blob, header included.
type wkbReader struct {
	b   []byte
	off int
}

// wkbHead is what precedes a WKB geometry's body.
type wkbHead struct {
	at   int // offset of the byte-order byte
	big  bool
	typ  uint32 // 1-7
	dims int    // ordinates per coordinate: 2, 3 or 4
}

func (r *wkbReader) errorf(at int, format string, args ...any) error {
	return fmt.Errorf("gpkg geometry: WKB at byte %d: %s", at, fmt.Sprintf(format, args...))
}

// head reads a byte order and a geometry type, ISO (1000s for Z, M, ZM) or EWKB
// (high-bit flags, with an SRID to skip).
func (r *wkbReader) head() (wkbHead, error) {
	h := wkbHead{at: r.off}
	if len(r.b)-r.off < 5 {
		return h, r.errorf(r.off, "%d bytes left, too few for a byte order and a geometry type", len(r.b)-r.off)
	}
	switch r.b[r.off] {
	case 0:
		h.big = true
	case 1:
	default:
		return h, r.errorf(r.off, "byte order %d is neither 0 (big-endian) nor 1 (little-endian)", r.b[r.off])
	}
	t := u32(r.b[r.off+1:], h.big)
	r.off += 5
	h.dims = 2
	if t&0xe0000000 != 0 {
		if t&0x80000000 != 0 {
			h.dims++
		}
		if t&0x40000000 != 0 {
			h.dims++
		}
		if t&0x20000000 != 0 {
			if len(r.b)-r.off < 4 {
				return h, r.errorf(h.at, "EWKB type %#x announces an SRID but the blob ends", t)
			}
			r.off += 4
		}
		if t&0x1fffffff > wkbGeometryCollection {
			return h, r.errorf(h.at, "EWKB type %#x: base type %d is not one of 1-7", t, t&0x1fffffff)
		}
		t &= 0x1fffffff
	} else {
		switch t / 1000 {
		case 0:
		case 1, 2:
			h.dims = 3
		case 3:
			h.dims = 4
		default:
			return h, r.errorf(h.at, "unknown geometry type %d", t)
		}
		t %= 1000
	}
	if t < wkbPoint || t > wkbGeometryCollection {
		if name := wkbTypeName(t); name != "" {
			return h, r.errorf(h.at, "geometry type %d (%s) is not supported: orb has only the types 1-7", t, name)
		}
		return h, r.errorf(h.at, "unknown geometry type %d", t)
	}
	h.typ = t
	return h, nil
}

// count reads a uint32 count of items at least min bytes long each, and checks that the
// rest of the blob can hold them before anything is allocated for them.
func (r *wkbReader) count(big bool, min int, what string) (int, error) {
	if len(r.b)-r.off < 4 {
		return 0, r.errorf(r.off, "blob ends before the number of %s", what)
	}
	n := u32(r.b[r.off:], big)
	at := r.off
	r.off += 4
	if uint64(n)*uint64(min) > uint64(len(r.b)-r.off) {
		return 0, r.errorf(at, "%d %s cannot fit in the %d bytes left", n, what, len(r.b)-r.off)
	}
	return int(n), nil
}

func (r *wkbReader) geometry(depth int) (orb.Geometry, error) {
	h, err := r.head()
	if err != nil {
		return nil, err
	}
	return r.body(h, depth)
}

// body reads the geometry h introduces.
func (r *wkbReader) body(h wkbHead, depth int) (orb.Geometry, error) {
	switch h.typ {
	case wkbPoint:
		if len(r.b)-r.off < 8*h.dims {
			return nil, r.errorf(h.at, "point needs %d bytes, %d left", 8*h.dims, len(r.b)-r.off)
		}
		return r.point(h), nil
	case wkbLineString:
		return r.points(h, "points")
	case wkbPolygon:
		return r.polygon(h)
	}
	if depth >= maxDepth {
		return nil, r.errorf(h.at, "collections nested deeper than %d", maxDepth)
	}
	switch h.typ {
	case wkbMultiPoint:
		n, err := r.count(h.big, 5+8*2, "points")
		if err != nil {
			return nil, err
		}
		mp := make(orb.MultiPoint, 0, n)
		for range n {
			m, err := r.member(wkbPoint)
			if err != nil {
				return nil, err
			}
			if len(r.b)-r.off < 8*m.dims {
				return nil, r.errorf(m.at, "point needs %d bytes, %d left", 8*m.dims, len(r.b)-r.off)
			}
			mp = append(mp, r.point(m))
		}
		return mp, nil
	case wkbMultiLineString:
		n, err := r.count(h.big, 9, "linestrings")
		if err != nil {
			return nil, err
		}
		mls := make(orb.MultiLineString, 0, n)
		for range n {
			m, err := r.member(wkbLineString)
			if err != nil {
				return nil, err
			}
			ls, err := r.points(m, "points")
			if err != nil {
				return nil, err
			}
			mls = append(mls, ls)
		}
		return mls, nil
	case wkbMultiPolygon:
		n, err := r.count(h.big, 9, "polygons")
		if err != nil {
			return nil, err
		}
		mp := make(orb.MultiPolygon, 0, n)
		for range n {
			m, err := r.member(wkbPolygon)
			if err != nil {
				return nil, err
			}
			p, err := r.polygon(m)
			if err != nil {
				return nil, err
			}
			mp = append(mp, p)
		}
		return mp, nil
	default: // wkbGeometryCollection
		n, err := r.count(h.big, 9, "geometries")
		if err != nil {
			return nil, err
		}
		c := make(orb.Collection, 0, n)
		for range n {
			m, err := r.geometry(depth + 1)
			if err != nil {
				return nil, err
			}
			c = append(c, m)
		}
		return c, nil
	}
}

// member reads the head of a multi-geometry's member, which must be of type want.
func (r *wkbReader) member(want uint32) (wkbHead, error) {
	m, err := r.head()
	if err != nil {
		return m, err
	}
	if m.typ != want {
		return m, r.errorf(m.at, "a %s member is a %s", wkbTypeName(want+3), wkbTypeName(m.typ))
	}
	return m, nil
}

// point reads one coordinate; the caller has checked the length.
func (r *wkbReader) point(h wkbHead) orb.Point {
	p := orb.Point{
		math.Float64frombits(u64(r.b[r.off:], h.big)),
		math.Float64frombits(u64(r.b[r.off+8:], h.big)),
	}
	r.off += 8 * h.dims
	return p
}

// points reads a counted coordinate sequence: a LineString's body or a ring.
func (r *wkbReader) points(h wkbHead, what string) (orb.LineString, error) {
	n, err := r.count(h.big, 8*h.dims, what)
	if err != nil {
		return nil, err
	}
	ls := make(orb.LineString, n)
	step := 8 * h.dims
	for i := range ls {
		ls[i] = orb.Point{
			math.Float64frombits(u64(r.b[r.off:], h.big)),
			math.Float64frombits(u64(r.b[r.off+8:], h.big)),
		}
		r.off += step
	}
	return ls, nil
}

func (r *wkbReader) polygon(h wkbHead) (orb.Polygon, error) {
	n, err := r.count(h.big, 4, "rings")
	if err != nil {
		return nil, err
	}
	p := make(orb.Polygon, 0, n)
	for range n {
		ring, err := r.points(h, "ring points")
		if err != nil {
			return nil, err
		}
		p = append(p, orb.Ring(ring))
	}
	return p, nil
}

// scan walks one WKB geometry like geometry does, without building it, extending e by
// its coordinates.
func (r *wkbReader) scan(depth int, e *envelope) error {
	h, err := r.head()
	if err != nil {
		return err
	}
	return r.scanBody(h, depth, e)
}

func (r *wkbReader) scanBody(h wkbHead, depth int, e *envelope) error {
	switch h.typ {
	case wkbPoint:
		if len(r.b)-r.off < 8*h.dims {
			return r.errorf(h.at, "point needs %d bytes, %d left", 8*h.dims, len(r.b)-r.off)
		}
		p := r.point(h)
		e.add(p[0], p[1])
		return nil
	case wkbLineString:
		return r.scanPoints(h, "points", e)
	case wkbPolygon:
		n, err := r.count(h.big, 4, "rings")
		if err != nil {
			return err
		}
		for range n {
			if err := r.scanPoints(h, "ring points", e); err != nil {
				return err
			}
		}
		return nil
	}
	if depth >= maxDepth {
		return r.errorf(h.at, "collections nested deeper than %d", maxDepth)
	}
	var (
		n    int
		err  error
		want uint32
	)
	switch h.typ {
	case wkbMultiPoint:
		n, err = r.count(h.big, 5+8*2, "points")
		want = wkbPoint
	case wkbMultiLineString:
		n, err = r.count(h.big, 9, "linestrings")
		want = wkbLineString
	case wkbMultiPolygon:
		n, err = r.count(h.big, 9, "polygons")
		want = wkbPolygon
	default:
		n, err = r.count(h.big, 9, "geometries")
	}
	if err != nil {
		return err
	}
	for range n {
		m, err := r.head()
		if err != nil {
			return err
		}
		if want != 0 && m.typ != want {
			return r.errorf(m.at, "a %s member is a %s", wkbTypeName(want+3), wkbTypeName(m.typ))
		}
		if err := r.scanBody(m, depth+1, e); err != nil {
			return err
		}
	}
	return nil
}

func (r *wkbReader) scanPoints(h wkbHead, what string, e *envelope) error {
	n, err := r.count(h.big, 8*h.dims, what)
	if err != nil {
		return err
	}
	step := 8 * h.dims
	for range n {
		e.add(math.Float64frombits(u64(r.b[r.off:], h.big)), math.Float64frombits(u64(r.b[r.off+8:], h.big)))
		r.off += step
	}
	return nil
}

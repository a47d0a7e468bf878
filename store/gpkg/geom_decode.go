package gpkg

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial/wkb"
)

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
	e := wkb.NewExtent()
	if err := r.scan(0, &e); err != nil {
		return orb.Bound{}, false, err
	}
	if e.Empty() {
		return orb.Bound{}, true, nil
	}
	return e.Bound(), false, nil
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
		return r.multiPoint(h)
	case wkbMultiLineString:
		return r.multiLineString(h)
	case wkbMultiPolygon:
		return r.multiPolygon(h)
	default: // wkbGeometryCollection
		return r.collection(h, depth)
	}
}

// multiPoint reads a MultiPoint's members, each a whole WKB Point.
func (r *wkbReader) multiPoint(h wkbHead) (orb.Geometry, error) {
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
}

// multiLineString reads a MultiLineString's members, each a whole WKB LineString.
func (r *wkbReader) multiLineString(h wkbHead) (orb.Geometry, error) {
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
}

// multiPolygon reads a MultiPolygon's members, each a whole WKB Polygon.
func (r *wkbReader) multiPolygon(h wkbHead) (orb.Geometry, error) {
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
}

// collection reads a GeometryCollection's members, each one level deeper than depth.
func (r *wkbReader) collection(h wkbHead, depth int) (orb.Geometry, error) {
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
func (r *wkbReader) scan(depth int, e *wkb.Extent) error {
	h, err := r.head()
	if err != nil {
		return err
	}
	return r.scanBody(h, depth, e)
}

func (r *wkbReader) scanBody(h wkbHead, depth int, e *wkb.Extent) error {
	switch h.typ {
	case wkbPoint:
		if len(r.b)-r.off < 8*h.dims {
			return r.errorf(h.at, "point needs %d bytes, %d left", 8*h.dims, len(r.b)-r.off)
		}
		p := r.point(h)
		e.Add(p[0], p[1])
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

func (r *wkbReader) scanPoints(h wkbHead, what string, e *wkb.Extent) error {
	n, err := r.count(h.big, 8*h.dims, what)
	if err != nil {
		return err
	}
	step := 8 * h.dims
	for range n {
		e.Add(math.Float64frombits(u64(r.b[r.off:], h.big)), math.Float64frombits(u64(r.b[r.off+8:], h.big)))
		r.off += step
	}
	return nil
}

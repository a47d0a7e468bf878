package geojson

import (
	"errors"
	"fmt"
	"slices"

	"github.com/paulmach/orb"
)

// geomKind is a geometry "type".
type geomKind uint8

const (
	kindNone geomKind = iota // absent or null
	kindPoint
	kindMultiPoint
	kindLineString
	kindMultiLineString
	kindPolygon
	kindMultiPolygon
	kindCollection
	kindOther // not supported
)

var kindNames = [...]string{
	kindPoint:           "Point",
	kindMultiPoint:      "MultiPoint",
	kindLineString:      "LineString",
	kindMultiLineString: "MultiLineString",
	kindPolygon:         "Polygon",
	kindMultiPolygon:    "MultiPolygon",
	kindCollection:      "GeometryCollection",
}

func geomKindOf(b []byte) geomKind {
	for k, name := range kindNames {
		if name != "" && string(b) == name {
			return geomKind(k)
		}
	}
	if len(b) == 0 {
		return kindNone
	}
	return kindOther
}

// hasCoordinates tells whether the kind is read from "coordinates".
func (k geomKind) hasCoordinates() bool { return k >= kindPoint && k <= kindMultiPolygon }

// geomResult is a decoded member of "geometries".
type geomResult struct {
	g   orb.Geometry
	err error
}

// semantic is a problem with coordinates that are well-formed JSON; it
// refuses the feature unless a syntax error follows.
type semantic struct{ err error }

func (e semantic) Error() string { return e.err.Error() }

// geometry decodes the geometry value at pos, GeometryCollections nested
// level deep. gerr refuses the feature; err is final.
func (r *Reader) geometry(level int) (g orb.Geometry, gerr, err error) {
	s := &r.s
	switch c := s.buf[s.pos]; c {
	case 'n':
		_, err := s.literal()
		return nil, nil, err
	case '{':
	default:
		if err := s.skip(false); err != nil {
			return nil, nil, err
		}
		return nil, fmt.Errorf("geojson geometry: %w", typeErr(kindOf(c), "Go value of type geojson.rawGeometry")), nil
	}
	if err := s.open(); err != nil {
		return nil, nil, err
	}
	gm := geomMembers{coordStart: -1}
	for first := true; ; first = false {
		more, err := s.next(first, '}')
		if err != nil {
			return nil, nil, err
		}
		if !more {
			break
		}
		k, err := s.key(&r.scratch)
		if err != nil {
			return nil, nil, err
		}
		field := geometryField(k)
		if err := s.colon(); err != nil {
			return nil, nil, err
		}
		if err := r.geometryMember(field, level, &gm); err != nil {
			return nil, nil, err
		}
	}
	if gerr := gm.typeRefusal(); gerr != nil {
		return nil, gerr, nil
	}
	if gm.kind == kindCollection {
		g, gerr := collection(gm.members, level)
		return g, gerr, nil
	}
	cg, cerr, err := r.geometryCoordinates(&gm)
	if err != nil {
		return nil, nil, err
	}
	if cerr != nil {
		return nil, fmt.Errorf("geojson %s coordinates: %w", gm.typ, cerr), nil
	}
	r.vertices += len(r.pts)
	return cg, nil, nil
}

// geomMembers is what the members of a geometry object said, as they are
// read in any order.
type geomMembers struct {
	kind       geomKind
	typ        string // kind's name, or the unsupported type
	terr       error  // the first member of the wrong JSON type
	coordStart int64  // where "coordinates" starts, -1 without them
	coordKind  geomKind
	cg         orb.Geometry // the coordinates decoded as coordKind, if any
	cerr       error
	members    []geomResult // of "geometries"
}

// geometryField names the member of a geometry key k stands for, "" for
// others.
func geometryField(k []byte) string {
	for _, f := range [...]string{"type", "coordinates", "geometries"} {
		if foldEq(k, f) {
			return f
		}
	}
	return ""
}

// geomType is the kind a "type" string names, and the name the messages
// give it: the kind's, or the unsupported type as written.
func geomType(b []byte) (geomKind, string) {
	kind := geomKindOf(b)
	if kind == kindOther {
		return kind, string(b)
	}
	return kind, kindNames[min(kind, kindCollection)]
}

// geomMemberTarget is the Go type encoding/json named when a geometry's
// field held a value of the wrong JSON type.
func geomMemberTarget(field string) string {
	if field == "geometries" {
		return "Go struct field rawGeometry.geometries of type []json.RawMessage"
	}
	return "Go struct field rawGeometry.type of type string"
}

// geometryMember reads the value of the geometry member field at pos into
// gm. Coordinates are decoded as the type read so far says; a "type" that
// follows them has them decoded again.
func (r *Reader) geometryMember(field string, level int, gm *geomMembers) error {
	s := &r.s
	c := s.buf[s.pos]
	switch {
	case field == "type" && c == '"':
		b, err := s.str(&r.scratch)
		if err != nil {
			return err
		}
		gm.kind, gm.typ = geomType(b)
		return nil
	case field == "type" && c != 'n', field == "geometries" && c != 'n' && c != '[':
		if gm.terr == nil {
			gm.terr = typeErr(kindOf(c), geomMemberTarget(field))
		}
		return s.skip(false)
	case field == "coordinates":
		gm.coordStart, gm.coordKind = s.offset(), kindNone
		if !gm.kind.hasCoordinates() {
			return s.skip(false)
		}
		gm.coordKind = gm.kind
		var err error
		gm.cg, gm.cerr, err = r.coordinates(gm.kind, true)
		return err
	case field == "geometries" && c == '[':
		var err error
		gm.members, err = r.collectionMembers(level)
		return err
	case field == "geometries":
		gm.members = nil
		_, err := s.literal()
		return err
	}
	return s.skip(false)
}

// typeRefusal is why a geometry's members refuse it before its coordinates
// are looked at: a member of the wrong JSON type, no type, or a type that is
// not supported.
func (gm *geomMembers) typeRefusal() error {
	switch {
	case gm.terr != nil:
		return fmt.Errorf("geojson geometry: %w", gm.terr)
	case gm.kind == kindNone:
		return errors.New("geojson geometry without a type")
	case gm.kind == kindOther:
		return fmt.Errorf("geojson geometry type %q not supported", gm.typ)
	}
	return nil
}

// collection makes a GeometryCollection nested level deep of its decoded
// members. Nesting past maxCollectionDepth, a refused member and a null one
// refuse it.
func collection(members []geomResult, level int) (orb.Geometry, error) {
	if level >= maxCollectionDepth {
		return nil, errors.New("geojson geometry: GeometryCollection nested too deep")
	}
	c := make(orb.Collection, 0, len(members))
	for _, m := range members {
		if m.err != nil {
			return nil, m.err
		}
		if m.g == nil {
			return nil, errors.New("geojson geometry: null member of a GeometryCollection")
		}
		c = append(c, m.g)
	}
	return c, nil
}

// geometryCoordinates returns the geometry of gm's coordinates: as decoded,
// or decoded again when "type" followed "coordinates" (or changed); they are
// still in the window. cerr refuses the feature.
func (r *Reader) geometryCoordinates(gm *geomMembers) (g orb.Geometry, cerr, err error) {
	switch {
	case gm.coordStart < 0:
		return nil, errors.New("missing"), nil
	case gm.coordKind != gm.kind:
		s := &r.s
		pos, depth := s.pos, s.depth
		s.pos = int(gm.coordStart - s.base)
		g, cerr, err = r.coordinates(gm.kind, false)
		s.pos, s.depth = pos, depth
		return g, cerr, err
	}
	return gm.cg, gm.cerr, nil
}

// collectionMembers decodes the "geometries" array at pos.
func (r *Reader) collectionMembers(level int) ([]geomResult, error) {
	s := &r.s
	if err := s.open(); err != nil {
		return nil, err
	}
	ms := []geomResult{}
	for first := true; ; first = false {
		more, err := s.next(first, ']')
		if err != nil {
			return nil, err
		}
		if !more {
			return ms, nil
		}
		g, gerr, err := r.geometry(level + 1)
		if err != nil {
			return nil, err
		}
		ms = append(ms, geomResult{g, gerr})
	}
}

// coordinates decodes the "coordinates" value at pos as kind. cerr refuses
// the feature. With check, the value has not been checked yet: after a
// problem it is checked to the end, and a syntax error there is final.
func (r *Reader) coordinates(kind geomKind, check bool) (g orb.Geometry, cerr, err error) {
	s := &r.s
	start, depth := s.offset(), s.depth
	if check && depth+4 > s.maxDepth {
		// Let skip judge the nesting, then decode what it passed.
		if err := s.skip(false); err != nil {
			return nil, nil, err
		}
		pos := s.pos
		s.pos, s.depth = int(start-s.base), depth
		g, cerr, err = r.coordinates(kind, false)
		s.pos, s.depth = pos, depth
		return g, cerr, err
	}
	cp := coordParser{r: r, start: start}
	g, err = cp.geometry(kind)
	if err == nil {
		return g, nil, nil
	}
	// Declared here, as errors.As moves it to the heap.
	var sem semantic
	if errors.As(err, &sem) {
		cerr, err = sem.err, nil
		if check {
			s.pos, s.depth = int(start-s.base), depth
			err = s.skip(false)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	return g, cerr, nil
}

// coordParser reads the nested number arrays of "coordinates" into points
// without building interface values. Its problems with well-formed JSON are
// semantic errors, with the messages and offsets (from start) the reader
// always gave; it may take a syntax error for one too, which the caller's
// check then finds.
type coordParser struct {
	r     *Reader
	start int64
}

func (p *coordParser) at() int64 { return p.r.s.offset() - p.start }

func (p *coordParser) geometry(kind geomKind) (orb.Geometry, error) {
	r := p.r
	r.pts, r.ends, r.polys = r.pts[:0], r.ends[:0], r.polys[:0]
	switch kind {
	case kindPoint:
		if err := p.position(); err != nil {
			return nil, err
		}
		return r.pts[0], nil
	case kindMultiPoint:
		if err := p.positions(); err != nil {
			return nil, err
		}
		return orb.MultiPoint(r.line(r.points(), 0, len(r.pts))), nil
	case kindLineString:
		if err := p.positions(); err != nil {
			return nil, err
		}
		if len(r.pts) < 2 {
			return nil, semantic{fmt.Errorf("LineString with %d positions", len(r.pts))}
		}
		return orb.LineString(r.line(r.points(), 0, len(r.pts))), nil
	case kindMultiLineString:
		if err := p.lines(); err != nil {
			return nil, err
		}
		all := r.points()
		ml := make(orb.MultiLineString, len(r.ends))
		a := 0
		for i, b := range r.ends {
			ml[i] = r.line(all, a, b)
			a = b
		}
		return ml, nil
	case kindPolygon:
		if err := p.lines(); err != nil {
			return nil, err
		}
		return r.polygon(r.points(), 0, len(r.ends)), nil
	default: // kindMultiPolygon
		if err := p.polygons(); err != nil {
			return nil, err
		}
		all := r.points()
		mp := make(orb.MultiPolygon, len(r.polys))
		a := 0
		for i, b := range r.polys {
			mp[i] = r.polygon(all, a, b)
			a = b
		}
		return mp, nil
	}
}

// points copies the points read into one new slice, or after ReuseFeatures into the
// feature's arena.
func (r *Reader) points() []orb.Point {
	if len(r.pts) == 0 {
		return nil
	}
	if !r.reuse {
		return append([]orb.Point(nil), r.pts...)
	}
	a := len(r.ptArena)
	r.ptArena = append(r.ptArena, r.pts...)
	return r.ptArena[a:len(r.ptArena):len(r.ptArena)]
}

// line returns all[a:b], nil when empty, as the reader always made them.
func (r *Reader) line(all []orb.Point, a, b int) []orb.Point {
	if a == b {
		return nil
	}
	return all[a:b:b]
}

// polygon returns the polygon of lines i to j.
func (r *Reader) polygon(all []orb.Point, i, j int) orb.Polygon {
	var p orb.Polygon
	if r.reuse && j > i { // an empty polygon stays an empty slice, not nil: they hash apart
		a, b := len(r.ringArena), len(r.ringArena)+j-i
		r.ringArena = slices.Grow(r.ringArena, j-i)[:b]
		p = r.ringArena[a:b:b]
	} else {
		p = make(orb.Polygon, j-i)
	}
	a := 0
	if i > 0 {
		a = r.ends[i-1]
	}
	for k := i; k < j; k++ {
		p[k-i] = r.line(all, a, r.ends[k])
		a = r.ends[k]
	}
	return p
}

func (p *coordParser) open() error {
	s := &p.r.s
	c, err := s.peek()
	if err != nil {
		return err
	}
	if c != '[' {
		return semantic{fmt.Errorf("want %q at offset %d, got %q", '[', p.at(), c)}
	}
	s.pos++
	return nil
}

// next reports whether another element follows in an array whose opening
// bracket or previous element was read, consuming the comma or the closing
// bracket.
func (p *coordParser) next(first bool) (bool, error) {
	s := &p.r.s
	if s.pos < s.end {
		switch s.buf[s.pos] {
		case ']':
			s.pos++
			return false, nil
		case ',':
			if !first {
				s.pos++
				return true, nil
			}
		}
	}
	c, err := s.peek()
	if err != nil {
		return false, err
	}
	switch {
	case c == ']':
		s.pos++
		return false, nil
	case first:
		return true, nil
	case c == ',':
		s.pos++
		return true, nil
	}
	return false, s.syntaxErr("after an array element")
}

func (p *coordParser) number() (float64, error) {
	s := &p.r.s
	c, err := s.peek()
	if err != nil {
		return 0, err
	}
	if c != '-' && (c < '0' || c > '9') {
		return 0, semantic{fmt.Errorf("want a number at offset %d", p.at())}
	}
	f, ok, num, err := s.float()
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, semantic{fmt.Errorf("bad number %q", num)}
	}
	return f, nil
}

// position reads [x, y, ...] and keeps x and y (swapped with SwapXY).
func (p *coordParser) position() error {
	if max := p.r.opts.Limits.Vertices; len(p.r.pts)+p.r.vertices >= max {
		return p.r.s.tooLarge("max_vertices", int64(max))
	}
	// Fast path: [x,y] with simple numbers, in the window.
	s := &p.r.s
	if b, i, end := s.buf, s.pos, s.end; i < end && b[i] == '[' {
		if x, j, ok := fastFloat(b, i+1, end); ok && b[j] == ',' {
			if y, k, ok := fastFloat(b, j+1, end); ok && b[k] == ']' {
				s.pos = k + 1
				if p.r.opts.SwapXY {
					x, y = y, x
				}
				p.r.pts = append(p.r.pts, orb.Point{x, y})
				return nil
			}
		}
	}
	if err := p.open(); err != nil {
		return err
	}
	var pt orb.Point
	n := 0
	for {
		more, err := p.next(n == 0)
		if err != nil {
			return err
		}
		if !more {
			break
		}
		f, err := p.number()
		if err != nil {
			return err
		}
		if n < 2 {
			pt[n] = f
		}
		n++
	}
	if n < 2 {
		return semantic{fmt.Errorf("position with %d values, want at least 2", n)}
	}
	if p.r.opts.SwapXY {
		pt[0], pt[1] = pt[1], pt[0]
	}
	p.r.pts = append(p.r.pts, pt)
	return nil
}

func (p *coordParser) positions() error {
	if err := p.open(); err != nil {
		return err
	}
	for first := true; ; first = false {
		more, err := p.next(first)
		if err != nil || !more {
			return err
		}
		if err := p.position(); err != nil {
			return err
		}
	}
}

func (p *coordParser) lines() error {
	if err := p.open(); err != nil {
		return err
	}
	for first := true; ; first = false {
		more, err := p.next(first)
		if err != nil || !more {
			return err
		}
		if err := p.positions(); err != nil {
			return err
		}
		p.r.ends = append(p.r.ends, len(p.r.pts))
	}
}

func (p *coordParser) polygons() error {
	if err := p.open(); err != nil {
		return err
	}
	for first := true; ; first = false {
		more, err := p.next(first)
		if err != nil || !more {
			return err
		}
		if err := p.lines(); err != nil {
			return err
		}
		p.r.polys = append(p.r.polys, len(p.r.ends))
	}
}

package gml

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
)

// absent marks a property that is left out of Properties.
type absentT struct{}

var absent any = absentT{}

// addProp sets a property, turning a repeated name into a []any.
func addProp(m map[string]any, name string, v any) {
	old, ok := m[name]
	if !ok {
		m[name] = v
		return
	}
	if l, ok := old.(multiValue); ok {
		m[name] = append(l, v)
		return
	}
	m[name] = multiValue{old, v}
}

// multiValue is the []any of a repeated property; its own type tells a
// repetition from a first value that was already a list (never the case
// for GML text, but cheap to be sure).
type multiValue = []any

func isGeometry(local string) bool {
	switch local {
	case "Point", "LineString", "LinearRing", "Curve", "Polygon", "Surface", "PolyhedralSurface",
		"TriangulatedSurface", "Tin", "MultiPoint", "MultiLineString", "MultiCurve", "CompositeCurve",
		"MultiSurface", "CompositeSurface", "MultiPolygon", "MultiGeometry", "Envelope", "Box",
		"OrientableCurve", "OrientableSurface", "Ring", "Solid", "MultiSolid", "CompositeSolid", "GeometricComplex":
		return true
	}
	return isCurveSegment(local)
}

// isCurveSegment lists the GML curve forms that are not straight lines.
func isCurveSegment(local string) bool {
	switch local {
	case "Arc", "ArcString", "ArcByBulge", "ArcStringByBulge", "ArcByCenterPoint", "Circle",
		"CircleByCenterPoint", "CubicSpline", "BSpline", "Bezier", "Clothoid", "OffsetCurve",
		"Geodesic", "GeodesicString":
		return true
	}
	return false
}

// property reads a feature property whose start element was just returned.
// It returns the value (absent to leave it out), or the geometry with its
// effective srsName. Errors other than final ones (r.err) refuse the feature.
func (r *Reader) property(start xml.StartElement, featSRS string) (any, orb.Geometry, string, error) {
	depth := len(r.stack)
	isNil, href := false, ""
	for _, a := range start.Attr {
		switch a.Name.Local {
		case "nil":
			if a.Name.Space != "" && (a.Value == "true" || a.Value == "1") {
				isNil = true
			}
		case "href":
			if a.Name.Space != "" {
				href = a.Value
			}
		}
	}
	r.text = r.text[:0]
	hasChild := false
	var g orb.Geometry
	srs := ""
	var flat []byte
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return nil, nil, "", err
		}
		switch tok.kind {
		case tkText:
			t := tok.text
			if !hasChild {
				r.text = append(r.text, t...)
			}
		case tkStart:
			t := tok.start
			hasChild = true
			if g == nil && r.resolve(t.Name.Space) == nsGML && isGeometry(t.Name.Local) {
				r.geomSRS = ""
				gg, err := r.geometry(t, 0)
				if err != nil {
					return nil, nil, "", err
				}
				srs = firstNonEmpty(r.geomSRS, featSRS, r.collSRS, r.opts.DefaultSRS)
				if r.latLon(srs) {
					gg = spatial.SwapXY(gg)
				}
				g = gg
				continue
			}
			var err2 error
			flat, err2 = r.flatten(flat)
			if err2 != nil {
				return nil, nil, "", err2
			}
		}
	}
	switch {
	case g != nil:
		return absent, g, srs, nil
	case hasChild:
		if s := strings.TrimSpace(string(flat)); s != "" {
			return s, nil, "", nil
		}
		return absent, nil, "", nil
	case isNil:
		return nil, nil, "", nil
	case len(r.text) == 0 && href != "":
		return href, nil, "", nil
	}
	return string(r.text), nil, "", nil
}

// latLon is spatial.LatLonOrder for the response's WFS version, memoised
// for the last srsName: responses repeat one srsName on every geometry.
func (r *Reader) latLon(srs string) bool {
	if srs != r.memoSRS || !r.memoSet {
		r.memoSRS, r.memoSwap, r.memoSet = srs, spatial.LatLonOrder(srs, r.opts.WFSVersion), true
	}
	return r.memoSwap
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// flatten consumes the element whose start was just returned and appends
// the trimmed texts of its descendants, space separated, skipping GML
// geometry inside.
func (r *Reader) flatten(dst []byte) ([]byte, error) {
	depth := len(r.stack)
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return dst, err
		}
		switch tok.kind {
		case tkText:
			t := tok.text
			if s := bytes.TrimSpace(t); len(s) > 0 {
				if len(dst) > 0 {
					dst = append(dst, ' ')
				}
				dst = append(dst, s...)
			}
		case tkStart:
			t := tok.start
			if r.resolve(t.Name.Space) == nsGML && isGeometry(t.Name.Local) {
				if err := r.skip(); err != nil {
					return dst, err
				}
			}
		}
	}
	return dst, nil
}

// geomAttrs applies the srsName and srsDimension of a geometry element.
func (r *Reader) geomAttrs(start xml.StartElement, dim int) int {
	for _, a := range start.Attr {
		switch a.Name.Local {
		case "srsName":
			if r.geomSRS == "" {
				r.geomSRS = strings.TrimSpace(a.Value)
			}
		case "srsDimension", "dimension":
			if n, err := strconv.Atoi(strings.TrimSpace(a.Value)); err == nil && n > 0 && n < 100 {
				dim = n
			}
		}
	}
	return dim
}

func errCurve(local string) error {
	return fmt.Errorf("curve segment gml:%s: %w", local, spatial.ErrCurve)
}

// geometry reads the GML geometry element whose start was just returned.
// dim is the inherited srsDimension, 0 when none.
func (r *Reader) geometry(start xml.StartElement, dim int) (orb.Geometry, error) {
	dim = r.geomAttrs(start, dim)
	local := start.Name.Local
	switch local {
	case "Point":
		pts, err := r.positions(r.pts[:0], dim)
		r.pts = pts[:0]
		if err != nil {
			return nil, err
		}
		if len(pts) != 1 {
			return nil, fmt.Errorf("gml:Point with %d positions", len(pts))
		}
		return pts[0], nil
	case "LineString", "LinearRing":
		pts, err := r.positions(r.pts[:0], dim)
		r.pts = pts[:0]
		if err != nil {
			return nil, err
		}
		if len(pts) < 2 {
			return nil, fmt.Errorf("gml:%s with %d positions", local, len(pts))
		}
		return orb.LineString(clonePoints(pts)), nil
	case "Curve":
		return r.curve(dim)
	case "Ring":
		ring, err := r.ring(start, dim)
		if err != nil {
			return nil, err
		}
		return orb.LineString(ring), nil
	case "Polygon", "PolygonPatch", "Rectangle", "Triangle":
		return r.polygon(dim)
	case "Surface", "PolyhedralSurface", "TriangulatedSurface", "Tin":
		return r.surface(dim)
	case "MultiPoint", "MultiLineString", "MultiCurve", "CompositeCurve", "MultiSurface",
		"CompositeSurface", "MultiPolygon", "MultiGeometry":
		return r.multi(local, dim)
	case "Envelope", "Box":
		return r.envelope(dim)
	}
	if isCurveSegment(local) {
		return nil, errCurve(local)
	}
	return nil, fmt.Errorf("geometry gml:%s not supported", local)
}

func clonePoints(pts []orb.Point) []orb.Point {
	out := make([]orb.Point, len(pts))
	copy(out, pts)
	return out
}

// positions reads the coordinates of a Point, LineString, LinearRing or
// LineStringSegment whose start was just returned, appending them to dst.
func (r *Reader) positions(dst []orb.Point, dim int) ([]orb.Point, error) {
	depth := len(r.stack)
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return dst, err
		}
		if tok.kind != tkStart {
			continue
		}
		t := tok.start
		if r.resolve(t.Name.Space) != nsGML {
			if err := r.skip(); err != nil {
				return dst, err
			}
			continue
		}
		switch t.Name.Local {
		case "pos":
			text, err := r.readText()
			if err != nil {
				return dst, err
			}
			p, err := parsePos(text)
			if err != nil {
				return dst, err
			}
			dst = append(dst, p)
		case "posList":
			d := dim
			count := -1
			for _, a := range t.Attr {
				switch a.Name.Local {
				case "srsDimension", "dimension":
					if n, err := strconv.Atoi(strings.TrimSpace(a.Value)); err == nil && n > 0 && n < 100 {
						d = n
					}
				case "count":
					if n, err := strconv.Atoi(strings.TrimSpace(a.Value)); err == nil && n > 0 {
						count = n
					}
				}
			}
			text, err := r.readText()
			if err != nil {
				return dst, err
			}
			dst, err = parsePosList(dst, text, d, count)
			if err != nil {
				return dst, err
			}
		case "coordinates":
			cs, ts, dec := ",", " ", "."
			for _, a := range t.Attr {
				switch a.Name.Local {
				case "cs":
					cs = a.Value
				case "ts":
					ts = a.Value
				case "decimal":
					dec = a.Value
				}
			}
			text, err := r.readText()
			if err != nil {
				return dst, err
			}
			dst, err = parseCoordinates(dst, text, cs, ts, dec)
			if err != nil {
				return dst, err
			}
		case "coord":
			p, err := r.coord()
			if err != nil {
				return dst, err
			}
			dst = append(dst, p)
		case "pointProperty", "pointRep":
			n := len(dst)
			dst, err = r.pointIn(dst, dim)
			if err != nil {
				return dst, err
			}
			if len(dst) != n+1 {
				return dst, fmt.Errorf("gml:%s without a gml:Point", t.Name.Local)
			}
		default:
			if err := r.skip(); err != nil {
				return dst, err
			}
		}
	}
	return dst, nil
}

// pointIn reads a pointProperty whose start was just returned and appends
// the position of the gml:Point inside.
func (r *Reader) pointIn(dst []orb.Point, dim int) ([]orb.Point, error) {
	depth := len(r.stack)
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return dst, err
		}
		if tok.kind != tkStart {
			continue
		}
		t := tok.start
		if t.Name.Local != "Point" || r.resolve(t.Name.Space) != nsGML {
			if err := r.skip(); err != nil {
				return dst, err
			}
			continue
		}
		dim := r.geomAttrs(t, dim)
		n := len(dst)
		dst, err = r.positions(dst, dim)
		if err != nil {
			return dst, err
		}
		if len(dst) != n+1 {
			return dst, fmt.Errorf("gml:Point with %d positions", len(dst)-n)
		}
	}
	return dst, nil
}

// coord reads a GML 2 gml:coord with gml:X and gml:Y children.
func (r *Reader) coord() (orb.Point, error) {
	depth := len(r.stack)
	var p orb.Point
	seen := 0
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return p, err
		}
		if tok.kind != tkStart {
			continue
		}
		t := tok.start
		i := -1
		switch t.Name.Local {
		case "X":
			i = 0
		case "Y":
			i = 1
		}
		text, err := r.readText()
		if err != nil {
			return p, err
		}
		if i < 0 {
			continue
		}
		f, err := strconv.ParseFloat(string(bytes.TrimSpace(text)), 64)
		if err != nil {
			return p, fmt.Errorf("gml:coord: %q is not a number", text)
		}
		p[i] = f
		seen |= 1 << i
	}
	if seen != 3 {
		return p, errors.New("gml:coord without both X and Y")
	}
	return p, nil
}

// readText reads the character data of the element whose start was just
// returned, into r.text (valid until the next readText).
func (r *Reader) readText() ([]byte, error) {
	depth := len(r.stack)
	r.text = r.text[:0]
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return nil, err
		}
		switch tok.kind {
		case tkText:
			t := tok.text
			r.text = append(r.text, t...)
		case tkStart:
			if err := r.skip(); err != nil {
				return nil, err
			}
		}
	}
	return r.text, nil
}

// curve reads a gml:Curve: its LineStringSegments joined into one
// LineString. Any other segment kind is a curve and refused.
func (r *Reader) curve(dim int) (orb.Geometry, error) {
	pts, err := r.segments(r.pts[:0], dim)
	r.pts = pts[:0]
	if err != nil {
		return nil, err
	}
	if len(pts) < 2 {
		return nil, fmt.Errorf("gml:Curve with %d positions", len(pts))
	}
	return orb.LineString(clonePoints(pts)), nil
}

// segments reads the content of a Curve whose start was just returned.
func (r *Reader) segments(dst []orb.Point, dim int) ([]orb.Point, error) {
	depth := len(r.stack)
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return dst, err
		}
		if tok.kind != tkStart {
			continue
		}
		t := tok.start
		switch {
		case t.Name.Local == "segments":
			// descend: its children are the segments
		case t.Name.Local == "LineStringSegment":
			d := r.geomAttrs(t, dim)
			n := len(dst)
			seg, err := r.positions(dst, d)
			if err != nil {
				return seg, err
			}
			dst = joinSegment(seg, n)
		case isCurveSegment(t.Name.Local):
			return dst, errCurve(t.Name.Local)
		default:
			if err := r.skip(); err != nil {
				return dst, err
			}
		}
	}
	return dst, nil
}

// joinSegment drops the first position of the segment starting at dst[n]
// when it repeats the end of the previous one.
func joinSegment(dst []orb.Point, n int) []orb.Point {
	if n > 0 && len(dst) > n && dst[n-1] == dst[n] {
		copy(dst[n:], dst[n+1:])
		dst = dst[:len(dst)-1]
	}
	return dst
}

// polygon reads a Polygon or a polygon-like patch whose start was just
// returned.
func (r *Reader) polygon(dim int) (orb.Polygon, error) {
	depth := len(r.stack)
	var poly orb.Polygon
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return nil, err
		}
		if tok.kind != tkStart {
			continue
		}
		t := tok.start
		switch t.Name.Local {
		case "exterior", "outerBoundaryIs", "interior", "innerBoundaryIs":
			outer := t.Name.Local == "exterior" || t.Name.Local == "outerBoundaryIs"
			if outer != (len(poly) == 0) {
				return nil, fmt.Errorf("gml:%s out of place in polygon", t.Name.Local)
			}
			ring, err := r.boundary(dim)
			if err != nil {
				return nil, err
			}
			poly = append(poly, ring)
		default:
			if err := r.skip(); err != nil {
				return nil, err
			}
		}
	}
	if len(poly) == 0 {
		return nil, errors.New("gml polygon without exterior ring")
	}
	return poly, nil
}

// boundary reads an exterior/interior whose start was just returned.
func (r *Reader) boundary(dim int) (orb.Ring, error) {
	depth := len(r.stack)
	var ring orb.Ring
	found := false
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return nil, err
		}
		if tok.kind != tkStart {
			continue
		}
		t := tok.start
		if found {
			return nil, fmt.Errorf("polygon boundary with more than one ring")
		}
		switch t.Name.Local {
		case "LinearRing":
			d := r.geomAttrs(t, dim)
			pts, err := r.positions(r.pts[:0], d)
			r.pts = pts[:0]
			if err != nil {
				return nil, err
			}
			ring = orb.Ring(clonePoints(pts))
		case "Ring":
			ring, err = r.ring(t, dim)
			if err != nil {
				return nil, err
			}
		default:
			if isCurveSegment(t.Name.Local) {
				return nil, errCurve(t.Name.Local)
			}
			return nil, fmt.Errorf("polygon boundary gml:%s not supported", t.Name.Local)
		}
		found = true
	}
	if !found {
		return nil, errors.New("empty polygon boundary")
	}
	if len(ring) < 4 {
		return nil, fmt.Errorf("polygon ring with %d positions, want at least 4", len(ring))
	}
	return ring, nil
}

// ring reads a gml:Ring (straight curve members joined) whose start was
// just returned.
func (r *Reader) ring(start xml.StartElement, dim int) (orb.Ring, error) {
	dim = r.geomAttrs(start, dim)
	depth := len(r.stack)
	var pts []orb.Point
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return nil, err
		}
		if tok.kind != tkStart || tok.start.Name.Local == "curveMember" {
			continue
		}
		t := tok.start
		var g orb.Geometry
		switch t.Name.Local {
		case "LineString", "Curve", "LinearRing":
			g, err = r.geometry(t, dim)
			if err != nil {
				return nil, err
			}
		default:
			if isCurveSegment(t.Name.Local) {
				return nil, errCurve(t.Name.Local)
			}
			return nil, fmt.Errorf("gml:Ring member gml:%s not supported", t.Name.Local)
		}
		n := len(pts)
		pts = append(pts, g.(orb.LineString)...)
		pts = joinSegment(pts, n)
	}
	return orb.Ring(pts), nil
}

// surface reads a Surface (or PolyhedralSurface, TriangulatedSurface) whose
// start was just returned: one patch gives a Polygon, more a MultiPolygon.
func (r *Reader) surface(dim int) (orb.Geometry, error) {
	depth := len(r.stack)
	var mp orb.MultiPolygon
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return nil, err
		}
		if tok.kind != tkStart {
			continue
		}
		t := tok.start
		switch t.Name.Local {
		case "patches", "polygonPatches", "trianglePatches":
		case "PolygonPatch", "Rectangle", "Triangle":
			p, err := r.polygon(r.geomAttrs(t, dim))
			if err != nil {
				return nil, err
			}
			mp = append(mp, p)
		default:
			if isCurveSegment(t.Name.Local) {
				return nil, errCurve(t.Name.Local)
			}
			return nil, fmt.Errorf("surface patch gml:%s not supported", t.Name.Local)
		}
	}
	switch len(mp) {
	case 0:
		return nil, errors.New("gml:Surface without patches")
	case 1:
		return mp[0], nil
	}
	return mp, nil
}

// multi reads an aggregate or composite whose start was just returned.
func (r *Reader) multi(local string, dim int) (orb.Geometry, error) {
	depth := len(r.stack)
	var parts []orb.Geometry
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return nil, err
		}
		if tok.kind != tkStart {
			continue
		}
		t := tok.start
		if len(r.stack) == depth+1 {
			// A member element (pointMember, surfaceMembers ...) holds the
			// parts; anything else here (gml:name ...) is skipped.
			if !strings.HasSuffix(t.Name.Local, "Member") && !strings.HasSuffix(t.Name.Local, "Members") {
				if err := r.skip(); err != nil {
					return nil, err
				}
			}
			continue
		}
		if r.resolve(t.Name.Space) != nsGML || !isGeometry(t.Name.Local) {
			return nil, fmt.Errorf("gml:%s member gml:%s not supported", local, t.Name.Local)
		}
		g, err := r.geometry(t, dim)
		if err != nil {
			return nil, err
		}
		parts = append(parts, g)
	}
	return assemble(local, parts)
}

func assemble(local string, parts []orb.Geometry) (orb.Geometry, error) {
	bad := func(g orb.Geometry) error {
		return fmt.Errorf("gml:%s holding a %s", local, g.GeoJSONType())
	}
	switch local {
	case "MultiPoint":
		mp := make(orb.MultiPoint, 0, len(parts))
		for _, g := range parts {
			p, ok := g.(orb.Point)
			if !ok {
				return nil, bad(g)
			}
			mp = append(mp, p)
		}
		return mp, nil
	case "MultiLineString", "MultiCurve":
		ml := make(orb.MultiLineString, 0, len(parts))
		for _, g := range parts {
			switch g := g.(type) {
			case orb.LineString:
				ml = append(ml, g)
			case orb.MultiLineString:
				ml = append(ml, g...)
			default:
				return nil, bad(g)
			}
		}
		return ml, nil
	case "CompositeCurve":
		var ls orb.LineString
		for _, g := range parts {
			l, ok := g.(orb.LineString)
			if !ok {
				return nil, bad(g)
			}
			n := len(ls)
			ls = append(ls, l...)
			ls = joinSegment(ls, n)
		}
		if len(ls) < 2 {
			return nil, errors.New("empty gml:CompositeCurve")
		}
		return ls, nil
	case "MultiSurface", "MultiPolygon", "CompositeSurface":
		mp := make(orb.MultiPolygon, 0, len(parts))
		for _, g := range parts {
			switch g := g.(type) {
			case orb.Polygon:
				mp = append(mp, g)
			case orb.MultiPolygon:
				mp = append(mp, g...)
			default:
				return nil, bad(g)
			}
		}
		return mp, nil
	}
	return orb.Collection(parts), nil
}

// envelope reads an Envelope (lowerCorner/upperCorner) or a GML 2 Box and
// returns it as a polygon.
func (r *Reader) envelope(dim int) (orb.Geometry, error) {
	pts, err := r.cornerPositions(r.pts[:0], dim)
	r.pts = pts[:0]
	if err != nil {
		return nil, err
	}
	if len(pts) != 2 {
		return nil, fmt.Errorf("envelope with %d corners", len(pts))
	}
	b := orb.Bound{Min: pts[0], Max: pts[0]}.Extend(pts[1])
	return b.ToPolygon(), nil
}

// cornerPositions is positions that also takes lowerCorner/upperCorner.
func (r *Reader) cornerPositions(dst []orb.Point, dim int) ([]orb.Point, error) {
	depth := len(r.stack)
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return dst, err
		}
		if tok.kind != tkStart {
			continue
		}
		t := tok.start
		switch t.Name.Local {
		case "lowerCorner", "upperCorner", "pos":
			text, err := r.readText()
			if err != nil {
				return dst, err
			}
			p, err := parsePos(text)
			if err != nil {
				return dst, err
			}
			dst = append(dst, p)
		case "coordinates":
			cs, ts, dec := attrValue(t.Attr, "cs"), attrValue(t.Attr, "ts"), attrValue(t.Attr, "decimal")
			text, err := r.readText()
			if err != nil {
				return dst, err
			}
			dst, err = parseCoordinates(dst, text, cmp.Or(cs, ","), cmp.Or(ts, " "), cmp.Or(dec, "."))
			if err != nil {
				return dst, err
			}
		default:
			if err := r.skip(); err != nil {
				return dst, err
			}
		}
	}
	return dst, nil
}

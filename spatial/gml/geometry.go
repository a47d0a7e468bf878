package gml

import (
	"encoding/xml"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
)

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
		return orb.LineString(r.clonePoints(pts)), nil
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

// clonePoints copies pts into a new slice, or after ReuseFeatures into the feature's arena.
func (r *Reader) clonePoints(pts []orb.Point) []orb.Point {
	if !r.reuse || len(pts) == 0 { // empty stays an empty slice, not nil: they hash apart
		out := make([]orb.Point, len(pts))
		copy(out, pts)
		return out
	}
	a := len(r.ptArena)
	r.ptArena = append(r.ptArena, pts...)
	return r.ptArena[a:len(r.ptArena):len(r.ptArena)]
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
	return orb.LineString(r.clonePoints(pts)), nil
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

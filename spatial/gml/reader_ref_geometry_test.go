package gml

// The reference reader's geometries: the dispatch on the element, curves,
// aggregates and envelopes (see reader_ref_test.go).

import (
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"

	"github.com/paulmach/orb"
)

// geomAttrs applies the srsName and srsDimension of a geometry element.
func (r *refReader) geomAttrs(start xml.StartElement, dim int) int {
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

// geometry reads the GML geometry element whose start was just returned.
// dim is the inherited srsDimension, 0 when none.
func (r *refReader) geometry(start xml.StartElement, dim int) (orb.Geometry, error) {
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

// curve reads a gml:Curve: its LineStringSegments joined into one
// LineString. Any other segment kind is a curve and refused.
func (r *refReader) curve(dim int) (orb.Geometry, error) {
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
func (r *refReader) segments(dst []orb.Point, dim int) ([]orb.Point, error) {
	depth := len(r.stack)
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return dst, err
		}
		t, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
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

// multi reads an aggregate or composite whose start was just returned.
func (r *refReader) multi(local string, dim int) (orb.Geometry, error) {
	depth := len(r.stack)
	var parts []orb.Geometry
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return nil, err
		}
		t, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
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

// envelope reads an Envelope (lowerCorner/upperCorner) or a GML 2 Box and
// returns it as a polygon.
func (r *refReader) envelope(dim int) (orb.Geometry, error) {
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

// clonePoints copies pts into a new slice, as the reference reader always did.
func clonePoints(pts []orb.Point) []orb.Point {
	out := make([]orb.Point, len(pts))
	copy(out, pts)
	return out
}

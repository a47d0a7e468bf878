// Polygons and surfaces: polygon boundaries, LinearRing and Ring rings, and
// the patches of a Surface.

package gml

import (
	"encoding/xml"
	"errors"
	"fmt"

	"github.com/paulmach/orb"
)

// polygon reads a Polygon or a polygon-like patch whose start was just
// returned.
func (r *Reader) polygon(dim int) (orb.Polygon, error) {
	depth := len(r.stack)
	var poly orb.Polygon
	a := len(r.ringArena) // after ReuseFeatures, the rings go there: no polygon is read inside one
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
			if r.reuse {
				r.ringArena = append(r.ringArena, ring)
				poly = r.ringArena[a:len(r.ringArena):len(r.ringArena)]
			} else {
				poly = append(poly, ring)
			}
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
			ring = orb.Ring(r.clonePoints(pts))
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

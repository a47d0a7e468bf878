package esrijson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
)

// geometry is an Esri JSON geometry of any type; which members are set says which type.
type geometry struct {
	X          any           `json:"x"`
	Y          any           `json:"y"`
	Points     [][]float64   `json:"points"`
	Paths      [][][]float64 `json:"paths"`
	Rings      [][][]float64 `json:"rings"`
	CurvePaths any           `json:"curvePaths"`
	CurveRings any           `json:"curveRings"`
	XMin       *float64      `json:"xmin"`
}

// Geometry converts one Esri JSON geometry: a point, multipoint, polyline, polygon or
// envelope. Null, empty and NaN points are a nil geometry. A feature with more than
// maxVertices coordinates (0: the default) is a *spatial.TooLargeError; curves wrap
// spatial.ErrCurve.
func Geometry(raw []byte, maxVertices int) (orb.Geometry, error) {
	if maxVertices <= 0 {
		maxVertices = spatial.DefaultVertices
	}
	raw = bytes.TrimSpace(raw)
	if noGeometry(raw) {
		return nil, nil
	}
	var g geometry
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, fmt.Errorf("geometry: %w", err)
	}
	if g.CurvePaths != nil || g.CurveRings != nil {
		return nil, fmt.Errorf("geometry with curvePaths/curveRings (asked with returnTrueCurves): %w", spatial.ErrCurve)
	}
	if g.vertices() > maxVertices {
		return nil, &spatial.TooLargeError{Limit: "max_vertices", Max: int64(maxVertices)}
	}
	switch {
	case g.Rings != nil:
		return polygon(g.Rings)
	case g.Paths != nil:
		return polyline(g.Paths)
	case g.Points != nil:
		return multipoint(g.Points)
	case g.XMin != nil:
		return envelope(raw)
	case g.X != nil || g.Y != nil:
		return xyPoint(g.X, g.Y)
	}
	return nil, nil // {"spatialReference":...} only: no geometry
}

// noGeometry tells whether the trimmed geometry member raw holds no geometry at all:
// absent, null or an empty object.
func noGeometry(raw []byte) bool {
	return len(raw) == 0 || bytes.Equal(raw, []byte("null")) || bytes.Equal(raw, []byte("{}"))
}

// vertices counts the coordinates of points, paths and rings, which the vertex limit
// bounds.
func (g *geometry) vertices() int {
	n := len(g.Points)
	for _, p := range g.Paths {
		n += len(p)
	}
	for _, r := range g.Rings {
		n += len(r)
	}
	return n
}

// multipoint converts the points of a multipoint; none is a nil geometry.
func multipoint(points [][]float64) (orb.Geometry, error) {
	mp := make(orb.MultiPoint, 0, len(points))
	for i, c := range points {
		p, err := point(c)
		if err != nil {
			return nil, fmt.Errorf("multipoint point %d: %w", i, err)
		}
		mp = append(mp, p)
	}
	if len(mp) == 0 {
		return nil, nil
	}
	return mp, nil
}

// envelope converts an envelope, which needs all four of xmin, ymin, xmax and ymax.
func envelope(raw []byte) (orb.Geometry, error) {
	var e struct{ XMin, YMin, XMax, YMax *float64 }
	if err := json.Unmarshal(raw, &e); err != nil || e.YMin == nil || e.XMax == nil || e.YMax == nil {
		return nil, errors.New("envelope without xmin, ymin, xmax and ymax")
	}
	b := orb.Bound{Min: orb.Point{*e.XMin, *e.YMin}, Max: orb.Point{*e.XMax, *e.YMax}}
	return b.ToPolygon(), nil
}

// xyPoint converts a point's x and y. Both NaN (as a number or "NaN"), and an x of
// null, are an empty point: a nil geometry.
func xyPoint(vx, vy any) (orb.Geometry, error) {
	x, okx := number(vx)
	y, oky := number(vy)
	if !okx || !oky {
		if isNaN(vx) || vx == nil {
			return nil, nil // an empty point
		}
		return nil, fmt.Errorf("point with x %v, y %v", vx, vy)
	}
	if math.IsNaN(x) || math.IsNaN(y) {
		return nil, nil
	}
	return orb.Point{x, y}, nil
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

func isNaN(v any) bool {
	s, ok := v.(string)
	return ok && (s == "NaN" || s == "nan")
}

// point takes x and y of [x, y(, z)(, m)].
func point(c []float64) (orb.Point, error) {
	if len(c) < 2 {
		return orb.Point{}, fmt.Errorf("coordinate with %d values", len(c))
	}
	return orb.Point{c[0], c[1]}, nil
}

func polyline(paths [][][]float64) (orb.Geometry, error) {
	var ml orb.MultiLineString
	for i, p := range paths {
		ls := make(orb.LineString, 0, len(p))
		for _, c := range p {
			pt, err := point(c)
			if err != nil {
				return nil, fmt.Errorf("path %d: %w", i, err)
			}
			ls = append(ls, pt)
		}
		if len(ls) == 0 {
			continue
		}
		if len(ls) < 2 {
			return nil, fmt.Errorf("path %d has one point", i)
		}
		ml = append(ml, ls)
	}
	switch len(ml) {
	case 0:
		return nil, nil
	case 1:
		return ml[0], nil
	}
	return ml, nil
}

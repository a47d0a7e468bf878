package geojson

import (
	"fmt"
	"math"
	"strconv"

	"github.com/paulmach/orb"
)

// AppendGeometry appends g as an RFC 7946 geometry object to dst; a nil g is null. Rings
// and bounds are written as polygons. Coordinates are written in full precision; a NaN or
// infinite one is an error (JSON has no such numbers).
func AppendGeometry(dst []byte, g orb.Geometry) ([]byte, error) {
	switch g := g.(type) {
	case nil:
		return append(dst, "null"...), nil
	case orb.Point:
		return coords(append(dst, `{"type":"Point","coordinates":`...), g)
	case orb.MultiPoint:
		return coords(append(dst, `{"type":"MultiPoint","coordinates":`...), g)
	case orb.LineString:
		return coords(append(dst, `{"type":"LineString","coordinates":`...), g)
	case orb.MultiLineString:
		return coords(append(dst, `{"type":"MultiLineString","coordinates":`...), g)
	case orb.Ring:
		return coords(append(dst, `{"type":"Polygon","coordinates":`...), orb.Polygon{g})
	case orb.Bound:
		return coords(append(dst, `{"type":"Polygon","coordinates":`...), g.ToPolygon())
	case orb.Polygon:
		return coords(append(dst, `{"type":"Polygon","coordinates":`...), g)
	case orb.MultiPolygon:
		return coords(append(dst, `{"type":"MultiPolygon","coordinates":`...), g)
	case orb.Collection:
		dst = append(dst, `{"type":"GeometryCollection","geometries":[`...)
		for i, m := range g {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = AppendGeometry(dst, m); err != nil {
				return nil, err
			}
		}
		return append(dst, "]}"...), nil
	}
	return nil, fmt.Errorf("geometry of type %T cannot be written as GeoJSON", g)
}

// coords appends the coordinate array of v and closes the geometry object.
func coords(dst []byte, v any) ([]byte, error) {
	dst, err := appendCoords(dst, v)
	if err != nil {
		return nil, err
	}
	return append(dst, '}'), nil
}

func appendCoords(dst []byte, v any) ([]byte, error) {
	var err error
	list := func(n int, at func(i int) any) ([]byte, error) {
		dst = append(dst, '[')
		for i := range n {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendCoords(dst, at(i)); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	}
	switch v := v.(type) {
	case orb.Point:
		for _, c := range v {
			if math.IsNaN(c) || math.IsInf(c, 0) {
				return nil, fmt.Errorf("coordinate %v is not a number JSON can hold", c)
			}
		}
		dst = append(dst, '[')
		dst = strconv.AppendFloat(dst, v[0], 'g', -1, 64)
		dst = append(dst, ',')
		dst = strconv.AppendFloat(dst, v[1], 'g', -1, 64)
		return append(dst, ']'), nil
	case orb.MultiPoint:
		return list(len(v), func(i int) any { return v[i] })
	case orb.LineString:
		return list(len(v), func(i int) any { return v[i] })
	case orb.Ring:
		return list(len(v), func(i int) any { return v[i] })
	case orb.MultiLineString:
		return list(len(v), func(i int) any { return v[i] })
	case orb.Polygon:
		return list(len(v), func(i int) any { return v[i] })
	case orb.MultiPolygon:
		return list(len(v), func(i int) any { return v[i] })
	}
	return nil, fmt.Errorf("coordinates of type %T", v)
}

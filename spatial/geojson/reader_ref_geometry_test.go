package geojson

// The reference reader's geometries and their coordinates (see reader_ref_test.go).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/paulmach/orb"
)

type rawGeometry struct {
	Type        string            `json:"type"`
	Coordinates json.RawMessage   `json:"coordinates"`
	Geometries  []json.RawMessage `json:"geometries"`
}

// refMaxCollectionDepth bounds nested GeometryCollections.
const refMaxCollectionDepth = 8

// refParseGeometry decodes a GeoJSON geometry object; null or absent is a nil
// geometry.
func refParseGeometry(raw json.RawMessage) (orb.Geometry, error) {
	return refParseGeometryDepth(raw, 0)
}

func refParseGeometryDepth(raw json.RawMessage, depth int) (orb.Geometry, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var g rawGeometry
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, fmt.Errorf("geojson geometry: %w", err)
	}
	if g.Type == "GeometryCollection" {
		if depth >= refMaxCollectionDepth {
			return nil, errors.New("geojson geometry: GeometryCollection nested too deep")
		}
		c := make(orb.Collection, 0, len(g.Geometries))
		for _, m := range g.Geometries {
			part, err := refParseGeometryDepth(m, depth+1)
			if err != nil {
				return nil, err
			}
			if part == nil {
				return nil, errors.New("geojson geometry: null member of a GeometryCollection")
			}
			c = append(c, part)
		}
		return c, nil
	}
	p := refCoordParser{b: g.Coordinates}
	var out orb.Geometry
	var err error
	switch g.Type {
	case "Point":
		out, err = p.position()
	case "MultiPoint":
		var ps []orb.Point
		ps, err = p.positions()
		out = orb.MultiPoint(ps)
	case "LineString":
		var ps []orb.Point
		ps, err = p.positions()
		if err == nil && len(ps) < 2 {
			err = fmt.Errorf("LineString with %d positions", len(ps))
		}
		out = orb.LineString(ps)
	case "MultiLineString":
		var ls [][]orb.Point
		ls, err = p.lines()
		ml := make(orb.MultiLineString, len(ls))
		for i, l := range ls {
			ml[i] = l
		}
		out = ml
	case "Polygon":
		var rs [][]orb.Point
		rs, err = p.lines()
		out = refToPolygon(rs)
	case "MultiPolygon":
		var ps [][][]orb.Point
		ps, err = p.polygons()
		mp := make(orb.MultiPolygon, len(ps))
		for i, rs := range ps {
			mp[i] = refToPolygon(rs)
		}
		out = mp
	case "":
		return nil, errors.New("geojson geometry without a type")
	default:
		return nil, fmt.Errorf("geojson geometry type %q not supported", g.Type)
	}
	if err == nil {
		err = p.end()
	}
	if err != nil {
		return nil, fmt.Errorf("geojson %s coordinates: %w", g.Type, err)
	}
	return out, nil
}

func refToPolygon(rs [][]orb.Point) orb.Polygon {
	p := make(orb.Polygon, len(rs))
	for i, r := range rs {
		p[i] = r
	}
	return p
}

// refCoordParser reads the nested number arrays of "coordinates" without
// building interface values.
type refCoordParser struct {
	b []byte
	i int
}

func (p *refCoordParser) skipSpace() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\n' || p.b[p.i] == '\t' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *refCoordParser) expect(c byte) error {
	p.skipSpace()
	if p.i >= len(p.b) {
		if len(p.b) == 0 {
			return errors.New("missing")
		}
		return fmt.Errorf("want %q, got end", c)
	}
	if p.b[p.i] != c {
		return fmt.Errorf("want %q at offset %d, got %q", c, p.i, p.b[p.i])
	}
	p.i++
	return nil
}

// next reports whether another element follows in an array whose opening
// bracket or previous element was read, consuming the comma or the closing
// bracket.
func (p *refCoordParser) next(first bool) (bool, error) {
	p.skipSpace()
	if p.i >= len(p.b) {
		return false, errors.New("unterminated array")
	}
	switch c := p.b[p.i]; {
	case c == ']':
		p.i++
		return false, nil
	case first:
		return true, nil
	case c == ',':
		p.i++
		return true, nil
	default:
		return false, fmt.Errorf("want ',' or ']' at offset %d, got %q", p.i, c)
	}
}

func (p *refCoordParser) number() (float64, error) {
	p.skipSpace()
	j := p.i
	for j < len(p.b) {
		c := p.b[j]
		if c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			j++
			continue
		}
		break
	}
	if j == p.i {
		return 0, fmt.Errorf("want a number at offset %d", p.i)
	}
	f, err := strconv.ParseFloat(string(p.b[p.i:j]), 64)
	if err != nil {
		return 0, fmt.Errorf("bad number %q", p.b[p.i:j])
	}
	p.i = j
	return f, nil
}

// position reads [x, y, ...] and keeps x and y.
func (p *refCoordParser) position() (orb.Point, error) {
	var pt orb.Point
	if err := p.expect('['); err != nil {
		return pt, err
	}
	n := 0
	for {
		more, err := p.next(n == 0)
		if err != nil {
			return pt, err
		}
		if !more {
			break
		}
		f, err := p.number()
		if err != nil {
			return pt, err
		}
		if n < 2 {
			pt[n] = f
		}
		n++
	}
	if n < 2 {
		return pt, fmt.Errorf("position with %d values, want at least 2", n)
	}
	return pt, nil
}

func (p *refCoordParser) positions() ([]orb.Point, error) {
	if err := p.expect('['); err != nil {
		return nil, err
	}
	var ps []orb.Point
	for {
		more, err := p.next(len(ps) == 0)
		if err != nil {
			return nil, err
		}
		if !more {
			return ps, nil
		}
		pt, err := p.position()
		if err != nil {
			return nil, err
		}
		ps = append(ps, pt)
	}
}

func (p *refCoordParser) lines() ([][]orb.Point, error) {
	if err := p.expect('['); err != nil {
		return nil, err
	}
	var ls [][]orb.Point
	for {
		more, err := p.next(len(ls) == 0)
		if err != nil {
			return nil, err
		}
		if !more {
			return ls, nil
		}
		l, err := p.positions()
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
	}
}

func (p *refCoordParser) polygons() ([][][]orb.Point, error) {
	if err := p.expect('['); err != nil {
		return nil, err
	}
	var ps [][][]orb.Point
	for {
		more, err := p.next(len(ps) == 0)
		if err != nil {
			return nil, err
		}
		if !more {
			return ps, nil
		}
		rs, err := p.lines()
		if err != nil {
			return nil, err
		}
		ps = append(ps, rs)
	}
}

func (p *refCoordParser) end() error {
	p.skipSpace()
	if p.i != len(p.b) {
		return fmt.Errorf("trailing data at offset %d", p.i)
	}
	return nil
}

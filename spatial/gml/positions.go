// The positions of a geometry: the pos, posList, coordinates, coord,
// pointProperty and envelope corner elements, whose text coords.go parses.

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
)

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
		if dst, err = r.position(dst, t, dim); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// position reads a GML element inside a geometry's coordinates whose start
// t was just returned, appending the positions it holds (none for an
// element that is not one of them, which is skipped).
func (r *Reader) position(dst []orb.Point, t xml.StartElement, dim int) ([]orb.Point, error) {
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
		if err := r.addVertices(1); err != nil {
			return dst, err
		}
		return append(dst, p), nil
	case "posList":
		return r.posList(dst, t.Attr, dim)
	case "coordinates":
		return r.coordinates(dst, t.Attr)
	case "coord":
		p, err := r.coord()
		if err != nil {
			return dst, err
		}
		if err := r.addVertices(1); err != nil {
			return dst, err
		}
		return append(dst, p), nil
	case "pointProperty", "pointRep":
		n := len(dst)
		var err error
		if dst, err = r.pointIn(dst, dim); err != nil {
			return dst, err
		}
		if len(dst) != n+1 {
			return dst, fmt.Errorf("gml:%s without a gml:Point", t.Name.Local)
		}
		return dst, nil
	}
	return dst, r.skip()
}

// posList reads a gml:posList whose start, with attrs, was just returned.
func (r *Reader) posList(dst []orb.Point, attrs []xml.Attr, dim int) ([]orb.Point, error) {
	d, count := posListShape(attrs, dim)
	text, err := r.readText()
	if err != nil {
		return dst, err
	}
	if err := r.vertexBudget(text, " ", max(d, 2)); err != nil {
		return dst, err
	}
	n := len(dst)
	dst, err = parsePosList(dst, text, d, count)
	if err != nil {
		return dst, err
	}
	return dst, r.addVertices(len(dst) - n)
}

// posListShape decides the dimension of a posList's positions and how many
// it declares (-1: not said) from its srsDimension (or GML 3.1's dimension)
// and count attributes. A dimension that is not a number from 1 to 99, or
// none, leaves dim, the geometry's; a count that is not positive is not
// said.
func posListShape(attrs []xml.Attr, dim int) (d, count int) {
	d, count = dim, -1
	for _, a := range attrs {
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
	return d, count
}

// coordinates reads a GML 2 gml:coordinates whose start, with attrs, was
// just returned.
func (r *Reader) coordinates(dst []orb.Point, attrs []xml.Attr) ([]orb.Point, error) {
	cs, ts, dec := coordinatesSeparators(attrs)
	text, err := r.readText()
	if err != nil {
		return dst, err
	}
	if err := r.vertexBudget(text, ts, 1); err != nil {
		return dst, err
	}
	n := len(dst)
	dst, err = parseCoordinates(dst, text, cs, ts, dec)
	if err != nil {
		return dst, err
	}
	return dst, r.addVertices(len(dst) - n)
}

// coordinatesSeparators returns the coordinate separator, tuple separator
// and decimal point of a gml:coordinates: its cs, ts and decimal
// attributes, as given (even empty), else ",", " " and ".".
func coordinatesSeparators(attrs []xml.Attr) (cs, ts, dec string) {
	cs, ts, dec = ",", " ", "."
	for _, a := range attrs {
		switch a.Name.Local {
		case "cs":
			cs = a.Value
		case "ts":
			ts = a.Value
		case "decimal":
			dec = a.Value
		}
	}
	return cs, ts, dec
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
//
// Coordinate text may be as long as the feature's remaining bytes allow
// (Limits.FeatureBytes), not just Limits.StringBytes.
func (r *Reader) readText() ([]byte, error) {
	depth := len(r.stack)
	r.text = r.text[:0]
	if r.featStart >= 0 {
		sc := r.sc
		sc.maxText, sc.maxLimit, sc.limitMax = max(r.lim.FeatureBytes-(sc.offset()-r.featStart), 1), "max_feature_bytes", r.lim.FeatureBytes
		defer func() {
			sc.maxText, sc.maxLimit, sc.limitMax = r.lim.StringBytes, "max_string_bytes", r.lim.StringBytes
		}()
	}
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return nil, err
		}
		switch tok.kind {
		case tkText:
			t := tok.text
			r.text = append(r.text, t...)
			if r.featStart < 0 && int64(len(r.text)) > r.lim.StringBytes {
				return nil, r.tooLarge("max_string_bytes", r.lim.StringBytes)
			}
		case tkStart:
			if err := r.skip(); err != nil {
				return nil, err
			}
		}
	}
	return r.text, nil
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

// addVertices counts n more vertices of the feature being read against
// Limits.Vertices.
func (r *Reader) addVertices(n int) error {
	r.vertices += n
	if r.vertices > r.lim.Vertices {
		return r.tooLarge("max_vertices", int64(r.lim.Vertices))
	}
	return nil
}

// vertexBudget refuses coordinate text that holds more positions than the
// feature has left of Limits.Vertices before they are parsed into memory.
// Positions are separated by sep (white space when sep is " ") and take per
// fields each. Every position takes at least 4 bytes ("1 1 "), so short
// texts need no counting.
func (r *Reader) vertexBudget(text []byte, sep string, per int) error {
	left := r.lim.Vertices - r.vertices
	if len(text)/4 <= left {
		return nil
	}
	n := 0
	if strings.TrimSpace(sep) == "" {
		for i := 0; ; n++ {
			f, next := nextField(text, i)
			if f == nil {
				break
			}
			i = next
		}
		n /= per
	} else {
		n = bytes.Count(text, []byte(sep)) + 1
	}
	if n > left {
		return r.tooLarge("max_vertices", int64(r.lim.Vertices))
	}
	return nil
}

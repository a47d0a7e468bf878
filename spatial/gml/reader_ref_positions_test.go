package gml

// The reference reader's coordinates: pos, posList, coordinates, coord and
// corners (see reader_ref_test.go).

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
func (r *refReader) positions(dst []orb.Point, dim int) ([]orb.Point, error) {
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
func (r *refReader) pointIn(dst []orb.Point, dim int) ([]orb.Point, error) {
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
func (r *refReader) coord() (orb.Point, error) {
	depth := len(r.stack)
	var p orb.Point
	seen := 0
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return p, err
		}
		t, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
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
func (r *refReader) readText() ([]byte, error) {
	depth := len(r.stack)
	r.text = r.text[:0]
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.CharData:
			r.text = append(r.text, t...)
		case xml.StartElement:
			if err := r.skip(); err != nil {
				return nil, err
			}
		}
	}
	return r.text, nil
}

// cornerPositions is positions that also takes lowerCorner/upperCorner.
func (r *refReader) cornerPositions(dst []orb.Point, dim int) ([]orb.Point, error) {
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

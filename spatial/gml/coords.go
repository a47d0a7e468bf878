package gml

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/paulmach/orb"
)

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// nextField returns the next whitespace-separated field of b at or after i,
// and the index after it; field is nil at the end.
func nextField(b []byte, i int) (field []byte, next int) {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	j := i
	for j < len(b) && !isSpace(b[j]) {
		j++
	}
	if i == j {
		return nil, j
	}
	return b[i:j], j
}

func parseNumber(f []byte) (float64, error) {
	v, err := parseFloat(f)
	if err != nil {
		return 0, fmt.Errorf("coordinate %q is not a number", shorten(f))
	}
	return v, nil
}

func shorten(b []byte) []byte {
	if len(b) > 40 {
		return b[:40]
	}
	return b
}

// parsePos parses a gml:pos: two or more numbers, of which the first two
// are kept.
func parsePos(text []byte) (orb.Point, error) {
	var p orb.Point
	n := 0
	for i := 0; ; {
		f, next := nextField(text, i)
		if f == nil {
			break
		}
		i = next
		if n < 2 {
			v, err := parseNumber(f)
			if err != nil {
				return p, err
			}
			p[n] = v
		}
		n++
	}
	if n < 2 {
		return p, fmt.Errorf("gml:pos with %d values, want at least 2", n)
	}
	return p, nil
}

// parsePosList appends the positions of a gml:posList with dim values each
// (0: derived from count when given, else 2), keeping the first two.
func parsePosList(dst []orb.Point, text []byte, dim, count int) ([]orb.Point, error) {
	if dim == 0 && count > 0 {
		n := 0
		for i := 0; ; n++ {
			f, next := nextField(text, i)
			if f == nil {
				break
			}
			i = next
		}
		if n%count != 0 {
			return dst, fmt.Errorf("gml:posList of %d values does not divide into count=%d positions", n, count)
		}
		dim = n / count
	}
	if dim == 0 {
		dim = 2
	}
	if dim < 2 {
		return dst, fmt.Errorf("gml:posList with srsDimension %d", dim)
	}
	var p orb.Point
	k := 0
	for i := 0; ; {
		for i < len(text) && text[i] <= ' ' && isSpace(text[i]) {
			i++
		}
		if i == len(text) {
			break
		}
		v, n, ok := scanDecimal(text[i:])
		if end := i + n; !ok || end < len(text) && !isSpace(text[end]) {
			var f []byte
			f, n = nextField(text, i)
			n -= i
			if k < 2 {
				var err error
				if v, err = parseNumber(f); err != nil {
					return dst, err
				}
			}
		}
		i += n
		if k < 2 {
			p[k] = v
		}
		k++
		if k == dim {
			dst = append(dst, p)
			k = 0
		}
	}
	if k != 0 {
		return dst, fmt.Errorf("gml:posList values do not divide into positions of %d", dim)
	}
	return dst, nil
}

// parseCoordinates appends the tuples of a GML 2 gml:coordinates with the
// given coordinate separator cs, tuple separator ts and decimal mark.
func parseCoordinates(dst []orb.Point, text []byte, cs, ts, dec string) ([]orb.Point, error) {
	if cs == "" || ts == "" || dec == "" || cs == ts || cs == dec || ts == dec {
		return dst, fmt.Errorf("gml:coordinates with unusable separators cs=%q ts=%q decimal=%q", cs, ts, dec)
	}
	wsTS := len(bytes.TrimSpace([]byte(ts))) == 0
	rest := bytes.TrimSpace(text)
	var scratch []byte
	for len(rest) > 0 {
		var tuple []byte
		if wsTS {
			var next int
			tuple, next = nextField(rest, 0)
			rest = bytes.TrimLeft(rest[next:], " \t\r\n")
		} else {
			i := bytes.Index(rest, []byte(ts))
			if i < 0 {
				tuple, rest = rest, nil
			} else {
				tuple, rest = rest[:i], rest[i+len(ts):]
			}
			tuple = bytes.TrimSpace(tuple)
			if len(tuple) == 0 {
				continue
			}
		}
		var p orb.Point
		n := 0
		for len(tuple) > 0 || n == 0 {
			var v []byte
			if i := bytes.Index(tuple, []byte(cs)); i >= 0 {
				v, tuple = tuple[:i], tuple[i+len(cs):]
				if len(tuple) == 0 {
					return dst, errors.New("gml:coordinates tuple ends with a separator")
				}
			} else {
				v, tuple = tuple, nil
			}
			v = bytes.TrimSpace(v)
			if dec != "." {
				scratch = append(scratch[:0], v...)
				scratch = bytes.ReplaceAll(scratch, []byte(dec), []byte("."))
				v = scratch
			}
			if n < 2 {
				f, err := parseNumber(v)
				if err != nil {
					return dst, err
				}
				p[n] = f
			}
			n++
		}
		if n < 2 {
			return dst, fmt.Errorf("gml:coordinates tuple with %d values, want at least 2", n)
		}
		dst = append(dst, p)
	}
	return dst, nil
}

// Byte-level encoding shared by every response: XML and JSON string
// escaping, integers, and coordinates formatted without float formatting.

package wfsserver

import (
	"math"
	"strconv"
	"unicode/utf8"
)

const xmlHeader = `<?xml version="1.0" encoding="UTF-8"?>` + "\n"

func appendInt(b []byte, i int) []byte { return strconv.AppendInt(b, int64(i), 10) }

// appendEscaped appends s with XML special characters escaped; invalid UTF-8
// becomes U+FFFD so the document stays well-formed.
func appendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch c {
			case '&':
				b = append(b, "&amp;"...)
			case '<':
				b = append(b, "&lt;"...)
			case '>':
				b = append(b, "&gt;"...)
			case '"':
				b = append(b, "&quot;"...)
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		b = utf8.AppendRune(b, r)
		i += n
	}
	return b
}

func escapeString(s string) string { return string(appendEscaped(nil, s)) }

func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, `\u00`...)
			b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

func (fw *featureWriter) appendCoord(b []byte, p [2]float64, sep byte) []byte {
	x, y := p[0], p[1]
	if fw.q.srs.latLon {
		x, y = y, x
	}
	b = appendFixed7(b, x)
	b = append(b, sep)
	return appendFixed7(b, y)
}

// appendFixed7 formats a coordinate already rounded to 1e-7 exactly as
// strconv.FormatFloat(v, 'f', -1, 64) would, with integer arithmetic only:
// shortest float formatting dominated the cost of a page.
func appendFixed7(b []byte, v float64) []byte {
	n := int64(math.Round(v * 1e7))
	if n < 0 {
		b = append(b, '-')
		n = -n
	}
	b = strconv.AppendInt(b, n/1e7, 10)
	frac := n % 1e7
	if frac == 0 {
		return b
	}
	var d [8]byte
	d[0] = '.'
	for k := 7; k >= 1; k-- {
		d[k] = byte('0' + frac%10)
		frac /= 10
	}
	end := 8
	for d[end-1] == '0' {
		end--
	}
	return append(b, d[:end]...)
}

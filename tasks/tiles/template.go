package tiles

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Template is a parsed tile URL template. The zero value expands to "".
//
// Placeholders: {z} {x} {y} (XYZ, or TMS with scheme: tms), {-y} (TMS row, whatever the
// scheme), {quadkey} (Bing), and the WMTS names {TileMatrix} {TileCol} {TileRow}
// (case-insensitive) for KVP (`...&TILEMATRIX={TileMatrix}&TILEROW={TileRow}...`) and REST
// (`.../{TileMatrix}/{TileRow}/{TileCol}.png`) templates. WMTS rows count from the top
// like XYZ. Anything else in braces is refused, so a typo never becomes a literal.
type Template struct {
	parts []part
	tms   bool
}

type part struct {
	lit string
	ph  placeholder
}

type placeholder int

const (
	phNone placeholder = iota
	phZ
	phX
	phY
	phTMSY
	phQuadkey
)

var placeholders = map[string]placeholder{
	"z": phZ, "x": phX, "y": phY, "-y": phTMSY, "quadkey": phQuadkey,
	"tilematrix": phZ, "tilecol": phX, "tilerow": phY,
}

// ParseTemplate parses a tile URL template. With tms, {y} is the TMS row (counted from
// the south), as tile servers configured with `scheme: tms` expect.
func ParseTemplate(s string, tms bool) (*Template, error) {
	t := &Template{tms: tms}
	var have [phQuadkey + 1]bool
	rest := s
	for rest != "" {
		i := strings.IndexAny(rest, "{}")
		if i < 0 {
			t.parts = append(t.parts, part{lit: rest})
			break
		}
		if i > 0 {
			t.parts = append(t.parts, part{lit: rest[:i]})
		}
		if rest[i] == '}' {
			return nil, fmt.Errorf("a lone '}' at byte %d", len(s)-len(rest)+i)
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return nil, fmt.Errorf("'{' at byte %d is not closed", len(s)-len(rest)+i)
		}
		name := rest[i+1 : i+j]
		ph, ok := placeholders[strings.ToLower(name)]
		if !ok {
			return nil, fmt.Errorf("unknown placeholder {%s}: use {z} {x} {y} {-y} {quadkey} or {TileMatrix} {TileCol} {TileRow}", name)
		}
		have[ph] = true
		t.parts = append(t.parts, part{ph: ph})
		rest = rest[i+j+1:]
	}
	if !have[phQuadkey] && (!have[phZ] || !have[phX] || !(have[phY] || have[phTMSY])) {
		return nil, errors.New("the template needs {z}, {x} and {y} (or {-y}, {quadkey}, or the WMTS {TileMatrix} {TileCol} {TileRow})")
	}
	u, err := url.Parse(t.Expand(0, 0, 0))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("not an http(s) URL")
	}
	return t, nil
}

// Expand returns the URL of tile z/x/y in XYZ numbering.
func (t *Template) Expand(z, x, y int) string {
	if t == nil {
		return ""
	}
	var b strings.Builder
	tmsY := (1 << uint(z)) - 1 - y
	for _, p := range t.parts {
		switch p.ph {
		case phNone:
			b.WriteString(p.lit)
		case phZ:
			b.WriteString(strconv.Itoa(z))
		case phX:
			b.WriteString(strconv.Itoa(x))
		case phY:
			if t.tms {
				b.WriteString(strconv.Itoa(tmsY))
			} else {
				b.WriteString(strconv.Itoa(y))
			}
		case phTMSY:
			b.WriteString(strconv.Itoa(tmsY))
		case phQuadkey:
			b.WriteString(quadkey(z, x, y))
		}
	}
	return b.String()
}

// quadkey is Bing's tile name: one base-4 digit per zoom level, most significant first.
func quadkey(z, x, y int) string {
	if z == 0 {
		return "0"
	}
	b := make([]byte, z)
	for i := z; i > 0; i-- {
		mask := 1 << uint(i-1)
		d := byte('0')
		if x&mask != 0 {
			d++
		}
		if y&mask != 0 {
			d += 2
		}
		b[z-i] = d
	}
	return string(b)
}

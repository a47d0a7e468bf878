package gml

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// charsetReader converts the single-byte encodings WFS servers declare
// (MapServer's default is ISO-8859-1) to UTF-8. ISO-8859-1 is read as
// windows-1252, as browsers do: its 0x80-0x9F controls are not valid XML
// characters anyway, and servers that say Latin-1 often mean cp1252.
func charsetReader(label string, in io.Reader) (io.Reader, error) {
	switch strings.ToLower(strings.TrimSpace(label)) {
	case "iso-8859-1", "iso8859-1", "latin1", "latin-1", "l1", "iso_8859-1", "windows-1252", "cp1252", "us-ascii", "ascii":
		return &cp1252Reader{r: bufio.NewReaderSize(in, 32<<10)}, nil
	}
	return nil, fmt.Errorf("gml: unsupported XML encoding %q", label)
}

// cp1252High maps windows-1252 bytes 0x80-0x9F; the rest of the byte range
// maps to the same code point.
var cp1252High = [32]rune{
	0x20AC, 0x81, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,
	0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x8D, 0x017D, 0x8F,
	0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
	0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x9D, 0x017E, 0x0178,
}

type cp1252Reader struct {
	r       *bufio.Reader
	pending []byte // encoded bytes not yet returned
	buf     [utf8.UTFMax]byte
}

func (c *cp1252Reader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(c.pending) > 0 {
			k := copy(p[n:], c.pending)
			c.pending = c.pending[k:]
			n += k
			continue
		}
		b, err := c.r.ReadByte()
		if err != nil {
			if n > 0 {
				return n, nil
			}
			return 0, err
		}
		if b < 0x80 {
			p[n] = b
			n++
			continue
		}
		r := rune(b)
		if b < 0xA0 {
			r = cp1252High[b-0x80]
		}
		k := utf8.EncodeRune(c.buf[:], r)
		c.pending = c.buf[:k]
	}
	return n, nil
}

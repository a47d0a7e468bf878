// The scanner's strings: reading and checking a string as encoding/json
// does, and unescaping it.

package geojson

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// str reads the string at pos and returns its unescaped bytes: a part of
// the window (valid until the next read) or of *scratch.
func (s *scanner) str(scratch *[]byte) ([]byte, error) {
	raw, plain, err := s.rawStr()
	if err != nil {
		return nil, err
	}
	if plain {
		return raw, nil
	}
	*scratch = unquote((*scratch)[:0], raw)
	return *scratch, nil
}

// rawStr consumes the string at pos and returns its bytes between the
// quotes, checked as encoding/json does, and whether they need no
// unescaping.
func (s *scanner) rawStr() (raw []byte, plain bool, err error) {
	// The opening quote stays at pos until the string is complete, so that
	// fill keeps it.
	j := s.pos + 1
	plain = true
	for {
		j = plainRun(s.buf, j, s.end)
		for j < s.end {
			c := s.buf[j]
			if plainByte[c] {
				j++
				continue
			}
			switch {
			case c == '"':
				if int64(j-s.pos-1) > s.maxString { // the bytes between the quotes
					return nil, false, s.tooLarge("max_string_bytes", s.maxString)
				}
				raw = s.buf[s.pos+1 : j]
				s.pos = j + 1
				if !plain && !needsUnquote(raw) {
					plain = true
				}
				return raw, plain, nil
			case c == '\\':
				plain = false
				if j+1 >= s.end {
					goto more
				}
				switch s.buf[j+1] {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
					j += 2
				case 'u':
					for h := j + 2; h < j+6; h++ {
						if h >= s.end {
							goto more
						}
						if !isHex(s.buf[h]) {
							s.pos = h
							return nil, false, s.syntaxErr("in \\u hexadecimal character escape")
						}
					}
					j += 6
				default:
					s.pos = j + 1
					return nil, false, s.syntaxErr("in string escape code")
				}
			case c < 0x20:
				s.pos = j
				return nil, false, s.syntaxErr("in string literal")
			default: // non-ASCII
				plain = false
				j++
			}
		}
	more:
		k := j - s.pos
		if int64(k-1) > s.maxString {
			return nil, false, s.tooLarge("max_string_bytes", s.maxString)
		}
		if !s.fill() {
			// Only the well-formed prefix was consumed: report the end.
			return nil, false, s.endErr()
		}
		j = s.pos + k
	}
}

// plainRun returns where the run of plainByte bytes at b[j:end] ends, or a place
// inside its last 7 bytes: it looks at 8 bytes at a time and leaves the rest, and the
// byte that ends the run, to the caller's loop.
func plainRun(b []byte, j, end int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for j+8 <= end {
		w := binary.LittleEndian.Uint64(b[j:])
		q, bs := w^('"'*ones), w^('\\'*ones)
		// A byte of the mask has its high bit set where w's byte is a quote, a
		// backslash, below 0x20 or non-ASCII; the lowest such byte is exact (a borrow
		// may flag bytes above it too).
		m := ((q-ones)&^q | (bs-ones)&^bs | (w-0x20*ones)&^w | w) & highs
		if m != 0 {
			return j + bits.TrailingZeros64(m)/8
		}
		j += 8
	}
	return j
}

// plainByte tells the bytes that stand for themselves in a string.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// needsUnquote tells whether raw has escapes or invalid UTF-8.
func needsUnquote(raw []byte) bool {
	for _, c := range raw {
		if c == '\\' {
			return true
		}
	}
	return !utf8.Valid(raw)
}

// unquote appends the unescaped raw (checked) string to b as encoding/json
// does: invalid UTF-8 and lone surrogates become U+FFFD.
func unquote(b, raw []byte) []byte {
	for r := 0; r < len(raw); {
		c := raw[r]
		switch {
		case c == '\\':
			switch e := raw[r+1]; e {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				rr := getu4(raw[r:])
				r += 6
				if utf16.IsSurrogate(rr) {
					rr1 := getu4(raw[r:])
					if dec := utf16.DecodeRune(rr, rr1); dec != utf8.RuneError {
						r += 6
						b = utf8.AppendRune(b, dec)
						continue
					}
					rr = utf8.RuneError
				}
				b = utf8.AppendRune(b, rr)
				continue
			default: // " \ /
				b = append(b, e)
			}
			r += 2
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(raw[r:])
			r += size
			b = utf8.AppendRune(b, rr)
		}
	}
	return b
}

// getu4 decodes \uXXXX at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c = c - '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

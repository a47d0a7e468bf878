package geojson

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/geoflow/geoflow/spatial"
)

// maxDepth is the nesting encoding/json allows inside one decoded value.
const maxDepth = 10000

// scanner is a window over the response that refills from src. Bytes from
// pin on (an absolute offset, -1 for none) stay in the window, so a feature
// can be looked at again after it was read, without holding the response.
type scanner struct {
	src  io.Reader // nil: buf[:end] is all the input
	buf  []byte
	pos  int   // next unread byte
	end  int   // end of the data in buf
	base int64 // absolute offset of buf[0]
	pin  int64
	rerr error // the error src returned, io.EOF at the end

	depth int // containers open in the value being decoded
}

func newScanner(src io.Reader) scanner {
	return scanner{src: src, buf: make([]byte, 64<<10), pin: -1}
}

// bytesScanner reads b only.
func bytesScanner(b []byte) scanner {
	return scanner{buf: b, end: len(b), pin: -1}
}

func (s *scanner) offset() int64 { return s.base + int64(s.pos) }

// fill reads more input into the window, keeping the bytes from pos (or from
// pin, if earlier) on. It reports whether it added any.
func (s *scanner) fill() bool {
	if s.rerr != nil {
		return false
	}
	if s.src == nil {
		s.rerr = io.EOF
		return false
	}
	keep := s.pos
	if s.pin >= 0 {
		keep = min(keep, int(s.pin-s.base))
	}
	if keep > 0 {
		copy(s.buf, s.buf[keep:s.end])
		s.end -= keep
		s.pos -= keep
		s.base += int64(keep)
	}
	if s.end == len(s.buf) {
		nb := make([]byte, 2*len(s.buf))
		copy(nb, s.buf[:s.end])
		s.buf = nb
	}
	for range 100 {
		n, err := s.src.Read(s.buf[s.end:])
		s.end += n
		if err != nil {
			s.rerr = err
		}
		if n > 0 {
			return true
		}
		if err != nil {
			return false
		}
	}
	s.rerr = io.ErrNoProgress
	return false
}

// endErr is the error for input that ended (or failed) inside the
// document.
func (s *scanner) endErr() error {
	if s.rerr == nil || s.rerr == io.EOF || errors.Is(s.rerr, io.ErrUnexpectedEOF) {
		return &spatial.TruncatedError{Offset: s.base + int64(s.end), Err: io.ErrUnexpectedEOF}
	}
	return fmt.Errorf("geojson: reading response: %w", s.rerr)
}

func (s *scanner) syntaxErr(what string) error {
	if s.pos >= s.end && !s.fill() {
		return s.endErr()
	}
	return fmt.Errorf("geojson: malformed JSON near byte %d: invalid character %q %s", s.offset(), s.buf[s.pos], what)
}

// peek skips white space and returns the next byte without consuming it.
func (s *scanner) peek() (byte, error) {
	if s.pos < s.end {
		if c := s.buf[s.pos]; c > ' ' {
			return c, nil
		}
	}
	return s.peekSpace()
}

func (s *scanner) peekSpace() (byte, error) {
	for {
		for s.pos < s.end {
			c := s.buf[s.pos]
			if c > ' ' || (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
				return c, nil
			}
			s.pos++
		}
		if !s.fill() {
			return 0, s.endErr()
		}
	}
}

// expect consumes c after white space.
func (s *scanner) expect(c byte, what string) error {
	got, err := s.peek()
	if err != nil {
		return err
	}
	if got != c {
		return s.syntaxErr(what)
	}
	s.pos++
	return nil
}

// open enters a container whose opening byte is at pos.
func (s *scanner) open() error {
	s.depth++
	if s.depth > maxDepth {
		return fmt.Errorf("geojson: malformed JSON near byte %d: exceeded max depth", s.offset())
	}
	s.pos++
	return nil
}

// next is called in a container after its opening byte or an element: it
// consumes the separator and reports whether another element follows (then
// pos is at it, or at the key of an object), consuming the closing byte
// otherwise.
func (s *scanner) next(first bool, closing byte) (bool, error) {
	if !first && s.pos+1 < s.end && s.buf[s.pos] == ',' && s.buf[s.pos+1] > ' ' {
		s.pos++
		return true, nil
	}
	c, err := s.peek()
	if err != nil {
		return false, err
	}
	if c == closing {
		s.pos++
		s.depth--
		return false, nil
	}
	if first {
		return true, nil
	}
	if c != ',' {
		return false, s.syntaxErr("after a container element")
	}
	s.pos++
	if _, err := s.peek(); err != nil {
		return false, err
	}
	return true, nil
}

// key reads an object key at pos. It is valid until the next read: match
// it before calling colon.
func (s *scanner) key(scratch *[]byte) ([]byte, error) {
	if s.buf[s.pos] != '"' {
		return nil, s.syntaxErr("looking for the beginning of an object key")
	}
	return s.str(scratch)
}

// colon consumes the colon after a key and the white space up to the value.
func (s *scanner) colon() error {
	if s.pos+1 < s.end && s.buf[s.pos] == ':' && s.buf[s.pos+1] > ' ' {
		s.pos++
		return nil
	}
	if err := s.expect(':', "after an object key"); err != nil {
		return err
	}
	_, err := s.peek()
	return err
}

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
		for j < s.end {
			c := s.buf[j]
			if plainByte[c] {
				j++
				continue
			}
			switch {
			case c == '"':
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
		if !s.fill() {
			// Only the well-formed prefix was consumed: report the end.
			return nil, false, s.endErr()
		}
		j = s.pos + k
	}
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

// number consumes the number at pos, checked against the JSON grammar, and
// returns its text (valid until the next read). A number is complete at
// the end of the input.
func (s *scanner) number() ([]byte, error) {
	j := s.pos
	// state: 0 start, 1 after '-', 2 in int (or after leading 0 when
	// zero), 3 after '.', 4 in fraction, 5 after 'e', 6 after sign, 7 in
	// exponent.
	state := 0
	zero := false
	for {
		for j < s.end {
			c := s.buf[j]
			digit := '0' <= c && c <= '9'
			switch state {
			case 0:
				if c == '-' {
					state = 1
					j++
					continue
				}
				fallthrough
			case 1:
				if !digit {
					s.pos = j
					return nil, s.syntaxErr("in numeric literal")
				}
				zero = c == '0'
				state = 2
				j++
				continue
			case 2:
				if digit && !zero {
					j++
					continue
				}
				if c == '.' {
					state = 3
					j++
					continue
				}
				if c == 'e' || c == 'E' {
					state = 5
					j++
					continue
				}
			case 3, 4:
				if digit {
					state = 4
					j++
					continue
				}
				if state == 3 {
					s.pos = j
					return nil, s.syntaxErr("after decimal point in numeric literal")
				}
				if c == 'e' || c == 'E' {
					state = 5
					j++
					continue
				}
			case 5, 6:
				if state == 5 && (c == '+' || c == '-') {
					state = 6
					j++
					continue
				}
				if !digit {
					s.pos = j
					return nil, s.syntaxErr("in exponent of numeric literal")
				}
				state = 7
				j++
				continue
			case 7:
				if digit {
					j++
					continue
				}
			}
			num := s.buf[s.pos:j]
			s.pos = j
			return num, nil
		}
		k := j - s.pos
		if !s.fill() {
			if s.rerr == io.EOF && (state == 2 || state == 4 || state == 7) {
				num := s.buf[s.pos:s.end]
				s.pos = s.end
				return num, nil
			}
			return nil, s.endErr()
		}
		j = s.pos + k
	}
}

// fastFloat converts the number at b[i:end] when it has at most 19
// digits, a mantissa below 2^53, no exponent and a byte after it, with the
// one correctly rounded division strconv.ParseFloat uses for those too. It
// returns where the number ends; ok is false when the caller must take
// the general path, which checks the syntax.
func fastFloat(b []byte, i, end int) (f float64, next int, ok bool) {
	neg := false
	if i < end && b[i] == '-' {
		neg = true
		i++
	}
	start := i
	var mant uint64
	if i < end && b[i] == '0' {
		i++
	} else {
		for ; i < end; i++ {
			d := b[i] - '0'
			if d > 9 {
				break
			}
			mant = mant*10 + uint64(d)
		}
		if i == start {
			return 0, 0, false
		}
	}
	digits, exp := i-start, 0
	if i < end && b[i] == '.' {
		i++
		k := i
		for ; i < end; i++ {
			d := b[i] - '0'
			if d > 9 {
				break
			}
			mant = mant*10 + uint64(d)
		}
		if i == k {
			return 0, 0, false
		}
		exp = k - i
		digits += i - k
	}
	if i >= end || b[i] == 'e' || b[i] == 'E' || digits > 19 || mant > 1<<53 || exp < -22 {
		return 0, 0, false
	}
	f = float64(mant)
	if exp < 0 {
		f /= pow10[-exp]
	}
	if neg {
		f = -f
	}
	return f, i, true
}

// float consumes the number at pos and converts it as parseNumber does.
// The text is returned only when ok is false.
func (s *scanner) float() (f float64, ok bool, text []byte, err error) {
	if f, next, ok := fastFloat(s.buf, s.pos, s.end); ok {
		s.pos = next
		return f, true, nil, nil
	}
	num, err := s.number()
	if err != nil {
		return 0, false, nil, err
	}
	f, ok = parseNumber(num)
	if !ok {
		text = num
	}
	return f, ok, text, nil
}

var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseNumber converts a number checked by scanner.number exactly as
// strconv.ParseFloat does; ok is false when ParseFloat fails (out of
// range). Numbers with at most 15 significant digits and a small exponent
// take the exact fast path strconv takes too: one correctly rounded
// multiplication or division of exactly represented values.
func parseNumber(b []byte) (f float64, ok bool) {
	i := 0
	neg := b[0] == '-'
	if neg {
		i++
	}
	var mant uint64
	nd, exp := 0, 0
	for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		if mant != 0 || b[i] != '0' {
			nd++
		}
		mant = mant*10 + uint64(b[i]-'0')
	}
	if i < len(b) && b[i] == '.' {
		for i++; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
			if mant != 0 || b[i] != '0' {
				nd++
			}
			mant = mant*10 + uint64(b[i]-'0')
			exp--
		}
	}
	if nd > 15 || i < len(b) {
		return slowNumber(b)
	}
	v := float64(mant)
	switch {
	case exp == 0:
	case exp >= -22:
		v /= pow10[-exp]
	default:
		return slowNumber(b)
	}
	if neg {
		v = -v
	}
	return v, true
}

func slowNumber(b []byte) (float64, bool) {
	f, err := strconv.ParseFloat(string(b), 64)
	return f, err == nil
}

// literal consumes true, false or null at pos.
func (s *scanner) literal() (byte, error) {
	c := s.buf[s.pos]
	var want string
	switch c {
	case 't':
		want = "true"
	case 'f':
		want = "false"
	case 'n':
		want = "null"
	default:
		return 0, s.syntaxErr("looking for the beginning of a value")
	}
	for i := 0; i < len(want); i++ {
		if s.pos >= s.end && !s.fill() {
			return 0, s.endErr()
		}
		if s.buf[s.pos] != want[i] {
			return 0, s.syntaxErr("in literal " + want)
		}
		s.pos++
	}
	return c, nil
}

// skip consumes the value at pos, checking it. With tokens, it checks as
// the json.Decoder Token API does: no depth limit, and a number must fit a
// float64.
func (s *scanner) skip(tokens bool) error {
	switch c := s.buf[s.pos]; c {
	case '{', '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		if tokens {
			s.pos++
		} else if err := s.open(); err != nil {
			return err
		}
		for first := true; ; first = false {
			more, err := s.next(first, closing)
			if err != nil {
				return err
			}
			if tokens && !more {
				s.depth++ // next counted the close
			}
			if !more {
				return nil
			}
			if c == '{' {
				if err := s.rawStrKey(); err != nil {
					return err
				}
			}
			if err := s.skip(tokens); err != nil {
				return err
			}
		}
	case '"':
		_, _, err := s.rawStr()
		return err
	case 't', 'f', 'n':
		_, err := s.literal()
		return err
	default:
		num, err := s.number()
		if err != nil {
			return err
		}
		if tokens {
			if _, ok := parseNumber(num); !ok {
				return fmt.Errorf("geojson: reading response: number %s out of range", num)
			}
		}
		return nil
	}
}

// rawStrKey consumes an object key and its colon without unescaping.
func (s *scanner) rawStrKey() error {
	if s.buf[s.pos] != '"' {
		return s.syntaxErr("looking for the beginning of an object key")
	}
	if _, _, err := s.rawStr(); err != nil {
		return err
	}
	return s.colon()
}

// foldEq tells whether key matches the lower-case ASCII name as
// encoding/json matches struct field names: exactly, or under Unicode
// simple folding (so "TYPE" and "propertieſ" match too).
func foldEq(key []byte, name string) bool {
	if string(key) == name {
		return true
	}
	i := 0
	for _, n := range []byte(name) {
		if i >= len(key) {
			return false
		}
		c := key[i]
		if c < utf8.RuneSelf {
			if c != n && ('a' > n || n > 'z' || c|0x20 != n) {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(key[i:])
		switch {
		case r == '\u017f' && n == 's', r == '\u212a' && n == 'k':
		default:
			return false
		}
		i += size
	}
	return i == len(key)
}

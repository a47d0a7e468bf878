package geojson

import (
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/geoflow/geoflow/spatial"
)

// maxDepth is the nesting encoding/json allows inside one decoded value, as
// spatial.DefaultDepth does.
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

	// The limits: containers open in one value, bytes of one string or number, bytes of
	// the window while a feature is pinned in it.
	maxDepth  int
	maxString int64
	maxWindow int64
}

func newScanner(src io.Reader, lim spatial.Limits) scanner {
	return scanner{src: src, buf: make([]byte, 64<<10), pin: -1,
		maxDepth: lim.Depth, maxString: lim.StringBytes, maxWindow: lim.FeatureBytes}
}

// bytesScanner reads b only.
func bytesScanner(b []byte) scanner {
	return scanner{buf: b, end: len(b), pin: -1, maxDepth: maxDepth, maxString: int64(len(b)) + 1, maxWindow: int64(len(b)) + 1}
}

// tooLarge is the error for passing a limit at the current offset; the reader names the
// feature.
func (s *scanner) tooLarge(limit string, max int64) error {
	return &spatial.TooLargeError{Limit: limit, Max: max, Offset: s.offset(), Index: -1}
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
	// The window holds one feature (pinned) or one string or number: past the limits it
	// is a response no feature fits in.
	if s.pin >= 0 && int64(s.end)-(s.pin-s.base) > s.maxWindow {
		s.rerr = s.tooLarge("max_feature_bytes", s.maxWindow)
		return false
	}
	if s.end == len(s.buf) {
		if s.pin < 0 && int64(s.end) > s.maxString {
			s.rerr = s.tooLarge("max_string_bytes", s.maxString)
			return false
		}
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
	if _, ok := s.rerr.(*spatial.TooLargeError); ok {
		return s.rerr
	}
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
	if s.depth > s.maxDepth {
		return s.tooLarge("max_depth", int64(s.maxDepth))
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

// atKey consumes the key at pos when it is k written as is, k being a plainKey: the
// bytes of k between quotes. False leaves pos where it was, for key to read it.
func (s *scanner) atKey(k string) bool {
	i := s.pos + 1 + len(k)
	if i >= s.end || s.buf[s.pos] != '"' || s.buf[i] != '"' || string(s.buf[s.pos+1:i]) != k {
		return false
	}
	s.pos = i + 1
	return true
}

// plainKey tells whether k is written in JSON as its own bytes, with nothing escaped
// or checked: printable ASCII but for the quote and the backslash.
func plainKey(k []byte) bool {
	for _, c := range k {
		if !plainByte[c] {
			return false
		}
	}
	return true
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

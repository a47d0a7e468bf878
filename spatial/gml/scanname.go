// The scanner's names: reading, checking and interning element and
// attribute names.

package gml

import (
	"encoding/xml"
	"strings"
	"unicode"
	"unicode/utf8"
)

// nameByte marks the ASCII bytes isNameByte accepts.
var nameByte = func() (t [256]bool) {
	for c := 0; c < utf8.RuneSelf; c++ {
		t[c] = isNameByte(byte(c))
	}
	return t
}()

func isNameByte(c byte) bool {
	return 'A' <= c && c <= 'Z' ||
		'a' <= c && c <= 'z' ||
		'0' <= c && c <= '9' ||
		c == '_' || c == ':' || c == '.' || c == '-'
}

// readName appends a name to dst: bytes up to the first single-byte
// character not valid in names. false without s.err: no name there.
func (s *scanner) readName(dst []byte) ([]byte, bool) {
	b, ok := s.mustgetc()
	if !ok {
		return dst, false
	}
	if b < utf8.RuneSelf && !isNameByte(b) {
		s.ungetc()
		return dst, false
	}
	dst = append(dst, b)
	for {
		i := s.pos
		for i < s.end && (s.buf[i] >= utf8.RuneSelf || isNameByte(s.buf[i])) {
			i++
		}
		dst = append(dst, s.buf[s.pos:i]...)
		s.pos = i
		if b, ok = s.mustgetc(); !ok {
			return dst, false
		}
		if b < utf8.RuneSelf && !isNameByte(b) {
			s.ungetc()
			return dst, true
		}
		dst = append(dst, b)
	}
}

func isName(s []byte) bool {
	if len(s) == 0 {
		return false
	}
	ascii := true
	for _, c := range s {
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		c := s[0]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || c == '_' || c == ':') {
			return false
		}
		for _, c := range s[1:] {
			if !isNameByte(c) {
				return false
			}
		}
		return true
	}
	c, n := utf8.DecodeRune(s)
	if c == utf8.RuneError && n == 1 {
		return false
	}
	if !unicode.Is(nameFirst, c) {
		return false
	}
	for n < len(s) {
		s = s[n:]
		c, n = utf8.DecodeRune(s)
		if c == utf8.RuneError && n == 1 {
			return false
		}
		if !unicode.Is(nameFirst, c) && !unicode.Is(nameSecond, c) {
			return false
		}
	}
	return true
}

// name reads a name, as encoding/xml's name, interning it.
func (s *scanner) name() (string, bool) {
	if b := s.peekName(); b != nil {
		s.pos += len(b)
		return s.intern(b), true
	}
	var nb [64]byte
	b, ok := s.readName(nb[:0])
	if !ok {
		return "", false
	}
	if !isName(b) {
		s.err = s.syntaxError("invalid XML name: " + string(b))
		return "", false
	}
	return s.intern(b), true
}

// intern returns b as a string, the same one for the same names: a
// response repeats a few dozen names.
func (s *scanner) intern(b []byte) string {
	if v, ok := s.names[string(b)]; ok {
		return v
	}
	v := string(b)
	if len(s.names) < 4096 {
		s.names[v] = v
	}
	return v
}

// peekName returns the name at the current position when it is ASCII and
// ends in the window (the common case, which name and nsname take without
// reading byte by byte), else nil. It does not move past it.
func (s *scanner) peekName() []byte {
	if s.err != nil || s.pos >= s.end {
		return nil
	}
	rest := s.buf[s.pos:s.end]
	if c := rest[0]; !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || c == '_' || c == ':') {
		return nil
	}
	for k, c := range rest[1:] {
		if !nameByte[c] {
			if c < utf8.RuneSelf {
				return rest[:k+1]
			}
			return nil
		}
	}
	return nil
}

// nsname reads a name with an optional prefix, as encoding/xml's nsname,
// in role. A name written as one read before is taken from s.nsnames
// without interning or splitting it again: first the one that followed the
// previous name the last time, else the one its bytes hash to. A response
// repeats a few dozen names in the same order feature after feature.
func (s *scanner) nsname(role nameRole) (xml.Name, bool) {
	c := s.nsnames
	if e := c.predicted(); s.atName(e.raw) {
		s.pos += len(e.raw)
		c.prev, c.prevRole = c.entries[c.prev].next[c.prevRole], role
		return e.name, true
	}
	if b := s.peekName(); b != nil {
		if i := c.lookup(b); i >= 0 {
			s.pos += len(b)
			c.read(i, role)
			return c.entries[i].name, true
		}
	}
	str, ok := s.name()
	if !ok {
		return xml.Name{}, false
	}
	if strings.Count(str, ":") > 1 {
		return xml.Name{}, false
	}
	name := xml.Name{Local: str}
	if space, local, ok := strings.Cut(str, ":"); ok && space != "" && local != "" {
		name = xml.Name{Space: space, Local: local}
	}
	c.read(c.add(str, name), role)
	return name, true
}

// atName says whether the name written raw is at the current position and
// ends in the window, so that name would read exactly raw.
func (s *scanner) atName(raw string) bool {
	end := s.pos + len(raw)
	if raw == "" || s.err != nil || end >= s.end {
		return false
	}
	c := s.buf[end]
	return c < utf8.RuneSelf && !nameByte[c] && string(s.buf[s.pos:end]) == raw
}

// The scanner's character data: text, attribute values and CDATA content,
// with entity references and the XML character checks.

package gml

import (
	"fmt"
	"io"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// textSpecial marks the bytes that readText cannot copy in bulk.
var textSpecial = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = c < 0x20 || c >= 0x80 || c == '<' || c == '&' || c == ']' || c == '>' || c == '"' || c == '\''
	}
	return t
}()

// readText is encoding/xml's text: character data up to '<' (quote < 0),
// an attribute value up to its quote, or a CDATA section up to "]]>". It
// returns nil on error, leaving it in s.err; the data is valid until the
// next call.
func (s *scanner) readText(quote int, cdata bool) []byte {
	if data := s.plainText(quote, cdata); data != nil {
		return data
	}
	s.textStart = s.offset() // for fill's limit on text that never ends
	b := s.readTextLimited(quote, cdata)
	s.textStart = -1
	return b
}

func (s *scanner) readTextLimited(quote int, cdata bool) []byte {
	var b0, b1 byte
	trunc := 0
	check := false // data holds bytes that need the character check
	buf := s.text[:0]
Input:
	for {
		if s.err == nil {
			i := s.pos + plainPrefix(s.buf[s.pos:s.end])
			if i > s.pos {
				buf = append(buf, s.buf[s.pos:i]...)
				s.pos = i
				b0, b1 = 'a', 'a'
			}
		}
		b, ok := s.getc()
		if !ok {
			if cdata {
				if s.err == io.EOF {
					s.err = s.syntaxError("unexpected EOF in CDATA section")
				}
				s.text = buf
				return nil
			}
			break Input
		}
		switch act := textByte(quote, cdata, b0, b1, b); act {
		case textEndCDATA:
			trunc = 2
			break Input
		case textEndBefore:
			s.ungetc()
			break Input
		case textEnd:
			break Input
		case textEntity:
			var ok bool
			buf, ok = s.entity(buf)
			if !ok {
				s.text = buf
				return nil
			}
			check = true
			b0, b1 = 0, 0
			continue Input
		case textCDATAEndOutside, textLessInQuotes:
			s.err = s.syntaxError(act.refusal())
			s.text = buf
			return nil
		}
		if b < 0x20 || b >= 0x80 {
			check = true
		}
		switch {
		case b == '\r':
			buf = append(buf, '\n')
		case b1 == '\r' && b == '\n':
		default:
			buf = append(buf, b)
		}
		b0, b1 = b1, b
	}
	s.text = buf
	data := buf[:len(buf)-trunc]
	if check {
		if msg := invalidText(data); msg != "" {
			s.err = s.syntaxError(msg)
			return nil
		}
	}
	return data
}

// textPlain marks the bytes plainText passes over: those readText copies in
// bulk, and the line feeds and tabs between elements, which it takes one by
// one but keeps as they are.
var textPlain = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = !textSpecial[c] || c == '\n' || c == '\t'
	}
	return t
}()

// plainText is readText's result, without copying, when the text or value
// ends in the window and holds no byte it must look at (carriage returns,
// references, non-ASCII, brackets, quotes): the bytes up to its end in
// s.buf, valid until the next read. nil when it cannot tell, and for CDATA.
func (s *scanner) plainText(quote int, cdata bool) []byte {
	if s.err != nil || cdata {
		return nil
	}
	// The window in a local, indexed by range: the loop keeps nothing of s.
	rest := s.buf[s.pos:s.end]
	n := len(rest)
	for k, c := range rest {
		if !textPlain[c] {
			n = k
			break
		}
	}
	if n == len(rest) {
		return nil
	}
	i := s.pos + n
	data := s.buf[s.pos:i:i]
	switch c := s.buf[i]; {
	case quote < 0 && c == '<' && i > s.pos:
		s.pos = i
	case quote >= 0 && c == byte(quote):
		s.pos = i + 1
	default:
		return nil
	}
	return data
}

// plainPrefix is the length of the run of bytes b starts with that
// readText copies in bulk.
func plainPrefix(b []byte) int {
	for k, c := range b {
		if textSpecial[c] {
			return k
		}
	}
	return len(b)
}

// textAction is what a byte that readText cannot copy in bulk means.
type textAction uint8

const (
	textData            textAction = iota // a byte of the text
	textEnd                               // the closing quote of an attribute value, consumed
	textEndBefore                         // '<', the start of the next token
	textEndCDATA                          // the '>' of the "]]>" that closes a CDATA section
	textEntity                            // '&', the start of a reference
	textCDATAEndOutside                   // "]]>" outside a CDATA section: an error
	textLessInQuotes                      // '<' in an attribute value: an error
)

// refusal is the syntax error message of an action that refuses the text.
func (a textAction) refusal() string {
	if a == textLessInQuotes {
		return "unescaped < inside quoted string"
	}
	return "unescaped ]]> not in CDATA section"
}

// textByte decides what b means in text read as by readText(quote, cdata),
// b0 and b1 being the two bytes before it (zero after a reference). The
// order of the checks is encoding/xml's.
func textByte(quote int, cdata bool, b0, b1, b byte) textAction {
	switch {
	case quote < 0 && b0 == ']' && b1 == ']' && b == '>':
		if cdata {
			return textEndCDATA
		}
		return textCDATAEndOutside
	case b == '<' && !cdata:
		if quote >= 0 {
			return textLessInQuotes
		}
		return textEndBefore
	case quote >= 0 && b == byte(quote):
		return textEnd
	case b == '&' && !cdata:
		return textEntity
	}
	return textData
}

// invalidText returns the syntax error message for the first bad UTF-8
// sequence or character outside XML's Char range in data, or "" when there
// is none.
func invalidText(data []byte) string {
	for rest := data; len(rest) > 0; {
		r, size := utf8.DecodeRune(rest)
		if r == utf8.RuneError && size == 1 {
			return "invalid UTF-8"
		}
		rest = rest[size:]
		if !isInCharacterRange(r) {
			return fmt.Sprintf("illegal character code %U", r)
		}
	}
	return ""
}

// entity reads a reference whose '&' was just read and appends its text;
// false means an error, in s.err.
func (s *scanner) entity(buf []byte) ([]byte, bool) {
	b, ok := s.mustgetc()
	if !ok {
		return buf, false
	}
	if b == '#' {
		return s.charRef(buf)
	}
	s.ungetc()
	var nb [16]byte
	name, ok := s.readName(nb[:0])
	if !ok && s.err != nil {
		return buf, false
	}
	if b, ok = s.mustgetc(); !ok {
		return buf, false
	}
	if b != ';' {
		s.ungetc()
		s.err = s.syntaxError("invalid character entity &" + string(name) + " (no semicolon)")
		return buf, false
	}
	if c, ok := predefinedEntity(name); ok {
		return append(buf, c), true
	}
	s.err = s.syntaxError("invalid character entity &" + string(name) + ";")
	return buf, false
}

// predefinedEntity returns the character that the entity name stands for:
// only XML's predefined five are known.
func predefinedEntity(name []byte) (byte, bool) {
	if !isName(name) {
		return 0, false
	}
	switch string(name) {
	case "lt":
		return '<', true
	case "gt":
		return '>', true
	case "amp":
		return '&', true
	case "apos":
		return '\'', true
	case "quot":
		return '"', true
	}
	return 0, false
}

// charRef reads a character reference whose "&#" was just read and appends
// the character; false means an error, in s.err.
func (s *scanner) charRef(buf []byte) ([]byte, bool) {
	b, ok := s.mustgetc()
	if !ok {
		return buf, false
	}
	base := 10
	if b == 'x' {
		base = 16
		if b, ok = s.mustgetc(); !ok {
			return buf, false
		}
	}
	var digits [32]byte
	d := digits[:0]
	for isRefDigit(b, base) {
		d = append(d, b)
		if b, ok = s.mustgetc(); !ok {
			return buf, false
		}
	}
	ent := "&#"
	if base == 16 {
		ent += "x"
	}
	ent += string(d)
	if b != ';' {
		s.ungetc()
		ent += " (no semicolon)"
	} else {
		n, err := strconv.ParseUint(string(d), base, 64)
		if err == nil && n <= unicode.MaxRune {
			return utf8.AppendRune(buf, rune(n)), true
		}
		ent += ";"
	}
	s.err = s.syntaxError("invalid character entity " + ent)
	return buf, false
}

// isRefDigit says whether b is a digit of a character reference in base
// (10, or 16 after "&#x"), as encoding/xml reads them.
func isRefDigit(b byte, base int) bool {
	return '0' <= b && b <= '9' ||
		base == 16 && 'a' <= b && b <= 'f' ||
		base == 16 && 'A' <= b && b <= 'F'
}

func isInCharacterRange(r rune) bool {
	return r == 0x09 ||
		r == 0x0A ||
		r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}

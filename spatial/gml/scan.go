package gml

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokKind is the kind of token a scanner returned.
type tokKind uint8

const (
	tkStart tokKind = iota + 1
	tkEnd
	tkText    // character data or CDATA
	tkComment // also processing instructions and directives
)

// token is the token a scanner just read. It is valid until the next call.
type token struct {
	kind  tokKind
	start xml.StartElement // tkStart; Attr is reused by the next token
	end   xml.Name         // tkEnd
	text  []byte           // tkText
}

// scanner is a streaming XML tokenizer that accepts and refuses exactly
// what encoding/xml's Decoder.RawToken does (strict mode, no entities
// beyond the predefined five), with the same kinds of errors, but reads
// through its own window a run of bytes at a time and allocates only for
// attribute values and names it has not seen yet. Its rules are those of
// encoding/xml's rawToken, text, name and attrval, which it follows step
// by step.
type scanner struct {
	src      io.Reader
	charset  func(label string, r io.Reader) (io.Reader, error)
	buf      []byte
	pos, end int
	base     int64 // input offset of buf[0]
	lines    int   // newlines before buf[0]
	eof      bool  // src has reported err (srcErr)
	srcErr   error
	err      error // sticky, as Decoder.err

	needClose bool
	toClose   xml.Name
	tok       token
	attrs     []xml.Attr
	text      []byte // scratch for character data
	names     map[string]string
}

const scanWindow = 64 << 10

func newScanner(src io.Reader, charset func(string, io.Reader) (io.Reader, error)) *scanner {
	return &scanner{src: src, charset: charset, buf: make([]byte, scanWindow), text: make([]byte, 0, 256), names: make(map[string]string, 64)}
}

// offset is the input offset of the next byte, as Decoder.InputOffset.
func (s *scanner) offset() int64 { return s.base + int64(s.pos) }

// fill reads more input, keeping the last byte read so that ungetc works.
// It returns false when there is none, leaving the reason in s.srcErr.
func (s *scanner) fill() bool {
	if s.eof {
		return false
	}
	if s.pos > 1 {
		keep := s.pos - 1
		s.lines += bytes.Count(s.buf[:keep], newline)
		n := copy(s.buf, s.buf[keep:s.end])
		s.base += int64(keep)
		s.pos -= keep
		s.end = n
	}
	if s.end == len(s.buf) {
		s.buf = append(s.buf, make([]byte, len(s.buf))...)
	}
	for tries := 0; ; tries++ {
		n, err := s.src.Read(s.buf[s.end:])
		s.end += n
		if err != nil {
			s.eof, s.srcErr = true, err
			return n > 0
		}
		if n > 0 {
			return true
		}
		if tries > 100 {
			s.eof, s.srcErr = true, io.ErrNoProgress
			return false
		}
	}
}

func (s *scanner) getc() (byte, bool) {
	if s.err != nil {
		return 0, false
	}
	if s.pos < s.end {
		b := s.buf[s.pos]
		s.pos++
		return b, true
	}
	return s.getcSlow()
}

func (s *scanner) getcSlow() (byte, bool) {
	if !s.fill() {
		s.err = s.srcErr
		return 0, false
	}
	b := s.buf[s.pos]
	s.pos++
	return b, true
}

func (s *scanner) mustgetc() (byte, bool) {
	b, ok := s.getc()
	if !ok && s.err == io.EOF {
		s.err = s.syntaxError("unexpected EOF")
	}
	return b, ok
}

func (s *scanner) ungetc() { s.pos-- }

var newline = []byte{'\n'}

// syntaxError is an error at the current position, with the line number
// encoding/xml would give.
func (s *scanner) syntaxError(msg string) error {
	return &xml.SyntaxError{Msg: msg, Line: 1 + s.lines + bytes.Count(s.buf[:s.pos], newline)}
}

// next reads the next token, as RawToken. A clean end of input is io.EOF.
func (s *scanner) next() (*token, error) {
	if s.err != nil {
		return nil, s.err
	}
	t := &s.tok
	if s.needClose {
		s.needClose = false
		*t = token{kind: tkEnd, end: s.toClose}
		return t, nil
	}
	b, ok := s.getc()
	if !ok {
		return nil, s.err
	}
	if b != '<' {
		s.ungetc()
		data := s.readText(-1, false)
		if data == nil {
			return nil, s.err
		}
		*t = token{kind: tkText, text: data}
		return t, nil
	}
	if b, ok = s.mustgetc(); !ok {
		return nil, s.err
	}
	switch b {
	case '/':
		name, ok := s.nsname()
		if !ok {
			if s.err == nil {
				s.err = s.syntaxError("expected element name after </")
			}
			return nil, s.err
		}
		s.space()
		if b, ok = s.mustgetc(); !ok {
			return nil, s.err
		}
		if b != '>' {
			s.err = s.syntaxError("invalid characters between </" + name.Local + " and >")
			return nil, s.err
		}
		*t = token{kind: tkEnd, end: name}
		return t, nil
	case '?':
		return s.procInst()
	case '!':
		return s.bang()
	}
	s.ungetc()
	name, ok := s.nsname()
	if !ok {
		if s.err == nil {
			s.err = s.syntaxError("expected element name after <")
		}
		return nil, s.err
	}
	attrs := s.attrs[:0]
	empty := false
	for {
		s.space()
		if b, ok = s.mustgetc(); !ok {
			return nil, s.err
		}
		if b == '/' {
			empty = true
			if b, ok = s.mustgetc(); !ok {
				return nil, s.err
			}
			if b != '>' {
				s.err = s.syntaxError("expected /> in element")
				return nil, s.err
			}
			break
		}
		if b == '>' {
			break
		}
		s.ungetc()
		var a xml.Attr
		if a.Name, ok = s.nsname(); !ok {
			if s.err == nil {
				s.err = s.syntaxError("expected attribute name in element")
			}
			return nil, s.err
		}
		s.space()
		if b, ok = s.mustgetc(); !ok {
			return nil, s.err
		}
		if b != '=' {
			s.err = s.syntaxError("attribute name without = in element")
			return nil, s.err
		}
		s.space()
		if b, ok = s.mustgetc(); !ok {
			return nil, s.err
		}
		if b != '"' && b != '\'' {
			s.err = s.syntaxError("unquoted or missing attribute value in element")
			return nil, s.err
		}
		data := s.readText(int(b), false)
		if data == nil {
			return nil, s.err
		}
		a.Value = string(data)
		attrs = append(attrs, a)
	}
	s.attrs = attrs
	if empty {
		s.needClose = true
		s.toClose = name
	}
	*t = token{kind: tkStart, start: xml.StartElement{Name: name, Attr: attrs}}
	return t, nil
}

func (s *scanner) procInst() (*token, error) {
	target, ok := s.name()
	if !ok {
		if s.err == nil {
			s.err = s.syntaxError("expected target name after <?")
		}
		return nil, s.err
	}
	s.space()
	data := s.text[:0]
	var b0 byte
	for {
		b, ok := s.mustgetc()
		if !ok {
			return nil, s.err
		}
		data = append(data, b)
		if b0 == '?' && b == '>' {
			break
		}
		b0 = b
	}
	s.text = data
	data = data[:len(data)-2]
	if target == "xml" {
		content := string(data)
		ver := procInstParam("version", content)
		if ver != "" && ver != "1.0" {
			s.err = fmt.Errorf("xml: unsupported version %q; only version 1.0 is supported", ver)
			return nil, s.err
		}
		enc := procInstParam("encoding", content)
		if enc != "" && enc != "utf-8" && enc != "UTF-8" && !strings.EqualFold(enc, "utf-8") {
			// The rest of the input, from the byte after "?>", is in enc.
			var tail io.Reader = s.src
			if s.eof {
				tail = errReader{s.srcErr}
			}
			rest := io.MultiReader(bytes.NewReader(bytes.Clone(s.buf[s.pos:s.end])), tail)
			newr, err := s.charset(enc, rest)
			if err != nil {
				s.err = fmt.Errorf("xml: opening charset %q: %w", enc, err)
				return nil, s.err
			}
			s.base += int64(s.pos)
			s.lines += bytes.Count(s.buf[:s.pos], newline)
			s.src = newr
			s.pos, s.end = 0, 0
			s.eof, s.srcErr = false, nil
		}
	}
	s.tok = token{kind: tkComment}
	return &s.tok, nil
}

// errReader is a source that already failed.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// procInstParam is encoding/xml's procInst.
func procInstParam(param, s string) string {
	param = param + "="
	lenp := len(param)
	i := 0
	var sep byte
	for i < len(s) {
		sub := s[i:]
		k := strings.Index(sub, param)
		if k < 0 || lenp+k >= len(sub) {
			return ""
		}
		i += lenp + k + 1
		if c := sub[lenp+k]; c == '\'' || c == '"' {
			sep = c
			break
		}
	}
	if sep == 0 {
		return ""
	}
	j := strings.IndexByte(s[i:], sep)
	if j < 0 {
		return ""
	}
	return s[i : i+j]
}

// bang reads what follows "<!": a comment, CDATA or a directive.
func (s *scanner) bang() (*token, error) {
	b, ok := s.mustgetc()
	if !ok {
		return nil, s.err
	}
	switch b {
	case '-':
		if b, ok = s.mustgetc(); !ok {
			return nil, s.err
		}
		if b != '-' {
			s.err = s.syntaxError("invalid sequence <!- not part of <!--")
			return nil, s.err
		}
		var b0, b1 byte
		for {
			if b, ok = s.mustgetc(); !ok {
				return nil, s.err
			}
			if b0 == '-' && b1 == '-' {
				if b != '>' {
					s.err = s.syntaxError(`invalid sequence "--" not allowed in comments`)
					return nil, s.err
				}
				break
			}
			b0, b1 = b1, b
		}
		s.tok = token{kind: tkComment}
		return &s.tok, nil
	case '[':
		for i := 0; i < 6; i++ {
			if b, ok = s.mustgetc(); !ok {
				return nil, s.err
			}
			if b != "CDATA["[i] {
				s.err = s.syntaxError("invalid <![ sequence")
				return nil, s.err
			}
		}
		data := s.readText(-1, true)
		if data == nil {
			return nil, s.err
		}
		s.tok = token{kind: tkText, text: data}
		return &s.tok, nil
	}
	// A directive (<!DOCTYPE ...>): skipped, with encoding/xml's rules for
	// quotes, nesting and comments inside.
	inquote := uint8(0)
	depth := 0
	for {
		if b, ok = s.mustgetc(); !ok {
			return nil, s.err
		}
		if inquote == 0 && b == '>' && depth == 0 {
			break
		}
	handleB:
		switch {
		case b == inquote:
			inquote = 0
		case inquote != 0:
		case b == '\'' || b == '"':
			inquote = b
		case b == '>' && inquote == 0:
			depth--
		case b == '<' && inquote == 0:
			const open = "!--"
			for i := 0; i < len(open); i++ {
				if b, ok = s.mustgetc(); !ok {
					return nil, s.err
				}
				if b != open[i] {
					depth++
					goto handleB
				}
			}
			var b0, b1 byte
			for {
				if b, ok = s.mustgetc(); !ok {
					return nil, s.err
				}
				if b0 == '-' && b1 == '-' && b == '>' {
					break
				}
				b0, b1 = b1, b
			}
		}
	}
	s.tok = token{kind: tkComment}
	return &s.tok, nil
}

func (s *scanner) space() {
	for {
		if s.pos < s.end && s.err == nil {
			switch s.buf[s.pos] {
			case ' ', '\r', '\n', '\t':
				s.pos++
				continue
			}
			return
		}
		b, ok := s.getc()
		if !ok {
			return
		}
		switch b {
		case ' ', '\r', '\n', '\t':
		default:
			s.ungetc()
			return
		}
	}
}

// nameByte marks the ASCII bytes isNameByte accepts.
var nameByte = func() (t [256]bool) {
	for c := 0; c < utf8.RuneSelf; c++ {
		t[c] = isNameByte(byte(c))
	}
	return t
}()

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
	var b0, b1 byte
	trunc := 0
	check := false // data holds bytes that need the character check
	buf := s.text[:0]
Input:
	for {
		if s.err == nil {
			i := s.pos
			for i < s.end && !textSpecial[s.buf[i]] {
				i++
			}
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
		if quote < 0 && b0 == ']' && b1 == ']' && b == '>' {
			if cdata {
				trunc = 2
				break Input
			}
			s.err = s.syntaxError("unescaped ]]> not in CDATA section")
			s.text = buf
			return nil
		}
		if b == '<' && !cdata {
			if quote >= 0 {
				s.err = s.syntaxError("unescaped < inside quoted string")
				s.text = buf
				return nil
			}
			s.ungetc()
			break Input
		}
		if quote >= 0 && b == byte(quote) {
			break Input
		}
		if b == '&' && !cdata {
			var ok bool
			buf, ok = s.entity(buf)
			if !ok {
				s.text = buf
				return nil
			}
			check = true
			b0, b1 = 0, 0
			continue Input
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
		for rest := data; len(rest) > 0; {
			r, size := utf8.DecodeRune(rest)
			if r == utf8.RuneError && size == 1 {
				s.err = s.syntaxError("invalid UTF-8")
				return nil
			}
			rest = rest[size:]
			if !isInCharacterRange(r) {
				s.err = s.syntaxError(fmt.Sprintf("illegal character code %U", r))
				return nil
			}
		}
	}
	return data
}

// entity reads a reference whose '&' was just read and appends its text;
// false means an error, in s.err.
func (s *scanner) entity(buf []byte) ([]byte, bool) {
	b, ok := s.mustgetc()
	if !ok {
		return buf, false
	}
	var name []byte
	if b == '#' {
		if b, ok = s.mustgetc(); !ok {
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
		for '0' <= b && b <= '9' ||
			base == 16 && 'a' <= b && b <= 'f' ||
			base == 16 && 'A' <= b && b <= 'F' {
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
	s.ungetc()
	var nb [16]byte
	name, ok = s.readName(nb[:0])
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
	if isName(name) {
		switch string(name) {
		case "lt":
			return append(buf, '<'), true
		case "gt":
			return append(buf, '>'), true
		case "amp":
			return append(buf, '&'), true
		case "apos":
			return append(buf, '\''), true
		case "quot":
			return append(buf, '"'), true
		}
	}
	s.err = s.syntaxError("invalid character entity &" + string(name) + ";")
	return buf, false
}

func isInCharacterRange(r rune) bool {
	return r == 0x09 ||
		r == 0x0A ||
		r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}

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
	// Fast path: an ASCII name whose end is in the window.
	if s.err == nil && s.pos < s.end {
		i := s.pos
		if c := s.buf[i]; 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || c == '_' || c == ':' {
			i++
			for i < s.end && nameByte[s.buf[i]] {
				i++
			}
			if i < s.end && s.buf[i] < utf8.RuneSelf {
				b := s.buf[s.pos:i]
				s.pos = i
				return s.intern(b), true
			}
		}
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

// nsname reads a name with an optional prefix, as encoding/xml's nsname.
func (s *scanner) nsname() (xml.Name, bool) {
	str, ok := s.name()
	if !ok {
		return xml.Name{}, false
	}
	if strings.Count(str, ":") > 1 {
		return xml.Name{}, false
	}
	if space, local, ok := strings.Cut(str, ":"); ok && space != "" && local != "" {
		return xml.Name{Space: space, Local: local}, true
	}
	return xml.Name{Local: str}, true
}

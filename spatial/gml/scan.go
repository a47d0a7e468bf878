package gml

import (
	"bytes"
	"encoding/xml"
	"io"

	"github.com/geoflow/geoflow/spatial"
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
// Only the fields of its kind are set: the others hold whatever an earlier
// token left there.
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
	nsnames   *nameCache
	attrMemo  attrMemo
	// skipIDs leaves the value of every attribute named id (any namespace) empty,
	// checked but not built: set inside a feature, where no id but the feature's
	// own (read from its start tag, before) is used.
	skipIDs bool

	// tokStart is where the token being read began, textStart where the character data
	// or attribute value being read began (-1 outside one). Text longer than maxText
	// bytes ends the input with a *spatial.TooLargeError naming the limit maxLimit of
	// value limitMax; any token longer than maxTok (0: no limit) with one naming
	// max_feature_bytes. The reader checks complete tokens exactly; these stop one that
	// never ends.
	tokStart, textStart int64
	maxText, maxTok     int64
	maxLimit            string
	limitMax            int64
}

const scanWindow = 64 << 10

func newScanner(src io.Reader, charset func(string, io.Reader) (io.Reader, error)) *scanner {
	return &scanner{src: src, charset: charset, buf: make([]byte, scanWindow), text: make([]byte, 0, 256), names: make(map[string]string, 64), nsnames: new(nameCache), textStart: -1}
}

// offset is the input offset of the next byte, as Decoder.InputOffset.
func (s *scanner) offset() int64 { return s.base + int64(s.pos) }

// fill reads more input, keeping the last byte read so that ungetc works.
// It returns false when there is none, leaving the reason in s.srcErr.
func (s *scanner) fill() bool {
	if s.eof {
		return false
	}
	switch {
	case s.textStart >= 0 && s.maxText > 0 && s.offset()-s.textStart > s.maxText:
		s.eof, s.srcErr = true, &spatial.TooLargeError{Limit: s.maxLimit, Max: s.limitMax, Offset: s.textStart, Index: -1}
		return false
	case s.maxTok > 0 && s.offset()-s.tokStart > s.maxTok:
		s.eof, s.srcErr = true, &spatial.TooLargeError{Limit: "max_feature_bytes", Max: s.maxTok, Offset: s.tokStart, Index: -1}
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
	s.tokStart = s.offset()
	if s.needClose {
		s.needClose = false
		t.kind, t.end = tkEnd, s.toClose
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
		t.kind, t.text = tkText, data
		return t, nil
	}
	if b, ok = s.mustgetc(); !ok {
		return nil, s.err
	}
	switch b {
	case '/':
		return s.endTag()
	case '?':
		return s.procInst()
	case '!':
		return s.bang()
	}
	s.ungetc()
	return s.startTag()
}

// fail ends the input with a syntax error at the current position, unless
// reading already failed (s.err), and returns the error that ends it.
func (s *scanner) fail(msg string) error {
	if s.err == nil {
		s.err = s.syntaxError(msg)
	}
	return s.err
}

// endTag reads an end tag whose "</" was just read.
func (s *scanner) endTag() (*token, error) {
	name, ok := s.nsname(roleEnd)
	if !ok {
		return nil, s.fail("expected element name after </")
	}
	s.space()
	b, ok := s.mustgetc()
	if !ok {
		return nil, s.err
	}
	if b != '>' {
		return nil, s.fail("invalid characters between </" + name.Local + " and >")
	}
	s.tok.kind, s.tok.end = tkEnd, name
	return &s.tok, nil
}

// startTag reads a start tag whose "<" was just read, up to its ">" or
// "/>"; an empty element's end is the next token.
func (s *scanner) startTag() (*token, error) {
	name, ok := s.nsname(roleStart)
	if !ok {
		return nil, s.fail("expected element name after <")
	}
	attrs := s.attrs[:0]
	empty := false
	for {
		s.space()
		b, ok := s.mustgetc()
		if !ok {
			return nil, s.err
		}
		if b == '/' {
			empty = true
			if b, ok = s.mustgetc(); !ok {
				return nil, s.err
			}
			if b != '>' {
				return nil, s.fail("expected /> in element")
			}
			break
		}
		if b == '>' {
			break
		}
		s.ungetc()
		a, ok := s.attr()
		if !ok {
			return nil, s.err
		}
		attrs = append(attrs, a)
	}
	s.attrs = attrs
	if empty {
		s.needClose = true
		s.toClose = name
	}
	s.tok.kind, s.tok.start = tkStart, xml.StartElement{Name: name, Attr: attrs}
	return &s.tok, nil
}

// attr reads one name="value" of a start tag; false means an error, in
// s.err.
func (s *scanner) attr() (xml.Attr, bool) {
	var a xml.Attr
	var ok bool
	if a.Name, ok = s.nsname(roleAttr); !ok {
		s.fail("expected attribute name in element")
		return a, false
	}
	s.space()
	b, ok := s.mustgetc()
	if !ok {
		return a, false
	}
	if b != '=' {
		s.fail("attribute name without = in element")
		return a, false
	}
	s.space()
	if b, ok = s.mustgetc(); !ok {
		return a, false
	}
	if b != '"' && b != '\'' {
		s.fail("unquoted or missing attribute value in element")
		return a, false
	}
	data := s.readText(int(b), false)
	if data == nil {
		return a, false
	}
	if !s.skipIDs || a.Name.Local != "id" {
		a.Value = s.attrMemo.value(a.Name, data)
	}
	return a, true
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

// The scanner's markup other than elements: processing instructions (with
// the XML declaration's encoding switch), comments, CDATA sections and
// directives.

package gml

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

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
	s.tok.kind = tkComment
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
		return s.comment()
	case '[':
		return s.cdata()
	}
	return s.directive()
}

// comment reads a comment whose "<!-" was just read, refusing "--" inside
// it as encoding/xml does.
func (s *scanner) comment() (*token, error) {
	b, ok := s.mustgetc()
	if !ok {
		return nil, s.err
	}
	if b != '-' {
		return nil, s.fail("invalid sequence <!- not part of <!--")
	}
	var b0, b1 byte
	for {
		if b, ok = s.mustgetc(); !ok {
			return nil, s.err
		}
		if b0 == '-' && b1 == '-' {
			if b != '>' {
				return nil, s.fail(`invalid sequence "--" not allowed in comments`)
			}
			break
		}
		b0, b1 = b1, b
	}
	s.tok.kind = tkComment
	return &s.tok, nil
}

// cdata reads a CDATA section whose "<![" was just read.
func (s *scanner) cdata() (*token, error) {
	for i := 0; i < 6; i++ {
		b, ok := s.mustgetc()
		if !ok {
			return nil, s.err
		}
		if b != "CDATA["[i] {
			return nil, s.fail("invalid <![ sequence")
		}
	}
	data := s.readText(-1, true)
	if data == nil {
		return nil, s.err
	}
	s.tok.kind, s.tok.text = tkText, data
	return &s.tok, nil
}

// directive skips a directive (<!DOCTYPE ...>) whose "<!" was just read,
// with encoding/xml's rules for quotes, nesting and comments inside.
func (s *scanner) directive() (*token, error) {
	inquote := uint8(0)
	depth := 0
	for {
		b, ok := s.mustgetc()
		if !ok {
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
			var comment bool
			if b, comment, ok = s.directiveCommentOpen(); !ok {
				return nil, s.err
			}
			if !comment {
				depth++
				goto handleB
			}
			if !s.skipDirectiveComment() {
				return nil, s.err
			}
		}
	}
	s.tok.kind = tkComment
	return &s.tok, nil
}

// directiveCommentOpen reads on after a '<' inside a directive to decide
// whether it opens a comment ("<!--"). When it does not, b is the first
// byte that differs, which the directive handles in turn. false means an
// error, in s.err.
func (s *scanner) directiveCommentOpen() (b byte, comment, ok bool) {
	const open = "!--"
	for i := 0; i < len(open); i++ {
		if b, ok = s.mustgetc(); !ok {
			return b, false, false
		}
		if b != open[i] {
			return b, false, true
		}
	}
	return b, true, true
}

// skipDirectiveComment reads up to the "-->" of a comment inside a
// directive, where "--" may occur; false means an error, in s.err.
func (s *scanner) skipDirectiveComment() bool {
	var b0, b1 byte
	for {
		b, ok := s.mustgetc()
		if !ok {
			return false
		}
		if b0 == '-' && b1 == '-' && b == '>' {
			return true
		}
		b0, b1 = b1, b
	}
}

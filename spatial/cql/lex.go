package cql

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokKind is the kind of a lexical token.
type tokKind int

const (
	tokEOF    tokKind = iota
	tokIdent          // a bare name: a property or a keyword
	tokQuoted         // a "quoted" property name
	tokString         // a 'string' literal, quotes removed and '' undone
	tokNumber         // an unsigned number literal
	tokOp             // = <> != < <= > >= ( ) , + -
)

// token is one lexical token; pos is the 1-based column (in characters) where it starts.
type token struct {
	kind tokKind
	text string
	pos  int
}

// lexer cuts an expression into tokens.
type lexer struct {
	src  string
	off  int // byte offset
	col  int // 1-based column of off
	toks []token
}

// lex returns the tokens of src, ending with tokEOF.
func lex(src string) ([]token, error) {
	l := &lexer{src: src, col: 1}
	for {
		l.skipSpace()
		if l.off >= len(l.src) {
			l.toks = append(l.toks, token{kind: tokEOF, pos: l.col})
			return l.toks, nil
		}
		if err := l.next(); err != nil {
			return nil, err
		}
	}
}

func (l *lexer) peek() rune {
	if l.off >= len(l.src) {
		return -1
	}
	r, _ := utf8.DecodeRuneInString(l.src[l.off:])
	return r
}

func (l *lexer) advance() rune {
	r, n := utf8.DecodeRuneInString(l.src[l.off:])
	l.off += n
	l.col++
	return r
}

func (l *lexer) skipSpace() {
	for l.off < len(l.src) && unicode.IsSpace(l.peek()) {
		l.advance()
	}
}

// next reads one token.
func (l *lexer) next() error {
	start, col := l.off, l.col
	r := l.peek()
	switch {
	case r == utf8.RuneError && len(l.src[l.off:]) > 0:
		if _, n := utf8.DecodeRuneInString(l.src[l.off:]); n <= 1 {
			return &SyntaxError{Pos: col, Msg: "invalid UTF-8"}
		}
	case r == '\'':
		s, err := l.quoted('\'')
		if err != nil {
			return err
		}
		l.toks = append(l.toks, token{kind: tokString, text: s, pos: col})
		return nil
	case r == '"':
		s, err := l.quoted('"')
		if err != nil {
			return err
		}
		if s == "" {
			return &SyntaxError{Pos: col, Msg: "empty quoted property name"}
		}
		l.toks = append(l.toks, token{kind: tokQuoted, text: s, pos: col})
		return nil
	case r >= '0' && r <= '9' || r == '.' && l.off+1 < len(l.src) && isDigit(l.src[l.off+1]):
		return l.number()
	case isIdentStart(r):
		for l.off < len(l.src) && isIdentPart(l.peek()) {
			l.advance()
		}
		l.toks = append(l.toks, token{kind: tokIdent, text: l.src[start:l.off], pos: col})
		return nil
	}
	return l.operator(col)
}

// operator reads a punctuation token.
func (l *lexer) operator(col int) error {
	r := l.advance()
	op := string(r)
	switch r {
	case '=', '(', ')', ',', '+', '-':
	case '<':
		if n := l.peek(); n == '=' || n == '>' {
			op += string(l.advance())
		}
	case '>':
		if l.peek() == '=' {
			op += string(l.advance())
		}
	case '!':
		if l.peek() != '=' {
			return &SyntaxError{Pos: col, Msg: "unexpected '!' (not equal is <>)"}
		}
		l.advance()
		op = "<>"
	default:
		return &SyntaxError{Pos: col, Msg: fmt.Sprintf("unexpected character %q", r)}
	}
	l.toks = append(l.toks, token{kind: tokOp, text: op, pos: col})
	return nil
}

// quoted reads a literal delimited by q, in which q doubled stands for itself.
func (l *lexer) quoted(q rune) (string, error) {
	col := l.col
	l.advance()
	var b strings.Builder
	for {
		if l.off >= len(l.src) {
			what := "string"
			if q == '"' {
				what = "quoted name"
			}
			return "", &SyntaxError{Pos: col, Msg: "unterminated " + what}
		}
		r := l.advance()
		if r == q {
			if l.peek() != q {
				return b.String(), nil
			}
			l.advance()
		}
		b.WriteRune(r)
	}
}

// number reads digits, a fraction and an exponent.
func (l *lexer) number() error {
	start, col := l.off, l.col
	digits := func() {
		for l.off < len(l.src) && isDigit(l.src[l.off]) {
			l.advance()
		}
	}
	digits()
	if l.peek() == '.' {
		l.advance()
		digits()
	}
	if r := l.peek(); r == 'e' || r == 'E' {
		l.advance()
		if r := l.peek(); r == '+' || r == '-' {
			l.advance()
		}
		if l.off >= len(l.src) || !isDigit(l.src[l.off]) {
			return &SyntaxError{Pos: col, Msg: fmt.Sprintf("malformed number %q", l.src[start:l.off])}
		}
		digits()
	}
	if isIdentPart(l.peek()) {
		return &SyntaxError{Pos: col, Msg: fmt.Sprintf("malformed number %q", l.src[start:l.off]+string(l.peek()))}
	}
	l.toks = append(l.toks, token{kind: tokNumber, text: l.src[start:l.off], pos: col})
	return nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isIdentStart(r rune) bool { return r == '_' || unicode.IsLetter(r) }

func isIdentPart(r rune) bool {
	return r == '_' || r == '.' || r == ':' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// Package sqlscript reads the SQL scripts of a flow's SQL steps as PostgreSQL and SQLite
// read them: tokens that know quotes, "identifiers", -- and /* */ comments, PostgreSQL's
// dollar quoting ($$ and $tag$) and each database's parameters; statements split at the
// semicolons that end them (not those in a string, a comment, a dollar-quoted body, or
// the BEGIN ... END body of a CREATE TRIGGER or a PostgreSQL BEGIN ATOMIC function); and
// the questions asked of a statement before it runs: its parameters, the functions it
// calls, whether it would end the transaction it runs in. It runs nothing.
package sqlscript

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Dialect is the SQL a script is read as.
type Dialect int

// The dialects: PostgreSQL (the PostGIS store) and SQLite (the GeoPackage store).
const (
	PostgreSQL Dialect = iota + 1
	SQLite
)

func (d Dialect) String() string {
	switch d {
	case PostgreSQL:
		return "PostgreSQL"
	case SQLite:
		return "SQLite"
	}
	return fmt.Sprintf("Dialect(%d)", int(d))
}

// Kind is what a token is.
type Kind int

// The kinds of token. Comments and white space are not tokens.
const (
	Word   Kind = iota + 1 // an identifier or keyword, unquoted
	Quoted                 // a quoted identifier: "x" (SQLite also [x] and `x`)
	String                 // a string constant: 'x', E'x' (PostgreSQL), $$x$$, $tag$x$tag$
	Number                 // a numeric constant
	Param                  // a parameter: @name; PostgreSQL $1; SQLite ?, ?1, :name, $name
	Op                     // an operator: one or more of + - * / < > = ~ ! @ # % ^ & | ` ?
	Punct                  // ( ) [ ] , ; . : ::
)

// Token is one token of a script, by its byte offsets in the script.
type Token struct {
	Kind       Kind
	Start, End int
	Text       string
}

// Is tells whether t is the unquoted word w, in any case.
func (t Token) Is(w string) bool { return t.Kind == Word && strings.EqualFold(t.Text, w) }

// ScanError is a script that does not tokenize: a string, quoted identifier, dollar
// quote or comment that is never closed. Offset is where it opens.
type ScanError struct {
	Offset int
	Msg    string
}

func (e *ScanError) Error() string { return e.Msg }

// Scan returns the tokens of src read in dialect d.
func Scan(src string, d Dialect) ([]Token, error) {
	s := &scanner{src: src, d: d}
	var out []Token
	for {
		t, ok, err := s.next()
		if err != nil {
			return out, err
		}
		if !ok {
			return out, nil
		}
		out = append(out, t)
	}
}

type scanner struct {
	src string
	d   Dialect
	pos int
}

func (s *scanner) peek(i int) byte {
	if s.pos+i < len(s.src) {
		return s.src[s.pos+i]
	}
	return 0
}

// next returns the next token; ok is false at the end of the script.
func (s *scanner) next() (t Token, ok bool, err error) {
	if err := s.skipSpace(); err != nil {
		return Token{}, false, err
	}
	if s.pos >= len(s.src) {
		return Token{}, false, nil
	}
	start := s.pos
	kind, err := s.token()
	if err != nil {
		return Token{}, false, err
	}
	return Token{Kind: kind, Start: start, End: s.pos, Text: s.src[start:s.pos]}, true, nil
}

// skipSpace skips white space and comments.
func (s *scanner) skipSpace() error {
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			s.pos++
		case c == '-' && s.peek(1) == '-':
			for s.pos < len(s.src) && s.src[s.pos] != '\n' {
				s.pos++
			}
		case c == '/' && s.peek(1) == '*':
			if err := s.blockComment(); err != nil {
				return err
			}
		default:
			return nil
		}
	}
	return nil
}

// blockComment skips a /* */ comment: nested in PostgreSQL; in SQLite, not nested and
// allowed to run to the end of the script.
func (s *scanner) blockComment() error {
	start, depth := s.pos, 0
	for s.pos < len(s.src) {
		switch {
		case s.src[s.pos] == '/' && s.peek(1) == '*' && (depth == 0 || s.d == PostgreSQL):
			depth++
			s.pos += 2
		case s.src[s.pos] == '*' && s.peek(1) == '/':
			depth--
			s.pos += 2
			if depth == 0 {
				return nil
			}
		default:
			s.pos++
		}
	}
	if s.d == SQLite {
		return nil
	}
	return &ScanError{Offset: start, Msg: "a /* comment is never closed with */"}
}

// token reads the token at s.pos.
func (s *scanner) token() (Kind, error) {
	c := s.src[s.pos]
	switch {
	case c == '\'':
		return String, s.quoted('\'', false, "a string ('...') is never closed")
	case c == '"':
		return Quoted, s.quoted('"', false, `a quoted identifier ("...") is never closed`)
	case c == '`' && s.d == SQLite:
		return Quoted, s.quoted('`', false, "a quoted identifier (`...`) is never closed")
	case c == '[' && s.d == SQLite:
		end := strings.IndexByte(s.src[s.pos:], ']')
		if end < 0 {
			return 0, &ScanError{Offset: s.pos, Msg: "a quoted identifier ([...]) is never closed"}
		}
		s.pos += end + 1
		return Quoted, nil
	case c == '$':
		return s.dollar()
	case s.d == SQLite && (c == '@' || c == ':') && identStart(s.peek(1)):
		s.pos++
		s.ident()
		return Param, nil
	case s.d == SQLite && c == '?':
		s.pos++
		for isDigit(s.peek(0)) {
			s.pos++
		}
		return Param, nil
	case isDigit(c) || (c == '.' && isDigit(s.peek(1))):
		s.number()
		return Number, nil
	case identStart(c):
		return s.word()
	case c == ':' && s.peek(1) == ':':
		s.pos += 2
		return Punct, nil
	case strings.IndexByte("()[],;.:", c) >= 0:
		s.pos++
		return Punct, nil
	case s.opChar(c):
		return s.op(), nil
	}
	_, n := utf8.DecodeRuneInString(s.src[s.pos:])
	s.pos += n
	return Punct, nil
}

// word reads an identifier or keyword, or a string with a prefix: E'...' (backslash
// escapes, PostgreSQL), X'...', B'...', N'...'.
func (s *scanner) word() (Kind, error) {
	start := s.pos
	s.ident()
	if s.peek(0) == '\'' && s.pos-start == 1 {
		switch s.src[start] {
		case 'e', 'E':
			if s.d == PostgreSQL {
				return String, prefixed(start, s.quoted('\'', true, "a string (E'...') is never closed"))
			}
		case 'x', 'X', 'b', 'B', 'n', 'N':
			return String, prefixed(start, s.quoted('\'', false, "a string ('...') is never closed"))
		}
	}
	return Word, nil
}

// prefixed moves a string's error to its prefix (the E of E'...').
func prefixed(start int, err error) error {
	if se, ok := err.(*ScanError); ok {
		se.Offset = start
	}
	return err
}

// quoted reads a quoted token opening at s.pos, whose quote is doubled inside it, and,
// with backslash, escaped by a backslash too.
func (s *scanner) quoted(q byte, backslash bool, msg string) error {
	start := s.pos
	s.pos++
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		switch {
		case backslash && c == '\\':
			s.pos += 2
		case c == q && s.peek(1) == q:
			s.pos += 2
		case c == q:
			s.pos++
			return nil
		default:
			s.pos++
		}
	}
	s.pos = len(s.src)
	return &ScanError{Offset: start, Msg: msg}
}

// dollar reads what starts with $: in PostgreSQL a dollar-quoted string ($$...$$,
// $tag$...$tag$) or a positional parameter ($1); in SQLite a parameter ($name).
func (s *scanner) dollar() (Kind, error) {
	start := s.pos
	if s.d == SQLite {
		s.pos++
		s.ident()
		if s.pos == start+1 {
			return Punct, nil
		}
		return Param, nil
	}
	if isDigit(s.peek(1)) {
		s.pos++
		for isDigit(s.peek(0)) {
			s.pos++
		}
		return Param, nil
	}
	s.pos++
	if identStart(s.peek(0)) {
		for identStart(s.peek(0)) || isDigit(s.peek(0)) {
			s.pos++
		}
	}
	if s.peek(0) != '$' {
		s.pos = start + 1
		return Punct, nil // not a dollar quote: PostgreSQL refuses a lone $
	}
	s.pos++
	tag := s.src[start:s.pos]
	end := strings.Index(s.src[s.pos:], tag)
	if end < 0 {
		s.pos = len(s.src)
		return 0, &ScanError{Offset: start, Msg: fmt.Sprintf("a dollar-quoted string (%s...%s) is never closed", tag, tag)}
	}
	s.pos += end + len(tag)
	return String, nil
}

// ident reads the rest of an identifier.
func (s *scanner) ident() {
	for s.pos < len(s.src) && identPart(s.src[s.pos]) {
		s.pos++
	}
}

func (s *scanner) number() {
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		switch {
		case isDigit(c) || c == '.' || c == '_' || isLetter(c):
			if (c == 'e' || c == 'E') && (s.peek(1) == '+' || s.peek(1) == '-') {
				s.pos++
			}
			s.pos++
		default:
			return
		}
	}
}

// opChar tells the characters operators are made of. @ is one in PostgreSQL only
// (SQLite reads @name as a parameter), and so are #, ^, ` and ?.
func (s *scanner) opChar(c byte) bool {
	if s.d == PostgreSQL {
		return strings.IndexByte("+-*/<>=~!@#%^&|`?", c) >= 0
	}
	return strings.IndexByte("+-*/<>=~!%&|", c) >= 0
}

// op reads an operator: in PostgreSQL as many operator characters as follow, up to a
// comment; a lone @ directly before a name is the parameter @name. SQLite's operators
// are one or two characters, read here as the run of them (the split does not care).
func (s *scanner) op() Kind {
	if s.d == PostgreSQL && s.src[s.pos] == '@' && identStart(s.peek(1)) {
		s.pos++
		s.ident()
		return Param
	}
	for s.pos < len(s.src) && s.opChar(s.src[s.pos]) {
		if (s.src[s.pos] == '-' && s.peek(1) == '-') || (s.src[s.pos] == '/' && s.peek(1) == '*') {
			break
		}
		s.pos++
	}
	return Op
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// identStart tells the bytes an unquoted identifier starts with: letters, _, and every
// byte of a multi-byte UTF-8 character.
func identStart(c byte) bool { return isLetter(c) || c == '_' || c >= 0x80 }

func identPart(c byte) bool { return identStart(c) || isDigit(c) || c == '$' }

// Position returns the 1-based line and column (in characters) of byte offset off in src.
func Position(src string, off int) (line, col int) {
	off = min(max(off, 0), len(src))
	line = 1 + strings.Count(src[:off], "\n")
	lineStart := strings.LastIndexByte(src[:off], '\n') + 1
	return line, 1 + utf8.RuneCountInString(src[lineStart:off])
}

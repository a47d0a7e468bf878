package sqlscript

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// Params returns the statement's parameter tokens, in order (a name may come more than
// once). A Param token's Text is as written: "@run_id", "$1", "?", ":name".
func (st Statement) Params() []Token {
	var out []Token
	for _, t := range st.Tokens {
		if t.Kind == Param {
			out = append(out, t)
		}
	}
	return out
}

// Glued returns the words of st written straight after an operator that ends in @
// ("=@run_id", "-@bbox_xmin"): PostgreSQL reads "=@" as one operator, so the word is
// not the parameter it looks like. It finds none in SQLite, which reads them apart.
func (st Statement) Glued() []Token {
	var out []Token
	for i, t := range st.Tokens {
		if t.Kind == Op && strings.HasSuffix(t.Text, "@") && i+1 < len(st.Tokens) {
			if n := st.Tokens[i+1]; n.Kind == Word && n.Start == t.End {
				out = append(out, n)
			}
		}
	}
	return out
}

// EndsTransaction returns the token that starts a statement ending or opening a
// transaction (BEGIN, START TRANSACTION, COMMIT, END, ROLLBACK but not ROLLBACK TO a
// savepoint, ABORT, PREPARE TRANSACTION), or false: a step's statements run inside one
// transaction that is not theirs to end. Savepoints are theirs.
func (st Statement) EndsTransaction() (Token, bool) {
	if len(st.Tokens) == 0 {
		return Token{}, false
	}
	first := st.Tokens[0]
	second := func(w string) bool { return len(st.Tokens) > 1 && st.Tokens[1].Is(w) }
	switch {
	case first.Is("begin"), first.Is("commit"), first.Is("end"), first.Is("abort"):
		return first, true
	case first.Is("start") && second("transaction"), first.Is("prepare") && second("transaction"):
		return first, true
	case first.Is("rollback"):
		for _, t := range st.Tokens[1:min(len(st.Tokens), 4)] {
			if t.Is("to") {
				return Token{}, false
			}
		}
		return first, true
	}
	return Token{}, false
}

// Calls returns the words of st that SQLite would read as calls of a scalar or aggregate
// function: a name followed by ( that is not a keyword, a table, index, view or CTE
// name, a column's type, or a table-valued function after FROM or JOIN. It reads
// SQLite's grammar; it errs towards leaving a name out.
func (st Statement) Calls() []Token {
	toks := st.Tokens
	index := len(toks) > 2 && toks[0].Is("create") && (toks[1].Is("index") || toks[2].Is("index"))
	var out []Token
	for i, t := range toks {
		if t.Kind != Word || i+1 >= len(toks) || toks[i+1].Text != "(" || toks[i+1].Kind != Punct || sqliteKeywords[strings.ToUpper(t.Text)] {
			continue
		}
		if i > 0 && namesNext(toks[i-1], index) {
			continue
		}
		if cteColumns(toks, i+1) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// namesNext tells whether the token before a name followed by ( makes the name
// something other than a function: a qualifier (schema.table), a column's name (the
// name is its type), or a keyword that names a table, index, view or type next.
func namesNext(prev Token, createIndex bool) bool {
	switch prev.Kind {
	case Quoted:
		return true
	case Punct:
		return prev.Text == "."
	case Word:
		up := strings.ToUpper(prev.Text)
		if !sqliteKeywords[up] {
			return true // a column's name: what follows is its type
		}
		switch up {
		case "TABLE", "INTO", "REFERENCES", "INDEX", "VIEW", "EXISTS", "TRIGGER", "AS", "USING", "FROM", "JOIN", "UPDATE", "TO", "WITH", "RECURSIVE":
			return true
		case "ON":
			return createIndex
		}
	}
	return false
}

// cteColumns tells whether the parenthesis at open closes before AS ( or AS [NOT]
// MATERIALIZED: the name before it is a common table expression's, with its columns.
func cteColumns(toks []Token, open int) bool {
	depth := 0
	for j := open; j < len(toks); j++ {
		switch {
		case toks[j].Kind == Punct && toks[j].Text == "(":
			depth++
		case toks[j].Kind == Punct && toks[j].Text == ")":
			depth--
			if depth == 0 {
				if j+2 >= len(toks) || !toks[j+1].Is("as") {
					return false
				}
				n := toks[j+2]
				return (n.Kind == Punct && n.Text == "(") || n.Is("not") || n.Is("materialized")
			}
		}
	}
	return false
}

// Rewrite returns the statement's text with the tokens repl returns a replacement for
// replaced, and the map from byte offsets in that text back to offsets in the script.
func (st Statement) Rewrite(repl func(Token) (string, bool)) (string, Map) {
	var b strings.Builder
	m := Map{base: st.Start}
	at := st.Start
	for _, t := range st.Tokens {
		r, ok := repl(t)
		if !ok {
			continue
		}
		b.WriteString(st.Text[at-st.Start : t.Start-st.Start])
		m.segs = append(m.segs, seg{out: b.Len(), in: t.Start, outLen: len(r)})
		b.WriteString(r)
		at = t.End
		m.segs = append(m.segs, seg{out: b.Len(), in: t.End})
	}
	b.WriteString(st.Text[at-st.Start:])
	return b.String(), m
}

// Map maps byte offsets in a rewritten statement back to offsets in its script.
type Map struct {
	base int
	segs []seg // ascending by out
}

// seg says that from out on, the rewritten text is the script's from in on; a
// replacement (outLen > 0) maps as a whole to its token's start.
type seg struct{ out, in, outLen int }

// Script returns the script offset of byte offset off of the rewritten text.
func (m Map) Script(off int) int {
	// The last segment starting at or before off.
	i := sort.Search(len(m.segs), func(i int) bool { return m.segs[i].out > off }) - 1
	if i < 0 {
		return m.base + off
	}
	s := m.segs[i]
	if s.outLen > 0 && off < s.out+s.outLen {
		return s.in
	}
	return s.in + off - s.out
}

// CharOffset returns the byte offset of the 1-based character position pos in text, as
// PostgreSQL reports an error's position.
func CharOffset(text string, pos int) int {
	off := 0
	for i := 1; i < pos && off < len(text); i++ {
		_, n := utf8.DecodeRuneInString(text[off:])
		off += n
	}
	return off
}

// sqliteKeywords are SQLite's keywords (https://sqlite.org/lang_keywords.html).
var sqliteKeywords = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range strings.Fields(`ABORT ACTION ADD AFTER ALL ALTER ALWAYS ANALYZE AND AS ASC ATTACH
		AUTOINCREMENT BEFORE BEGIN BETWEEN BY CASCADE CASE CAST CHECK COLLATE COLUMN COMMIT CONFLICT
		CONSTRAINT CREATE CROSS CURRENT CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP DATABASE DEFAULT
		DEFERRABLE DEFERRED DELETE DESC DETACH DISTINCT DO DROP EACH ELSE END ESCAPE EXCEPT EXCLUDE
		EXCLUSIVE EXISTS EXPLAIN FAIL FILTER FIRST FOLLOWING FOR FOREIGN FROM FULL GENERATED GLOB GROUP
		GROUPS HAVING IF IGNORE IMMEDIATE IN INDEX INDEXED INITIALLY INNER INSERT INSTEAD INTERSECT INTO
		IS ISNULL JOIN KEY LAST LEFT LIKE LIMIT MATCH MATERIALIZED NATURAL NO NOT NOTHING NOTNULL NULL
		NULLS OF OFFSET ON OR ORDER OTHERS OUTER OVER PARTITION PLAN PRAGMA PRECEDING PRIMARY QUERY RAISE
		RANGE RECURSIVE REFERENCES REGEXP REINDEX RELEASE RENAME REPLACE RESTRICT RETURNING RIGHT ROLLBACK
		ROW ROWS SAVEPOINT SELECT SET TABLE TEMP TEMPORARY THEN TIES TO TRANSACTION TRIGGER UNBOUNDED
		UNION UNIQUE UPDATE USING VACUUM VALUES VIEW VIRTUAL WHEN WHERE WINDOW WITH WITHOUT`) {
		m[k] = true
	}
	return m
}()

// Verb is what the statement does, upper-cased: its first word, or for a WITH the
// statement after its common table expressions (SELECT, INSERT, UPDATE, DELETE, REPLACE,
// MERGE or VALUES). Rows affected are counted by it: a SELECT returns rows, it does not
// change them.
func (st Statement) Verb() string {
	if len(st.Tokens) == 0 || st.Tokens[0].Kind != Word {
		return ""
	}
	first := strings.ToUpper(st.Tokens[0].Text)
	if first != "WITH" {
		return first
	}
	depth := 0
	for _, t := range st.Tokens[1:] {
		switch {
		case t.Kind == Punct && t.Text == "(":
			depth++
		case t.Kind == Punct && t.Text == ")":
			depth--
		case depth == 0 && t.Kind == Word:
			switch v := strings.ToUpper(t.Text); v {
			case "SELECT", "INSERT", "UPDATE", "DELETE", "REPLACE", "MERGE", "VALUES":
				return v
			}
		}
	}
	return first
}

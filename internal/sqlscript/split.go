package sqlscript

import "strings"

// Statement is one statement of a script.
type Statement struct {
	// Start and End are the byte offsets of Text in the script: from the statement's first
	// token to its last, the semicolon that ends it left out.
	Start, End int
	Text       string
	// Tokens are the statement's tokens, by their offsets in the script.
	Tokens []Token
}

// Split reads src in dialect d and returns its statements, in order, leaving out empty
// ones (a stray ;, a comment alone). A semicolon ends a statement unless it is inside a
// string, a quoted identifier, a comment, a dollar-quoted body, parentheses (a
// PostgreSQL rule's commands), or the BEGIN ... END body of a CREATE TRIGGER, FUNCTION
// or PROCEDURE (SQLite's triggers, PostgreSQL's BEGIN ATOMIC), where CASE ... END nests.
// A last statement needs no semicolon. It fails with a *ScanError when a quote or comment
// is never closed.
func Split(src string, d Dialect) ([]Statement, error) {
	toks, err := Scan(src, d)
	if err != nil {
		return nil, err
	}
	var out []Statement
	var cur []Token
	var b blocks
	flush := func() {
		if len(cur) > 0 {
			start, end := cur[0].Start, cur[len(cur)-1].End
			out = append(out, Statement{Start: start, End: end, Text: src[start:end], Tokens: cur})
		}
		cur, b = nil, blocks{}
	}
	for _, t := range toks {
		if t.Kind == Punct && t.Text == ";" && b.closed() {
			flush()
			continue
		}
		b.see(t, len(cur) == 0)
		cur = append(cur, t)
	}
	flush()
	return out, nil
}

// blocks follows what keeps a semicolon from ending a statement: parentheses, and the
// BEGIN ... END body of a routine or trigger being created.
type blocks struct {
	create, routine bool // the statement is a CREATE; of a trigger, function or procedure
	parens, body    int  // open parentheses; open BEGIN or CASE in the body
}

func (b *blocks) closed() bool { return b.parens <= 0 && b.body <= 0 }

func (b *blocks) see(t Token, first bool) {
	switch {
	case first:
		b.create = t.Is("create")
	case t.Kind == Punct && t.Text == "(":
		b.parens++
	case t.Kind == Punct && t.Text == ")":
		b.parens--
	case t.Kind != Word:
	case b.create && !b.routine && (t.Is("trigger") || t.Is("function") || t.Is("procedure")):
		b.routine = true
	case b.routine && t.Is("begin"):
		b.body++
	case b.body > 0 && t.Is("case"):
		b.body++
	case b.body > 0 && t.Is("end"):
		b.body--
	}
}

// Line is the 1-based line of src the statement starts on.
func (st Statement) Line(src string) int {
	return 1 + strings.Count(src[:st.Start], "\n")
}

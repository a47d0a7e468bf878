package cql

import (
	"fmt"
	"strconv"
	"strings"
)

// SyntaxError is an expression that does not parse; Pos is the 1-based column (in
// characters) of the expression where the problem is.
type SyntaxError struct {
	Pos int
	Msg string
}

// Error names the column and the problem.
func (e *SyntaxError) Error() string { return fmt.Sprintf("column %d: %s", e.Pos, e.Msg) }

// maxDepth bounds nesting, so that a hostile expression cannot exhaust the stack.
const maxDepth = 200

// node is a predicate of the tree; operand is a value in it.
type node interface{ isNode() }

type (
	logic struct {
		and  bool
		l, r node
	}
	not     struct{ x node }
	compare struct {
		op   string // = <> < <= > >=
		l, r operand
	}
	like struct {
		x       operand
		pattern operand
		neg     bool
	}
	in struct {
		x    operand
		list []operand
		neg  bool
	}
	between struct {
		x, lo, hi operand
		neg       bool
	}
	isNull struct {
		x   operand
		neg bool
	}
	// truth is an operand used as a predicate: a boolean property or literal.
	truth struct{ x operand }
)

func (logic) isNode()   {}
func (not) isNode()     {}
func (compare) isNode() {}
func (like) isNode()    {}
func (in) isNode()      {}
func (between) isNode() {}
func (isNull) isNode()  {}
func (truth) isNode()   {}

// operand is a property or a literal.
type operand struct {
	prop string // property name, "" for a literal
	lit  Type   // the literal's kind: Text, Number, Boolean, Date or Timestamp
	text string // the literal as written (numbers, dates) or its value (strings)
	pos  int
}

// parser is a recursive-descent parser over the tokens.
type parser struct {
	toks  []token
	i     int
	depth int
}

// Parse parses a CQL2 Text filter (the subset Expr documents). Its errors are
// *SyntaxError.
func Parse(src string) (*Expr, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	if p.peek().kind == tokEOF {
		return nil, &SyntaxError{Pos: 1, Msg: "empty expression"}
	}
	root, err := p.or()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, p.unexpected(t, "AND, OR or the end")
	}
	return &Expr{root: root}, nil
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) take() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

// keyword says whether t is the (case-insensitive) keyword kw.
func keyword(t token, kw string) bool { return t.kind == tokIdent && strings.EqualFold(t.text, kw) }

func (p *parser) accept(kw string) bool {
	if keyword(p.peek(), kw) {
		p.i++
		return true
	}
	return false
}

func (p *parser) acceptOp(op string) bool {
	if t := p.peek(); t.kind == tokOp && t.text == op {
		p.i++
		return true
	}
	return false
}

func (p *parser) unexpected(t token, want string) error {
	if t.kind == tokEOF {
		return &SyntaxError{Pos: t.pos, Msg: "unexpected end of expression, expected " + want}
	}
	return &SyntaxError{Pos: t.pos, Msg: fmt.Sprintf("unexpected %s, expected %s", describe(t), want)}
}

func describe(t token) string {
	switch t.kind {
	case tokString:
		return "string '" + t.text + "'"
	case tokQuoted:
		return `"` + t.text + `"`
	}
	return strconv.Quote(t.text)
}

func (p *parser) or() (node, error) {
	l, err := p.and()
	for err == nil && p.accept("OR") {
		var r node
		if r, err = p.and(); err == nil {
			l = logic{and: false, l: l, r: r}
		}
	}
	return l, err
}

func (p *parser) and() (node, error) {
	l, err := p.not()
	for err == nil && p.accept("AND") {
		var r node
		if r, err = p.not(); err == nil {
			l = logic{and: true, l: l, r: r}
		}
	}
	return l, err
}

func (p *parser) not() (node, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, &SyntaxError{Pos: p.peek().pos, Msg: fmt.Sprintf("nested more than %d deep", maxDepth)}
	}
	if p.accept("NOT") {
		x, err := p.not()
		return not{x: x}, err
	}
	if p.acceptOp("(") {
		x, err := p.or()
		if err != nil {
			return nil, err
		}
		if !p.acceptOp(")") {
			return nil, p.unexpected(p.peek(), "')'")
		}
		return x, nil
	}
	return p.predicate()
}

// predicate is an operand followed by what is said of it.
func (p *parser) predicate() (node, error) {
	x, err := p.operand()
	if err != nil {
		return nil, err
	}
	t := p.peek()
	if t.kind == tokOp {
		switch t.text {
		case "=", "<>", "<", "<=", ">", ">=":
			p.i++
			r, err := p.operand()
			return compare{op: t.text, l: x, r: r}, err
		}
	}
	if p.accept("IS") {
		neg := p.accept("NOT")
		if !p.accept("NULL") {
			return nil, p.unexpected(p.peek(), "NULL")
		}
		return isNull{x: x, neg: neg}, nil
	}
	neg := p.accept("NOT")
	switch {
	case p.accept("LIKE"):
		pat, err := p.operand()
		if err == nil && pat.prop == "" && pat.lit != Text {
			err = &SyntaxError{Pos: pat.pos, Msg: "LIKE needs a string pattern"}
		}
		return like{x: x, pattern: pat, neg: neg}, err
	case p.accept("IN"):
		list, err := p.list()
		return in{x: x, list: list, neg: neg}, err
	case p.accept("BETWEEN"):
		lo, err := p.operand()
		if err != nil {
			return nil, err
		}
		if !p.accept("AND") {
			return nil, p.unexpected(p.peek(), "AND of BETWEEN")
		}
		hi, err := p.operand()
		return between{x: x, lo: lo, hi: hi, neg: neg}, err
	case neg:
		return nil, p.unexpected(p.peek(), "LIKE, IN or BETWEEN after NOT")
	}
	return truth{x: x}, nil
}

// list is the parenthesised list of IN.
func (p *parser) list() ([]operand, error) {
	if !p.acceptOp("(") {
		return nil, p.unexpected(p.peek(), "'(' of the IN list")
	}
	var list []operand
	for {
		o, err := p.operand()
		if err != nil {
			return nil, err
		}
		list = append(list, o)
		if p.acceptOp(")") {
			return list, nil
		}
		if !p.acceptOp(",") {
			return nil, p.unexpected(p.peek(), "',' or ')'")
		}
	}
}

// spatialFuncs are CQL2's spatial and temporal predicates, refused with a reason.
var spatialFuncs = []string{"S_INTERSECTS", "S_EQUALS", "S_DISJOINT", "S_TOUCHES", "S_WITHIN", "S_OVERLAPS", "S_CROSSES",
	"S_CONTAINS", "INTERSECTS", "WITHIN", "CONTAINS", "BBOX", "DWITHIN", "T_INTERSECTS", "T_BEFORE", "T_AFTER", "T_DURING"}

// operand reads a property name or a literal.
func (p *parser) operand() (operand, error) {
	t := p.take()
	switch t.kind {
	case tokQuoted:
		return operand{prop: t.text, pos: t.pos}, nil
	case tokString:
		return operand{lit: Text, text: t.text, pos: t.pos}, nil
	case tokNumber:
		return operand{lit: Number, text: t.text, pos: t.pos}, nil
	case tokOp:
		if t.text == "-" || t.text == "+" {
			if n := p.peek(); n.kind == tokNumber {
				p.i++
				text := n.text
				if t.text == "-" {
					text = "-" + text
				}
				return operand{lit: Number, text: text, pos: t.pos}, nil
			}
		}
	case tokIdent:
		return p.named(t)
	}
	return operand{}, p.unexpected(t, "a property name or a value")
}

// named reads an operand that starts with a name: a keyword literal, DATE('...'),
// TIMESTAMP('...') or a property.
func (p *parser) named(t token) (operand, error) {
	up := strings.ToUpper(t.text)
	switch up {
	case "TRUE", "FALSE":
		return operand{lit: Boolean, text: strings.ToLower(up), pos: t.pos}, nil
	case "DATE", "TIMESTAMP":
		if !p.acceptOp("(") {
			break // a property named date
		}
		s := p.take()
		if s.kind != tokString {
			return operand{}, p.unexpected(s, "a quoted "+strings.ToLower(up))
		}
		if !p.acceptOp(")") {
			return operand{}, p.unexpected(p.peek(), "')'")
		}
		kind := Date
		if up == "TIMESTAMP" {
			kind = Timestamp
		}
		if _, err := parseLiteral(kind, s.text); err != nil {
			return operand{}, &SyntaxError{Pos: s.pos, Msg: err.Error()}
		}
		return operand{lit: kind, text: s.text, pos: t.pos}, nil
	case "AND", "OR", "NOT", "LIKE", "IN", "BETWEEN", "IS", "NULL":
		return operand{}, p.unexpected(t, "a property name or a value")
	}
	if p.peek().kind == tokOp && p.peek().text == "(" {
		for _, f := range spatialFuncs {
			if up == f {
				return operand{}, &SyntaxError{Pos: t.pos, Msg: fmt.Sprintf("%s: spatial and temporal predicates are not supported (the task's bbox is the spatial filter)", t.text)}
			}
		}
		return operand{}, &SyntaxError{Pos: t.pos, Msg: fmt.Sprintf("%s(): functions are not supported", t.text)}
	}
	return operand{prop: t.text, pos: t.pos}, nil
}

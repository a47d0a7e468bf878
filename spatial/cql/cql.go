// Package cql parses and evaluates the subset of OGC CQL2 Text that geoflow filters
// features with (a flow's transform.where): comparisons (= <> < <= > >=), AND, OR, NOT,
// parentheses, LIKE with % and _ (backslash escapes them), IN (...), BETWEEN, IS [NOT]
// NULL, string, number and boolean literals, DATE('...') and TIMESTAMP('...'), and
// property names, bare or "quoted". Spatial and temporal predicates are refused: a task's
// bbox is its spatial filter.
//
// Parse checks the syntax alone; Bind types every property (as the columns they fill are
// typed) and makes a Filter, which evaluates with SQL's three-valued logic: a comparison
// with NULL (a property a feature lacks, or holds as null) is unknown, and a feature is
// kept only where the filter is true. Both are pure: no I/O, safe for concurrent use once
// made.
package cql

import (
	"fmt"
	"strings"
)

// Type is how a property's values compare.
type Type int

// The types of values.
const (
	// Text compares by Unicode code point, as SQL's "C" collation does.
	Text Type = iota
	// Number compares numerically: integers exactly, others as float64.
	Number
	// Boolean is false < true.
	Boolean
	// Date compares calendar days (YYYY-MM-DD, any time of day ignored).
	Date
	// Timestamp compares instants (RFC 3339; without an offset, UTC).
	Timestamp
)

func (t Type) String() string {
	return [...]string{"text", "number", "boolean", "date", "timestamp"}[t]
}

// Expr is a parsed filter, not yet bound to a layer's properties. The zero Expr is not
// usable; make one with Parse.
type Expr struct {
	root node
}

// PropertyRef is a property named in an expression and where (1-based column).
type PropertyRef struct {
	Name string
	Pos  int
}

// Properties lists the properties e names, in the order they appear, each once.
func (e *Expr) Properties() []PropertyRef {
	var out []PropertyRef
	seen := map[string]bool{}
	add := func(o operand) {
		if o.prop != "" && !seen[o.prop] {
			seen[o.prop] = true
			out = append(out, PropertyRef{Name: o.prop, Pos: o.pos})
		}
	}
	walk(e.root, add)
	return out
}

// walk calls fn with every operand under n, left to right.
func walk(n node, fn func(operand)) {
	switch x := n.(type) {
	case logic:
		walk(x.l, fn)
		walk(x.r, fn)
	case not:
		walk(x.x, fn)
	case compare:
		fn(x.l)
		fn(x.r)
	case like:
		fn(x.x)
		fn(x.pattern)
	case in:
		fn(x.x)
		for _, o := range x.list {
			fn(o)
		}
	case between:
		fn(x.x)
		fn(x.lo)
		fn(x.hi)
	case isNull:
		fn(x.x)
	case truth:
		fn(x.x)
	}
}

// String writes e back as CQL2 Text, fully parenthesised and with keywords in upper
// case, for a server that evaluates CQL2 (OGC API - Features Part 3); Parse of it gives
// the same tree.
func (e *Expr) String() string {
	var b strings.Builder
	write(&b, e.root)
	return b.String()
}

func write(b *strings.Builder, n node) {
	neg := func(on bool) {
		if on {
			b.WriteString(" NOT")
		}
	}
	switch x := n.(type) {
	case logic:
		b.WriteByte('(')
		write(b, x.l)
		if x.and {
			b.WriteString(" AND ")
		} else {
			b.WriteString(" OR ")
		}
		write(b, x.r)
		b.WriteByte(')')
	case not:
		b.WriteString("NOT (")
		write(b, x.x)
		b.WriteByte(')')
	case compare:
		fmt.Fprintf(b, "%s %s %s", x.l, x.op, x.r)
	case like:
		b.WriteString(x.x.String())
		neg(x.neg)
		fmt.Fprintf(b, " LIKE %s", x.pattern)
	case in:
		b.WriteString(x.x.String())
		neg(x.neg)
		b.WriteString(" IN (")
		for i, o := range x.list {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(o.String())
		}
		b.WriteByte(')')
	case between:
		b.WriteString(x.x.String())
		neg(x.neg)
		fmt.Fprintf(b, " BETWEEN %s AND %s", x.lo, x.hi)
	case isNull:
		b.WriteString(x.x.String())
		b.WriteString(" IS")
		neg(x.neg)
		b.WriteString(" NULL")
	case truth:
		b.WriteString(x.x.String())
	}
}

// String writes the operand as CQL2 Text.
func (o operand) String() string {
	if o.prop != "" {
		if plainName(o.prop) {
			return o.prop
		}
		return `"` + strings.ReplaceAll(o.prop, `"`, `""`) + `"`
	}
	switch o.lit {
	case Text:
		return "'" + strings.ReplaceAll(o.text, "'", "''") + "'"
	case Date:
		return "DATE('" + o.text + "')"
	case Timestamp:
		return "TIMESTAMP('" + o.text + "')"
	case Boolean:
		return strings.ToUpper(o.text)
	}
	return o.text
}

// plainName says a property name can be written without quotes: letters, digits and _,
// not starting with a digit, and no keyword.
func plainName(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	switch strings.ToUpper(s) {
	case "AND", "OR", "NOT", "LIKE", "IN", "BETWEEN", "IS", "NULL", "TRUE", "FALSE", "DATE", "TIMESTAMP":
		return false
	}
	return s != ""
}

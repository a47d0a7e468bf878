package cql

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// TypeError is a comparison Bind cannot make sense of: a literal that is no value of
// the property's type ('abc' for a number), or values of types that do not compare.
// Pos is the 1-based column in the expression.
type TypeError struct {
	Pos int
	Msg string
}

// Error names the column and the problem.
func (e *TypeError) Error() string { return fmt.Sprintf("column %d: %s", e.Pos, e.Msg) }

// UnknownPropertyError is a property the expression names that Bind was not told of.
type UnknownPropertyError struct {
	PropertyRef
}

// Error names the property and its column.
func (e *UnknownPropertyError) Error() string {
	return fmt.Sprintf("column %d: unknown property %q", e.Pos, e.Name)
}

// Filter is an expression bound to the types of a layer's properties, ready to evaluate
// features. It is safe for concurrent use.
type Filter struct {
	root pred
}

// pred is a compiled predicate: it evaluates to true, false or unknown.
type pred func(props map[string]any) tri

// tri is a truth value of SQL's three-valued logic, ordered so that AND is the least
// and OR the greatest of its operands.
type tri int8

const (
	no tri = iota
	unknown
	yes
)

// Bind types e's properties with types (a property e names that types lacks fails with
// *UnknownPropertyError) and its literals by what they are compared with (a *TypeError
// when one is no value of that type).
func (e *Expr) Bind(types map[string]Type) (*Filter, error) {
	for _, r := range e.Properties() {
		if _, ok := types[r.Name]; !ok {
			return nil, &UnknownPropertyError{r}
		}
	}
	b := binder{types: types}
	p, err := b.node(e.root)
	if err != nil {
		return nil, err
	}
	return &Filter{root: p}, nil
}

// Match says whether the feature with these properties passes the filter: true only
// where the filter is true, not false or unknown. A property absent from props is NULL.
func (f *Filter) Match(props map[string]any) bool { return f.root(props) == yes }

// binder compiles a tree into predicates.
type binder struct {
	types map[string]Type
}

func (b binder) node(n node) (pred, error) {
	switch x := n.(type) {
	case logic:
		return b.logic(x)
	case not:
		p, err := b.node(x.x)
		return func(m map[string]any) tri { return negate(p(m)) }, err
	case compare:
		return b.compare(x.op, x.l, x.r)
	case like:
		return b.like(x)
	case in:
		return b.in(x)
	case between:
		return b.between(x)
	case isNull:
		get, _, err := b.value(x.x, Text)
		return func(m map[string]any) tri { return truthOf(get(m).null != x.neg) }, err
	case truth:
		get, _, err := b.value(x.x, Boolean)
		return func(m map[string]any) tri {
			v := get(m)
			if v.null {
				return unknown
			}
			return truthOf(v.b)
		}, err
	}
	return nil, fmt.Errorf("cql: unknown node %T", n)
}

func (b binder) logic(x logic) (pred, error) {
	l, err := b.node(x.l)
	if err != nil {
		return nil, err
	}
	r, err := b.node(x.r)
	if err != nil {
		return nil, err
	}
	if x.and {
		return and(l, r), nil
	}
	return func(m map[string]any) tri {
		a := l(m)
		if a == yes {
			return yes
		}
		return max(a, r(m))
	}, nil
}

func negate(t tri) tri {
	switch t {
	case yes:
		return no
	case no:
		return yes
	}
	return unknown
}

func truthOf(b bool) tri {
	if b {
		return yes
	}
	return no
}

// typeOf is the type an operand compares as: its property's, or its literal's.
func (b binder) typeOf(o operand) Type {
	if o.prop != "" {
		return b.types[o.prop]
	}
	return o.lit
}

// common is the type two operands compare as: a property's over a literal's (the
// literal is read as a value of it), the same type, or a number over text.
func (b binder) common(l, r operand) (Type, error) {
	lt, rt := b.typeOf(l), b.typeOf(r)
	switch {
	case l.prop != "" && r.prop == "":
		return lt, nil
	case r.prop != "" && l.prop == "":
		return rt, nil
	case lt == rt:
		return lt, nil
	case lt == Number && rt == Text || lt == Text && rt == Number:
		return Number, nil
	case l.prop != "" && r.prop != "":
		return Text, nil // two properties of other types: as text, as SQL would cast
	}
	return 0, &TypeError{Pos: r.pos, Msg: fmt.Sprintf("cannot compare a %s with a %s", lt, rt)}
}

// getter reads an operand's value from a feature's properties.
type getter func(map[string]any) value

// value compiles an operand read as type t: a literal is converted once (a *TypeError
// when it is no value of t); a property is converted per feature (NULL when it is not).
func (b binder) value(o operand, t Type) (getter, Type, error) {
	if o.prop == "" {
		v, err := parseLiteral(t, o.text)
		if err != nil {
			return nil, t, &TypeError{Pos: o.pos, Msg: fmt.Sprintf("%s is not a %s: %v", o, t, err)}
		}
		return func(map[string]any) value { return v }, t, nil
	}
	name := o.prop
	return func(m map[string]any) value { return convert(m[name], t) }, t, nil
}

func (b binder) compare(op string, l, r operand) (pred, error) {
	t, err := b.common(l, r)
	if err != nil {
		return nil, err
	}
	gl, _, err := b.value(l, t)
	if err != nil {
		return nil, err
	}
	gr, _, err := b.value(r, t)
	if err != nil {
		return nil, err
	}
	test := opTest(op)
	return func(m map[string]any) tri {
		a, c := gl(m), gr(m)
		if a.null || c.null {
			return unknown
		}
		return truthOf(test(cmpValues(a, c, t)))
	}, nil
}

// opTest turns a comparison operator into a test of cmpValues's result.
func opTest(op string) func(int) bool {
	switch op {
	case "=":
		return func(c int) bool { return c == 0 }
	case "<>":
		return func(c int) bool { return c != 0 }
	case "<":
		return func(c int) bool { return c < 0 }
	case "<=":
		return func(c int) bool { return c <= 0 }
	case ">":
		return func(c int) bool { return c > 0 }
	}
	return func(c int) bool { return c >= 0 }
}

func (b binder) like(x like) (pred, error) {
	get, _, err := b.value(x.x, Text)
	if err != nil {
		return nil, err
	}
	if x.pattern.prop != "" {
		pat, _, _ := b.value(x.pattern, Text)
		return func(m map[string]any) tri {
			v, p := get(m), pat(m)
			if v.null || p.null {
				return unknown
			}
			return truthOf(matchLike(v.s, p.s) != x.neg)
		}, nil
	}
	pattern := x.pattern.text
	return func(m map[string]any) tri {
		v := get(m)
		if v.null {
			return unknown
		}
		return truthOf(matchLike(v.s, pattern) != x.neg)
	}, nil
}

func (b binder) in(x in) (pred, error) {
	var tests []pred
	for _, o := range x.list {
		p, err := b.compare("=", x.x, o)
		if err != nil {
			return nil, err
		}
		tests = append(tests, p)
	}
	return func(m map[string]any) tri {
		r := no // x IN (a, b) is x = a OR x = b
		for _, t := range tests {
			switch t(m) {
			case yes:
				return truthOf(!x.neg)
			case unknown:
				r = unknown
			}
		}
		if x.neg {
			return negate(r)
		}
		return r
	}, nil
}

func (b binder) between(x between) (pred, error) {
	lo, err := b.compare(">=", x.x, x.lo)
	if err != nil {
		return nil, err
	}
	hi, err := b.compare("<=", x.x, x.hi)
	if err != nil {
		return nil, err
	}
	both := and(lo, hi)
	if x.neg {
		return func(m map[string]any) tri { return negate(both(m)) }, nil
	}
	return both, nil
}

// and is the AND of two compiled predicates: false if either is, else unknown if
// either is, else true.
func and(l, r pred) pred {
	return func(m map[string]any) tri {
		a := l(m)
		if a == no {
			return no
		}
		return min(a, r(m))
	}
}

// value is a property or literal read as one type; null is SQL's NULL.
type value struct {
	null  bool
	isInt bool
	i     int64
	f     float64
	s     string // text; a date as YYYY-MM-DD
	b     bool
	t     time.Time
}

// cmpValues compares two non-null values of type t: -1, 0 or 1.
func cmpValues(a, b value, t Type) int {
	switch t {
	case Number:
		if a.isInt && b.isInt {
			return cmpOrdered(a.i, b.i)
		}
		return cmpOrdered(a.f, b.f)
	case Boolean:
		return cmpOrdered(boolInt(a.b), boolInt(b.b))
	case Timestamp:
		return a.t.Compare(b.t)
	}
	return strings.Compare(a.s, b.s)
}

func cmpOrdered[T int64 | float64 | int](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// parseLiteral reads the text of a literal (or of a property) as a value of t.
func parseLiteral(t Type, s string) (value, error) {
	v := convert(s, t)
	if v.null {
		return v, fmt.Errorf("%q is not a %s", s, t)
	}
	return v, nil
}

// convert reads a property's value as type t, as the store would store it in a column of
// that type; a value that is none of t, and "" for any type but text, is NULL.
func convert(x any, t Type) value {
	if x == nil {
		return value{null: true}
	}
	if t == Text {
		return value{s: textOf(x)}
	}
	s, isString := x.(string)
	if isString {
		s = strings.TrimSpace(s)
		if s == "" {
			return value{null: true}
		}
	}
	switch t {
	case Number:
		return number(x, s, isString)
	case Boolean:
		if b, ok := x.(bool); ok {
			return value{b: b}
		}
		switch strings.ToLower(textOf(x)) {
		case "true", "1", "t", "yes":
			return value{b: true}
		case "false", "0", "f", "no":
			return value{b: false}
		}
	case Date, Timestamp:
		if tm, ok := x.(time.Time); ok {
			return value{t: tm, s: tm.UTC().Format(time.DateOnly)}
		}
		if isString {
			return timeValue(s, t)
		}
	}
	return value{null: true}
}

// textOf is a value's text, as store.ColumnText writes it for a text column.
func textOf(x any) string {
	switch v := x.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case int64:
		return strconv.FormatInt(v, 10)
	case int:
		return strconv.Itoa(v)
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		return v.String()
	case time.Time:
		return v.Format(time.RFC3339Nano)
	}
	b, err := json.Marshal(x)
	if err != nil {
		return fmt.Sprint(x)
	}
	return string(b)
}

// number reads x as a number: integers exactly where they are integers.
func number(x any, s string, isString bool) value {
	switch v := x.(type) {
	case float64:
		return floatValue(v)
	case float32:
		return floatValue(float64(v))
	case int:
		return value{isInt: true, i: int64(v), f: float64(v)}
	case int64:
		return value{isInt: true, i: v, f: float64(v)}
	case int32:
		return value{isInt: true, i: int64(v), f: float64(v)}
	case json.Number:
		s, isString = v.String(), true
	}
	if !isString {
		return value{null: true}
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return value{isInt: true, i: i, f: float64(i)}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return value{null: true}
	}
	return floatValue(f)
}

// floatValue is f, an integer where it is one that int64 holds exactly.
func floatValue(f float64) value {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return value{isInt: true, i: int64(f), f: f}
	}
	return value{f: f}
}

// timeLayouts are the forms of dates and timestamps read, as ISO 8601 writes them.
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999", "2006-01-02T15:04Z07:00", "2006-01-02T15:04", time.DateOnly, "2006-01-02Z07:00"}

// timeValue reads s as a date or a timestamp (without an offset, UTC).
func timeValue(s string, t Type) value {
	layouts := timeLayouts
	if len(s) == len(time.DateOnly) {
		layouts = timeLayouts[len(timeLayouts)-2:] // a date: skip the failing parses, which allocate
	}
	for _, l := range layouts {
		tm, err := time.Parse(l, s)
		if err != nil {
			continue
		}
		if t == Date {
			// The calendar day as written, whatever its offset, as PostgreSQL's ::date.
			return value{s: tm.Format(time.DateOnly), t: tm}
		}
		return value{t: tm, s: tm.UTC().Format(time.DateOnly)}
	}
	return value{null: true}
}

// matchLike matches s against a LIKE pattern: % any run of characters, _ one
// character, \ makes the next character literal.
func matchLike(s, pattern string) bool {
	p := []rune(pattern)
	r := []rune(s)
	// Iterative matching with backtracking to the last %.
	var pi, si, starP, starS = 0, 0, -1, 0
	for si < len(r) {
		if pi < len(p) {
			switch c := p[pi]; {
			case c == '%':
				starP, starS = pi, si
				pi++
				continue
			case c == '_':
				pi++
				si++
				continue
			case c == '\\' && pi+1 < len(p):
				if p[pi+1] == r[si] {
					pi += 2
					si++
					continue
				}
			case c == r[si]:
				pi++
				si++
				continue
			}
		}
		if starP < 0 {
			return false
		}
		starS++
		pi, si = starP+1, starS
	}
	for pi < len(p) && p[pi] == '%' {
		pi++
	}
	return pi == len(p)
}

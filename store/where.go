package store

import (
	"errors"
	"fmt"
	"strings"
)

// ErrWhere is what CheckWhere's errors wrap: a FeatureQuery.Where that is not one
// boolean expression the store can run as it is.
var ErrWhere = errors.New("store: not one SQL expression")

// CheckWhere refuses a FeatureQuery.Where that is not one expression a store can put in
// its own statement's WHERE clause as it is: empty; with a ";" (a second statement), a
// comment ("--", "/*") or a parameter ("?", "$1") outside quotes; with parentheses that
// do not pair up (an expression closing the store's own parenthesis: "a) OR (b"); or
// with an unclosed quote. Quotes are SQL's: '...' strings and "..." identifiers, each
// doubled to escape itself. It does not parse SQL: what it lets through, the database
// parses, in a read-only transaction.
func CheckWhere(expr string) error {
	if strings.TrimSpace(expr) == "" {
		return fmt.Errorf("where %q: empty: %w", expr, ErrWhere)
	}
	depth := 0
	var quote byte // the open quote, 0 outside
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		if quote != 0 {
			if c == quote {
				if i+1 < len(expr) && expr[i+1] == quote {
					i++ // a doubled quote stays inside
					continue
				}
				quote = 0
			}
			continue
		}
		if msg := whereByte(expr, i); msg != "" {
			return fmt.Errorf("where %q: %s at byte %d: %w", expr, msg, i+1, ErrWhere)
		}
		switch c {
		case '\'', '"':
			quote = c
		case '(':
			depth++
		case ')':
			if depth--; depth < 0 {
				return fmt.Errorf("where %q: a ) without its ( at byte %d: %w", expr, i+1, ErrWhere)
			}
		}
	}
	switch {
	case quote != 0:
		return fmt.Errorf("where %q: a %c quote is not closed: %w", expr, quote, ErrWhere)
	case depth > 0:
		return fmt.Errorf("where %q: %d ( not closed: %w", expr, depth, ErrWhere)
	}
	return nil
}

// whereByte says what is wrong with byte i of expr, outside quotes, or "".
func whereByte(expr string, i int) string {
	next := byte(0)
	if i+1 < len(expr) {
		next = expr[i+1]
	}
	switch c := expr[i]; {
	case c == ';':
		return "a ; (one expression, not statements)"
	case c == '-' && next == '-', c == '/' && next == '*':
		return "a comment"
	case c == '?', c == '$' && next >= '0' && next <= '9':
		return "a parameter"
	}
	return ""
}

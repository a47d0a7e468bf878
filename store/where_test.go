package store

import (
	"errors"
	"testing"
)

func TestCheckWhere(t *testing.T) {
	tests := []struct {
		name string
		expr string
		ok   bool
	}{
		{name: "a comparison", expr: "population > 1000", ok: true},
		{name: "strings and identifiers", expr: `"Name" = 'it''s; -- fine' AND kind IN ('a', 'b')`, ok: true},
		{name: "a function", expr: "lower(name) LIKE 'm%' OR (a = 1 AND b = 2)", ok: true},
		{name: "a doubled double quote", expr: `"odd""name" IS NULL`, ok: true},
		{name: "empty", expr: "  "},
		{name: "a second statement", expr: "true; DROP TABLE parcels"},
		{name: "a trailing semicolon", expr: "a = 1;"},
		{name: "a line comment", expr: "a = 1 -- and the rest"},
		{name: "a block comment", expr: "a = 1 /* x */"},
		{name: "a parameter", expr: "a = $1"},
		{name: "a question mark", expr: "a = ?"},
		{name: "closing the store's parenthesis", expr: "a = 1) OR (true"},
		{name: "an unclosed parenthesis", expr: "(a = 1"},
		{name: "an unclosed string", expr: "a = 'x"},
		{name: "an unclosed identifier", expr: `"a = 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckWhere(tt.expr)
			if tt.ok != (err == nil) || (err != nil && !errors.Is(err, ErrWhere)) {
				t.Errorf("CheckWhere(%q) = %v, want ok %v (else wrapping ErrWhere)", tt.expr, err, tt.ok)
			}
		})
	}
}

package cql_test

import (
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/geoflow/geoflow/spatial/cql"
)

// FuzzParse checks that Parse never panics, that its errors carry a column inside the
// expression, that what it accepts writes back to text that parses to the same text,
// and that binding and evaluating what it accepts never panics. Interesting inputs found
// are kept in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"land_use = 'residential' AND area_m2 > 500",
		`"a b" LIKE 'x\%_%' OR NOT c IN (1, 2.5, -3e2)`,
		"d BETWEEN DATE('2020-01-01') AND DATE('2021-01-01')",
		"t >= TIMESTAMP('2020-01-01T00:00:00Z') AND b IS NOT NULL",
		"((((a))))", "NOT NOT a", "a != 'it''s'", "", "'", `"`, "a = -", "S_INTERSECTS(g, x)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := cql.Parse(s)
		if err != nil {
			var se *cql.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q): %v is not a *SyntaxError", s, err)
			}
			if se.Pos < 1 || se.Pos > utf8.RuneCountInString(s)+1 {
				t.Fatalf("Parse(%q): column %d outside the expression", s, se.Pos)
			}
			return
		}
		text := e.String()
		again, err := cql.Parse(text)
		if err != nil {
			t.Fatalf("Parse(%q) ok, but its text %q fails: %v", s, text, err)
		}
		if again.String() != text {
			t.Fatalf("Parse(%q): text %q reparses as %q", s, text, again.String())
		}
		for _, typ := range []cql.Type{cql.Text, cql.Number, cql.Boolean, cql.Date, cql.Timestamp} {
			types := map[string]cql.Type{}
			for _, p := range e.Properties() {
				types[p.Name] = typ
			}
			flt, err := e.Bind(types)
			if err != nil {
				continue
			}
			props := map[string]any{}
			for i, p := range e.Properties() {
				props[p.Name] = []any{"1", 2.5, true, "2020-01-01", nil}[i%5]
			}
			flt.Match(props)
			flt.Match(nil)
		}
	})
}

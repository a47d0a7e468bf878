package cql_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/geoflow/geoflow/spatial/cql"
)

var types = map[string]cql.Type{
	"land_use": cql.Text, "area_m2": cql.Number, "id": cql.Number, "active": cql.Boolean,
	"built": cql.Date, "seen": cql.Timestamp, "name": cql.Text, "Zone Code": cql.Text, "code": cql.Text,
}

func TestMatch(t *testing.T) {
	feature := map[string]any{
		"land_use": "residential", "area_m2": 812.5, "id": json.Number("9007199254740993"), "active": "true",
		"built": "1999-12-31", "seen": "2024-05-01T10:00:00+02:00", "name": "O'Brien_house", "Zone Code": "R1",
		"code": "", // empty text is '' (not NULL) for text
	}
	tests := []struct {
		name string
		expr string
		want bool
	}{
		{"equal string", "land_use = 'residential'", true},
		{"not equal", "land_use <> 'residential'", false},
		{"bang equal", "land_use != 'commercial'", true},
		{"number greater", "area_m2 > 500", true},
		{"number string literal", "area_m2 >= '812.5'", true},
		{"number not lexical", "area_m2 < 1000", true}, // "812.5" > "1000" as text
		{"big integer exact", "id = 9007199254740993", true},
		{"big integer differs", "id = 9007199254740992", false},
		{"and", "land_use = 'residential' AND area_m2 > 500", true},
		{"and false", "land_use = 'residential' AND area_m2 > 1000", false},
		{"or", "land_use = 'x' OR area_m2 > 500", true},
		{"not", "NOT land_use = 'x'", true},
		{"parentheses", "(land_use = 'x' OR area_m2 > 500) AND active", true},
		{"boolean literal", "active = TRUE", true},
		{"bare boolean false", "NOT active", false},
		{"like percent", "name LIKE 'O''B%'", true},
		{"like underscore", "name LIKE 'O_Brien%'", true},
		{"like escaped underscore", `name LIKE '%\_house'`, true},
		{"like escaped no match", `name LIKE 'O\_%'`, false},
		{"not like", "land_use NOT LIKE 'res%'", false},
		{"like case sensitive", "land_use LIKE 'RES%'", false},
		{"in", "land_use IN ('commercial', 'residential')", true},
		{"not in", "land_use NOT IN ('commercial', 'residential')", false},
		{"in numbers", "area_m2 IN (1, 812.5)", true},
		{"between", "area_m2 BETWEEN 800 AND 900", true},
		{"not between", "area_m2 NOT BETWEEN 800 AND 900", false},
		{"date", "built < DATE('2000-01-01')", true},
		{"date string", "built = '1999-12-31'", true},
		{"timestamp", "seen = TIMESTAMP('2024-05-01T08:00:00Z')", true},
		{"timestamp later", "seen > TIMESTAMP('2024-05-01T08:00:01Z')", false},
		{"quoted name", `"Zone Code" = 'R1'`, true},
		{"keywords any case", "land_use in ('residential') and not area_m2 is null", true},
		{"empty text is not null", "code IS NOT NULL", true},
		{"empty text equals ''", "code = ''", true},
		{"negative number", "area_m2 > -1", true},
		{"exponent", "area_m2 < 1e3", true},
		// NULL: a missing property.
		{"missing is null", "missing_prop IS NULL", true},
		{"compare null unknown", "missing_prop = 'x'", false},
		{"not of unknown is unknown", "NOT (missing_prop = 'x')", false},
		{"unknown or true", "missing_prop = 'x' OR land_use = 'residential'", true},
		{"unknown and false", "NOT (missing_prop = 'x' AND land_use = 'x')", true},
		{"not in with null", "land_use NOT IN ('x', missing_prop)", false},
		{"between null", "missing_prop BETWEEN 1 AND 2", false},
		{"like null", "missing_prop LIKE '%'", false},
	}
	all := map[string]cql.Type{"missing_prop": cql.Text}
	for k, v := range types {
		all[k] = v
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := cql.Parse(tt.expr)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.expr, err)
			}
			f, err := e.Bind(all)
			if err != nil {
				t.Fatalf("Bind(%q): %v", tt.expr, err)
			}
			if got := f.Match(feature); got != tt.want {
				t.Errorf("Match(%q) = %v, want %v", tt.expr, got, tt.want)
			}
			// The text written for a server parses to the same filter.
			again, err := cql.Parse(e.String())
			if err != nil {
				t.Fatalf("Parse(String()) of %q = %q: %v", tt.expr, e.String(), err)
			}
			if again.String() != e.String() {
				t.Errorf("round trip: %q then %q", e.String(), again.String())
			}
		})
	}
}

func TestNullTypes(t *testing.T) {
	tests := []struct {
		name  string
		value any
		typ   cql.Type
		null  bool
	}{
		{"empty string number", "", cql.Number, true},
		{"blank string number", "  ", cql.Number, true},
		{"garbage number", "abc", cql.Number, true},
		{"json null", nil, cql.Text, true},
		{"empty string text", "", cql.Text, false},
		{"float", 3.0, cql.Number, false},
		{"int64", int64(3), cql.Number, false},
		{"time value", time.Unix(0, 0), cql.Timestamp, false},
		{"bad date", "yesterday", cql.Date, true},
		{"boolean word", "yes", cql.Boolean, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e2, _ := cql.Parse("p = p")
			f2, err := e2.Bind(map[string]cql.Type{"p": tt.typ})
			if err != nil {
				t.Fatal(err)
			}
			// p = p is unknown (not kept) exactly when p is NULL as its type.
			if got := !f2.Match(map[string]any{"p": tt.value}); got != tt.null {
				t.Errorf("%v as %v: null = %v, want %v", tt.value, tt.typ, got, tt.null)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		expr string
		pos  int
	}{
		{"empty", "", 1},
		{"dangling and", "a = 1 AND", 10},
		{"unterminated string", "a = 'abc", 5},
		{"unterminated quoted", `"abc = 1`, 1},
		{"bad character", "a = 1 ; b = 2", 7},
		{"missing operand", "a = ", 5},
		{"not without like", "a NOT 5", 7},
		{"is without null", "a IS 5", 6},
		{"spatial", "S_INTERSECTS(geom, POINT(1 2))", 1},
		{"function", "upper(a) = 'X'", 1},
		{"unclosed paren", "(a = 1", 7},
		{"extra paren", "a = 1)", 6},
		{"in without list", "a IN 1", 6},
		{"malformed number", "a = 1.5e", 5},
		{"number then letters", "a = 12abc", 5},
		{"bad date", "d = DATE('2024-13-01')", 10},
		{"like number", "a LIKE 5", 8},
		{"keyword as operand", "AND = 1", 1},
		{"bang alone", "a ! 1", 3},
		{"between without and", "a BETWEEN 1 OR 2", 13},
		{"trailing", "a = 1 b", 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cql.Parse(tt.expr)
			var se *cql.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) = %v, want a *SyntaxError", tt.expr, err)
			}
			if se.Pos != tt.pos {
				t.Errorf("Parse(%q): %v at column %d, want column %d", tt.expr, se, se.Pos, tt.pos)
			}
		})
	}
}

func TestBindErrors(t *testing.T) {
	tests := []struct {
		name    string
		expr    string
		unknown string
		pos     int
	}{
		{"unknown property", "land_use = 'x' AND lnd_use = 'y'", "lnd_use", 20},
		{"number literal not number", "area_m2 > 'big'", "", 11},
		{"date literal not date", "built = 'someday'", "", 9},
		{"boolean literal not boolean", "active = 'maybe'", "", 10},
		{"literals of two types", "1 = TRUE", "", 5},
		{"in list type", "area_m2 IN (1, 'x')", "", 16},
		{"between bound", "area_m2 BETWEEN 'a' AND 3", "", 17},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := cql.Parse(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Bind(types)
			var ue *cql.UnknownPropertyError
			var te *cql.TypeError
			switch {
			case tt.unknown != "":
				if !errors.As(err, &ue) || ue.Name != tt.unknown || ue.Pos != tt.pos {
					t.Fatalf("Bind(%q) = %v, want unknown %q at %d", tt.expr, err, tt.unknown, tt.pos)
				}
			case !errors.As(err, &te) || te.Pos != tt.pos:
				t.Fatalf("Bind(%q) = %v, want a *TypeError at column %d", tt.expr, err, tt.pos)
			}
		})
	}
}

func TestProperties(t *testing.T) {
	e, err := cql.Parse(`a = 1 AND ("b c" LIKE 'x' OR a IN (d, 2))`)
	if err != nil {
		t.Fatal(err)
	}
	got := e.Properties()
	want := []cql.PropertyRef{{Name: "a", Pos: 1}, {Name: "b c", Pos: 12}, {Name: "d", Pos: 36}}
	if len(got) != len(want) {
		t.Fatalf("Properties = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Properties[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		name, expr, want string
	}{
		{"precedence", "a = 1 OR b = 2 AND c = 3", "(a = 1 OR (b = 2 AND c = 3))"},
		{"quotes", `"x y" = 'it''s'`, `"x y" = 'it''s'`},
		{"keyword name quoted", `"date" = DATE('2020-01-02')`, `"date" = DATE('2020-01-02')`},
		{"not", "NOT a IS NOT NULL", "NOT (a IS NOT NULL)"},
		{"bang", "a != 1", "a <> 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := cql.Parse(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			if got := e.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

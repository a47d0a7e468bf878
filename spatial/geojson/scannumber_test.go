package geojson

import (
	"encoding/json"
	"strings"
	"testing"
)

// BenchmarkScanNumber checks numbers of every shape the grammar has (the
// general path, which fastFloat leaves numbers with exponents, long mantissas
// and those at the end of the window to), as skip does.
func BenchmarkScanNumber(b *testing.B) {
	nums := []string{"0", "-0", "7", "1234567", "-98.7654321", "0.000125", "1e5", "-2.5E-7",
		"6.02214076e+23", "12345678901234567890123", "-0.1234567890123456789", "1e999"}
	doc := []byte(strings.Repeat(strings.Join(nums, ",")+",", 100))
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		s := bytesScanner(doc)
		for s.pos < s.end {
			if _, err := s.number(); err != nil {
				b.Fatal(err)
			}
			s.pos++ // the comma
		}
	}
}

func TestNumber(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // the number's text; "" for an error
		err  string // in the error's message
	}{
		{name: "zero", in: "0,", want: "0"},
		{name: "a 0 after a leading 0 ends the number", in: "01", want: "0"},
		{name: "integer", in: "1234]", want: "1234"},
		{name: "negative with fraction and exponent", in: "-12.5e+3,", want: "-12.5e+3"},
		{name: "capital exponent with minus", in: "7E-2}", want: "7E-2"},
		{name: "zero with exponent", in: "0e5 ", want: "0e5"},
		{name: "a second point ends the number", in: "1.5.3", want: "1.5"},
		{name: "a minus after digits ends the number", in: "3-", want: "3"},
		{name: "complete at the end of the input", in: "12.75", want: "12.75"},
		{name: "minus alone", in: "-,", err: `invalid character ',' in numeric literal`},
		{name: "plus first", in: "+1", err: `invalid character '+' in numeric literal`},
		{name: "point first", in: "-.5", err: `invalid character '.' in numeric literal`},
		{name: "point without digits", in: "1.e5", err: `invalid character 'e' after decimal point in numeric literal`},
		{name: "exponent without digits", in: "1e,", err: `invalid character ',' in exponent of numeric literal`},
		{name: "two signs", in: "1e+-1", err: `invalid character '-' in exponent of numeric literal`},
		{name: "incomplete at the end of the input", in: "1.", err: "unexpected EOF"},
		{name: "sign at the end of the input", in: "-", err: "unexpected EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := bytesScanner([]byte(tt.in))
			num, err := s.number()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %q, %v; want an error with %q", num, err, tt.err)
				}
				return
			}
			if err != nil || string(num) != tt.want || s.pos != len(tt.want) {
				t.Fatalf("got %q, %v at %d; want %q", num, err, s.pos, tt.want)
			}
		})
	}
}

// TestNumberGrammar checks the transition table against encoding/json on
// every string of up to six bytes of the grammar's classes: a number is
// taken whole exactly when json.Valid takes it.
func TestNumberGrammar(t *testing.T) {
	const alphabet = "019-+.eEx"
	var walk func(prefix string)
	walk = func(prefix string) {
		if prefix != "" {
			s := bytesScanner([]byte(prefix))
			_, err := s.number()
			got, want := err == nil && s.pos == len(prefix), json.Valid([]byte(prefix))
			if got != want {
				t.Errorf("%q: taken whole %v, json.Valid %v (err %v at %d)", prefix, got, want, err, s.pos)
			}
		}
		if len(prefix) == 6 {
			return
		}
		for i := range len(alphabet) {
			walk(prefix + alphabet[i:i+1])
		}
	}
	walk("")
}

func TestNumStateComplete(t *testing.T) {
	for s := numStart; s <= numBadExp; s++ {
		want := s == numZero || s == numInt || s == numFrac || s == numExp
		if got := s.complete(); got != want {
			t.Errorf("state %d: complete %v, want %v", s, got, want)
		}
	}
}

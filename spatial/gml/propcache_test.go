package gml

import (
	"fmt"
	"reflect"
	"testing"
)

// TestPropBufColumns reads features through propBuf as feature does and checks each
// one's properties are what addProp would have made, whatever its columns keep.
func TestPropBufColumns(t *testing.T) {
	tests := []struct {
		name  string
		feats [][]prop
	}{
		{"repeats", [][]prop{{{"zone", "a"}, {"id", "1"}}, {{"zone", "a"}, {"id", "2"}}, {{"zone", "b"}, {"id", "3"}}, {{"zone", "a"}, {"id", "4"}}}},
		{"names shift", [][]prop{{{"a", "x"}, {"b", "y"}}, {{"b", "x"}, {"a", "y"}}, {{"b", "y"}}}},
		{"repeated name", [][]prop{{{"a", "x"}, {"a", "x"}}, {{"a", "x"}, {"a", "y"}, {"a", "x"}}}},
		{"empty texts", [][]prop{{{"a", ""}, {"b", ""}}, {{"a", ""}, {"b", "z"}}}},
		{"unique column goes narrow", uniqueFeats(200)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p propBuf
			for i, f := range tc.feats {
				p.reset()
				want := map[string]any{}
				for _, q := range f {
					p.addText(q.name, []byte(q.text))
					addProp(want, q.name, q.text)
				}
				got := map[string]any{}
				p.flush(got)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("feature %d: got %v, want %v", i, got, want)
				}
			}
		})
	}
}

// prop is one text property of a feature in TestPropBufColumns.
type prop struct{ name, text string }

func uniqueFeats(n int) [][]prop {
	out := make([][]prop, n)
	for i := range out {
		out[i] = []prop{{"id", fmt.Sprint(i)}, {"flag", fmt.Sprint(i%3 == 0)}}
	}
	return out
}

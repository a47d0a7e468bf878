package flows

import "testing"

// TestScanLine: the brackets one line of a flow opens and closes, with what is text
// (quoted scalars, comments) left out, and where they nest too deep.
func TestScanLine(t *testing.T) {
	for _, tt := range []struct {
		name  string
		line  string
		depth int
		want  lineScan
	}{
		{name: "flow mapping closed", line: "a: {b: [1, 2]}", want: lineScan{depth: 0, code: []byte("a: {b: [1, 2]}")}},
		{name: "opens two", line: "bbox: [[1, 2", want: lineScan{depth: 2, code: []byte("bbox: [[1, 2")}},
		{name: "closes what an earlier line opened", line: "  3]]", depth: 2, want: lineScan{code: []byte("  3]]")}},
		{name: "more closed than open stays at zero", line: "]]]", want: lineScan{code: []byte("]]]")}},
		{name: "brackets in a quoted value are text", line: `a: "[[[{{"`, want: lineScan{code: []byte(`a: "[[[{{"`)}},
		{name: "an escaped quote does not end the value", line: `a: "x\" [["`, want: lineScan{code: []byte(`a: "x\" [["`)}},
		{name: "a quote inside a plain scalar is text", line: "a: x 'y [", want: lineScan{depth: 1, code: []byte("a: x 'y [")}},
		{name: "a quoted value runs on", line: "a: 'one [", want: lineScan{code: []byte("a: 'one ["), quoted: true}},
		{name: "comment cut", line: "a: b # [[[", want: lineScan{code: []byte("a: b ")}},
		{name: "a hash inside a word is text", line: "a: b#[", want: lineScan{depth: 1, code: []byte("a: b#[")}},
		{name: "too deep", line: "[[[", depth: maxFlowDepth - 1, want: lineScan{tooDeep: 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := scanLine([]byte(tt.line), tt.depth)
			if got.depth != tt.want.depth || string(got.code) != string(tt.want.code) || got.quoted != tt.want.quoted || got.tooDeep != tt.want.tooDeep {
				t.Errorf("scanLine(%q, %d) = {depth %d, code %q, quoted %v, tooDeep %d}, want {%d, %q, %v, %d}", tt.line, tt.depth,
					got.depth, got.code, got.quoted, got.tooDeep, tt.want.depth, tt.want.code, tt.want.quoted, tt.want.tooDeep)
			}
		})
	}
}

func TestLeadingDashes(t *testing.T) {
	for _, tt := range []struct {
		line string
		want int
	}{{"- a", 1}, {"- - - x", 3}, {"-a", 0}, {"-\t- b", 2}, {"", 0}, {"--- ", 0}} {
		if got := leadingDashes([]byte(tt.line)); got != tt.want {
			t.Errorf("leadingDashes(%q) = %d, want %d", tt.line, got, tt.want)
		}
	}
}

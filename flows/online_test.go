package flows

import (
	"strings"
	"testing"
)

// TestTaskProblems: a problem found once the flow is valid is reported at its key's
// line and column, in the parser's words; a key the file does not hold falls back to the
// task's id.
func TestTaskProblems(t *testing.T) {
	src := `name: online
tasks:
  parcels:
    type: fake
    url: https://example.org/wfs
    target: {table: parcels}
    bbox: [11.4, 48.0, 11.6, 48.2]
`
	f, err := Parse("flow.yaml", []byte(src), Options{Registry: testRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, key, want string }{
		{name: "top key", key: "bbox", want: `flow.yaml:7:5: task "parcels": bbox: misses`},
		{name: "nested flow-style key", key: "target.table", want: `flow.yaml:6:14: task "parcels": target.table: misses`},
		{name: "absent key", key: "typename", want: `flow.yaml:3:3: task "parcels": typename: misses`},
		{name: "the task", key: "", want: `flow.yaml:3:3: task "parcels": misses`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := f.TaskProblems("parcels")
			p.At(tt.key, "misses")
			if got := p.Problems(); len(got) != 1 || !strings.HasPrefix(got[0].String(), tt.want) {
				t.Fatalf("= %v, want %q", got, tt.want)
			}
		})
	}
}

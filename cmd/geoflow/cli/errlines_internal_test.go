package cli

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestErrLines: the error a run ends with fits the terminal: every line within the width,
// URLs shortened (their queries, with keys in them, left out), nothing of the message lost
// but the queries.
func TestErrLines(t *testing.T) {
	const get = `Get "http://127.0.0.1:28391/wfs?token=REDACTED&SERVICE=WFS&REQUEST=GetCapabilities&ACCEPTVERSIONS=2.0.0%2C1.1.0%2C1.0.0": dial tcp 127.0.0.1:28391: connect: connection refused`
	tests := []struct {
		name, msg string
		width     int
		want      []string
	}{
		{name: "short", msg: "Run 1 failed: task \"parcels\" failed", width: 80, want: []string{`geoflow: Run 1 failed: task "parcels" failed`}},
		{name: "a planning failure with URLs", width: 79,
			msg:  `Run 1 failed: task "parcels": planning: reading the capabilities of http://127.0.0.1:28391/wfs?token=REDACTED: retry: GET http://127.0.0.1:28391/wfs?token=REDACTED&SERVICE=WFS&REQUEST=GetCapabilities&ACCEPTVERSIONS=2.0.0%2C1.1.0%2C1.0.0: network after 6 attempts: ` + get,
			want: []string{"geoflow: Run 1 failed:", "connection refused", "http://127.0.0.1:28391/wfs?…("}},
		{name: "narrow", msg: strings.Repeat("word ", 40), width: 40, want: []string{"geoflow: word"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines := errLines(tt.msg, tt.width)
			all := strings.Join(lines, "\n")
			for i, l := range lines {
				if n := utf8.RuneCountInString(l); n > tt.width {
					t.Errorf("line %d is %d wide, more than %d: %q", i, n, tt.width, l)
				}
				if i > 0 && !strings.HasPrefix(l, "         ") {
					t.Errorf("line %d is not indented under the message: %q", i, l)
				}
			}
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("missing %q in\n%s", w, all)
				}
			}
			if strings.Contains(all, "GetCapabilities") {
				t.Errorf("a URL's query is shown whole:\n%s", all)
			}
		})
	}
}

package server

import (
	"net/url"
	"strings"
	"testing"
)

// leavesSite reports whether a browser on http://geoflow.local/login, sent to next by a
// Location header, would end up on another site. It reads next as WHATWG URL parsing
// does: leading and trailing C0 controls and spaces trimmed, tabs and newlines dropped
// anywhere, a backslash taken for a slash.
func leavesSite(next string) bool {
	next = strings.TrimFunc(next, func(r rune) bool { return r <= ' ' })
	next = strings.Map(func(r rune) rune {
		switch r {
		case '\t', '\n', '\r':
			return -1
		case '\\':
			return '/'
		}
		return r
	}, next)
	base, _ := url.Parse("http://geoflow.local/login")
	ref, err := url.Parse(next)
	if err != nil {
		return false // the browser would not follow it anywhere we can tell; safeNext refuses it below
	}
	to := base.ResolveReference(ref)
	return to.Host != "geoflow.local" || to.Scheme != "http"
}

// TestLoginNext: after /login, a browser goes to a path of this server and nowhere
// else, whatever next says.
func TestLoginNext(t *testing.T) {
	tests := []struct {
		name, next, want string
	}{
		{"a page", "/runs/3", "/runs/3"},
		{"with a query", "/dlq?run=2&status=open", "/dlq?run=2&status=open"},
		{"escaped", "/flows/parcels?run=1%202", "/flows/parcels?run=1%202"},
		{"empty", "", "/"},
		{"relative", "runs", "/"},
		{"absolute URL", "https://evil.example/x", "/"},
		{"scheme-relative", "//evil.example/x", "/"},
		{"backslash", "/\\evil.example/x", "/"},
		{"tab", "/\t/evil.example/x", "/"},
		{"newline", "/\n/evil.example/x", "/"},
		{"carriage return", "/\r/evil.example", "/"},
		{"NUL", "/\x00/evil.example", "/"},
		{"DEL", "/\x7f/evil.example", "/"},
		{"space", "/ /evil.example", "/"},
		{"backslash later", "/runs\\..\\x", "/"},
		{"escaped slash", "/%2F/evil.example", "/"},
		{"javascript", "javascript:alert(1)", "/"},
		{"userinfo", "/@evil.example", "/@evil.example"}, // a path: no host comes before it
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := safeNext(tt.next); got != tt.want {
				t.Errorf("safeNext(%q) = %q, want %q", tt.next, got, tt.want)
			}
			if leavesSite(safeNext(tt.next)) {
				t.Errorf("safeNext(%q) leaves the site", tt.next)
			}
		})
	}
}

// FuzzLoginNext: no next makes a browser leave the site after /login.
func FuzzLoginNext(f *testing.F) {
	for _, s := range []string{"/", "/runs/1", "//x", "/\\x", "/\t/x", "/%09/x", "\\\\x", " //x", "/\u3000/x", "http:x", "/%2F%2Fx"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, next string) {
		got := safeNext(next)
		if got != "/" && got != next {
			t.Fatalf("safeNext(%q) = %q: neither next nor /", next, got)
		}
		if leavesSite(got) {
			t.Fatalf("safeNext(%q) = %q leaves the site", next, got)
		}
	})
}

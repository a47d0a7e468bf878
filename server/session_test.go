package server_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// postLogin posts the login form with token and next, without following the redirect.
func (u *ui) postLogin(token, next string) (int, string, http.Header) {
	u.t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.PostForm(u.srv.URL+"/login", url.Values{"token": {token}, "next": {next}})
	if err != nil {
		u.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// TestLoginFailureHeaders: the page of a failed sign-in, the one page that shows what a
// request sent (next), has every page's security headers: no framing, no sniffing, no
// caching.
func TestLoginFailureHeaders(t *testing.T) {
	const token = "s3cret-token-of-24-chars"
	u := newUI(t, uiOptions{token: token})
	code, body, h := u.postLogin("wrong-token-wrong-token", "/runs")
	if code != http.StatusUnauthorized || !strings.Contains(body, "not this server&#39;s token") {
		t.Fatalf("failed sign-in: %d\n%s", code, body)
	}
	want := map[string]string{
		"Content-Security-Policy": "frame-ancestors 'none'",
		"X-Content-Type-Options":  "nosniff",
		"Cache-Control":           "no-store",
		"Content-Type":            "text/html; charset=utf-8",
	}
	for name, w := range want {
		if got := h.Get(name); !strings.Contains(got, w) {
			t.Errorf("failed sign-in: %s %q, want %q in it", name, got, w)
		}
	}
}

// TestLoginNextStaysHome: after signing in, the browser goes to a path of this server,
// never to the site a crafted next names.
func TestLoginNextStaysHome(t *testing.T) {
	const token = "s3cret-token-of-24-chars"
	u := newUI(t, uiOptions{token: token})
	for next, want := range map[string]string{
		"/dlq?run=1":            "/dlq?run=1",
		"/\t/evil.example/x":    "/",
		"/\\evil.example/x":     "/",
		"//evil.example/x":      "/",
		"https://evil.example/": "/",
	} {
		code, _, h := u.postLogin(token, next)
		if code != http.StatusSeeOther || h.Get("Location") != want {
			t.Errorf("sign-in with next %q: %d to %q, want %q", next, code, h.Get("Location"), want)
		}
	}
}

package server_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
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
	if strings.Contains(body, "test PostGIS") {
		t.Errorf("the sign-in page, open to anyone, names the store:\n%s", body)
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

// signIn signs in with token and returns the session cookie ("name=value") and the
// whole Set-Cookie header.
func (u *ui) signIn(token string) (cookie, header string) {
	u.t.Helper()
	code, _, h := u.postLogin(token, "/")
	header = h.Get("Set-Cookie")
	if code != http.StatusSeeOther || header == "" {
		u.t.Fatalf("sign-in: %d, Set-Cookie %q", code, header)
	}
	return strings.SplitN(header, ";", 2)[0], header
}

// TestTokenProxyBasicAuth: behind a proxy that asks for its own password, the browser
// sends Authorization: Basic on every request; the session cookie still signs it in. A
// Bearer token, when given, decides alone.
func TestTokenProxyBasicAuth(t *testing.T) {
	const token = "s3cret-token-of-24-chars"
	u := newUI(t, uiOptions{token: token})
	cookie, _ := u.signIn(token)
	basic := "Basic cHJveHl1c2VyOnByb3h5cGFzcw==" // the proxy's proxyuser:proxypass
	tests := []struct {
		name, path string
		header     []string
		code       int
	}{
		{"page, Basic and the cookie", "/dlq", []string{"Authorization", basic, "Cookie", cookie}, http.StatusOK},
		{"API, Basic and the cookie", "/api/runs", []string{"Authorization", basic, "Cookie", cookie}, http.StatusOK},
		{"page, Basic alone", "/dlq", []string{"Authorization", basic}, http.StatusSeeOther},
		{"API, Basic alone", "/api/runs", []string{"Authorization", basic}, http.StatusUnauthorized},
		{"API, a wrong Bearer and the cookie", "/api/runs", []string{"Authorization", "Bearer wrong-token-wrong-token", "Cookie", cookie}, http.StatusUnauthorized},
		{"API, the Bearer token", "/api/runs", []string{"Authorization", "Bearer " + token}, http.StatusOK},
	}
	for _, tt := range tests {
		if code, _, _ := u.do("GET", tt.path, "", tt.header...); code != tt.code {
			t.Errorf("%s: GET %s: %d, want %d", tt.name, tt.path, code, tt.code)
		}
	}
}

// TestLoginSessionCookie: the session cookie ends (Max-Age, and an end signed into its
// value, so that a copy kept past it or an edited end opens nothing), is Secure when
// the UI sits behind TLS, and Sign out removes it.
func TestLoginSessionCookie(t *testing.T) {
	const token = "s3cret-token-of-24-chars"
	u := newUI(t, uiOptions{token: token})
	cookie, header := u.signIn(token)
	if !strings.Contains(header, "Max-Age=43200") || strings.Contains(header, "Secure") || strings.Contains(header, token) {
		t.Errorf("session cookie %q: want Max-Age=43200 (12h), not Secure over plain HTTP, no token in it", header)
	}
	if code, body, _ := u.do("GET", "/", "", "Cookie", cookie); code != http.StatusOK || !strings.Contains(body, `action="/logout"`) {
		t.Errorf("overview with the cookie: %d, or no Sign out", code)
	}
	// The end is signed: a later one written into the value opens nothing.
	end, mac, _ := strings.Cut(strings.TrimPrefix(cookie, "geoflow_session="), ".")
	forged := "geoflow_session=9" + end + "." + mac
	if code, _, _ := u.do("GET", "/api/runs", "", "Cookie", forged); code != http.StatusUnauthorized {
		t.Errorf("a cookie with its end moved on: %d, want 401", code)
	}
	// Sign out: the browser is told to drop the cookie, and sent to /login.
	code, _, h := u.do("POST", "/logout", "", "Cookie", cookie, "Sec-Fetch-Site", "same-origin")
	if code != http.StatusSeeOther || h.Get("Location") != "/login" || !strings.Contains(h.Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("sign out: %d to %q, Set-Cookie %q", code, h.Get("Location"), h.Get("Set-Cookie"))
	}
	if code, _, _ := u.do("POST", "/logout", "", "Cookie", cookie, "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"); code != http.StatusForbidden {
		t.Errorf("a sign-out from another site: %d, want 403", code)
	}

	// A short session, behind TLS: the cookie is Secure, and opens nothing once ended.
	short := newUI(t, uiOptions{token: token, session: time.Second, cookieSecure: true})
	cookie, header = short.signIn(token)
	if !strings.Contains(header, "Secure") || !strings.Contains(header, "Max-Age=1") {
		t.Errorf("session cookie %q: want Secure and Max-Age=1", header)
	}
	if code, _, _ := short.do("GET", "/api/runs", "", "Cookie", cookie); code != http.StatusOK {
		t.Errorf("a fresh session: %d", code)
	}
	time.Sleep(2 * time.Second)
	if code, _, _ := short.do("GET", "/api/runs", "", "Cookie", cookie); code != http.StatusUnauthorized {
		t.Errorf("an ended session: %d, want 401", code)
	}
}

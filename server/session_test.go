package server_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
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

// fakeClock is a server's clock (Options.Now) that the test moves.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) Add(d time.Duration) { c.ns.Add(int64(d)) }

// metric is the value of the series named series (with its labels, as exposed) on
// /metrics, read with the token from the client address from.
func (u *ui) metric(from, token, series string) string {
	u.t.Helper()
	code, body, _ := u.doFrom(from, "GET", "/metrics", "", "Authorization", "Bearer "+token)
	if code != http.StatusOK {
		u.t.Fatalf("GET /metrics: %d %s", code, body)
	}
	for line := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			return v
		}
	}
	return "absent"
}

// TestSigninThrottle: 300 wrong Bearer tokens from one client in a burst: the first 5 are
// checked and answered 401, each logged; the 5th throttles the client, logged once; the
// 295 others are answered 429 with Retry-After, unchecked and unlogged. No log line holds
// a token. Another client is not affected; the throttled one still gets in with its
// session cookie, and with the token once the minute has passed.
func TestSigninThrottle(t *testing.T) {
	const token = "s3cret-token-of-24-chars"
	clock := newFakeClock()
	u := newUI(t, uiOptions{token: token, now: clock.Now})
	cookie, _ := u.signIn(token)

	codes := map[int]int{}
	for i := range 300 {
		code, body, h := u.do("GET", "/api/runs", "", "Authorization", fmt.Sprintf("Bearer wrong-guess-%03d-of-the-token", i))
		codes[code]++
		if code == http.StatusTooManyRequests && (h.Get("Retry-After") != "60" || !strings.Contains(body, "too many failed sign-ins")) {
			t.Fatalf("guess %d: 429 with Retry-After %q, want 60 (the clock stands still):\n%s", i, h.Get("Retry-After"), body)
		}
		if want := http.StatusUnauthorized; i < 5 && code != want {
			t.Fatalf("guess %d: %d, want %d", i, code, want)
		}
	}
	if codes[http.StatusUnauthorized] != 5 || codes[http.StatusTooManyRequests] != 295 || len(codes) != 2 {
		t.Errorf("300 wrong tokens answered %v, want 5 401 and 295 429", codes)
	}
	lines := u.logs.matching("sign-in")
	failed := u.logs.matching(`msg="failed sign-in" client=127.0.0.1 method=GET path=/api/runs credential=bearer`)
	throttled := u.logs.matching(`client 127.0.0.1 throttled for 60 s after 5 failed sign-ins`)
	if len(lines) != 6 || len(failed) != 5 || len(throttled) != 1 {
		t.Errorf("the log has %d lines about sign-ins (%d failures, %d throttled), want 6 (5, 1):\n%s",
			len(lines), len(failed), len(throttled), strings.Join(lines, "\n"))
	}
	for _, line := range lines {
		if strings.Contains(line, "wrong-guess") || strings.Contains(line, token) {
			t.Errorf("a log line holds a token: %s", line)
		}
	}
	// Another client (another loopback address) is not throttled: it reads the counts.
	if got := u.metric("127.0.0.2", token, `geoflow_ui_signin_failures_total{kind="bearer"}`); got != "5" {
		t.Errorf("bearer failures on /metrics: %s, want 5", got)
	}
	if got := u.metric("127.0.0.2", token, "geoflow_ui_signin_throttled_total"); got != "295" {
		t.Errorf("throttled sign-ins on /metrics: %s, want 295", got)
	}

	// The throttled client: its genuine session cookie passes; its token, even the right
	// one, is not checked, on the API or on /login.
	if code, _, _ := u.do("GET", "/api/runs", "", "Cookie", cookie); code != http.StatusOK {
		t.Errorf("the session cookie of a throttled client: %d, want 200", code)
	}
	if code, _, h := u.do("GET", "/api/runs", "", "Authorization", "Bearer "+token); code != http.StatusTooManyRequests || h.Get("Retry-After") != "60" {
		t.Errorf("the right token from a throttled client: %d (Retry-After %q), want 429", code, h.Get("Retry-After"))
	}
	if code, body, h := u.postLogin(token, "/"); code != http.StatusTooManyRequests || h.Get("Retry-After") != "60" ||
		!strings.Contains(body, "Too many failed sign-ins from this address: try again in 60 s.") || h.Get("Set-Cookie") != "" {
		t.Errorf("sign-in on /login by a throttled client: %d (Retry-After %q, Set-Cookie %q):\n%s", code, h.Get("Retry-After"), h.Get("Set-Cookie"), body)
	}
	if n := len(u.logs.matching("sign-in")); n != 6 {
		t.Errorf("refusals were logged: %d lines about sign-ins, want still 6", n)
	}

	// Retry-After counts down with the clock; once the minute has passed the token works.
	clock.Add(45 * time.Second)
	if _, _, h := u.do("GET", "/api/runs", "", "Authorization", "Bearer "+token); h.Get("Retry-After") != "15" {
		t.Errorf("45 s later: Retry-After %q, want 15", h.Get("Retry-After"))
	}
	clock.Add(15 * time.Second)
	if code, _, _ := u.do("GET", "/api/runs", "", "Authorization", "Bearer "+token); code != http.StatusOK {
		t.Errorf("the token a minute after the failures: %d, want 200", code)
	}
	if code, _, _ := u.do("GET", "/api/runs", "", "Authorization", "Bearer wrong-guess-after-the-minute"); code != http.StatusUnauthorized {
		t.Errorf("a wrong token a minute after: %d, want 401 (checked again)", code)
	}
}

// TestSigninFailureKinds: a wrong token on /login and a forged session cookie are failed
// sign-ins too, logged by kind without their value; a request without any credential,
// and a genuine session cookie past its end, are not. A cookie that opens nothing is
// removed from the browser.
func TestSigninFailureKinds(t *testing.T) {
	const token = "s3cret-token-of-24-chars"
	clock := newFakeClock()
	u := newUI(t, uiOptions{token: token, now: clock.Now})
	cookie, _ := u.signIn(token)
	end, mac, _ := strings.Cut(strings.TrimPrefix(cookie, "geoflow_session="), ".")
	forged := "geoflow_session=" + end + "." + strings.Repeat("0", len(mac))

	if code, _, _ := u.do("GET", "/api/runs", ""); code != http.StatusUnauthorized {
		t.Errorf("no credential: %d, want 401", code)
	}
	if code, _, _ := u.postLogin("wrong-login-typed-in-the-form", "/"); code != http.StatusUnauthorized {
		t.Errorf("a wrong token on /login: %d, want 401", code)
	}
	code, _, h := u.do("GET", "/runs", "", "Cookie", forged)
	if code != http.StatusSeeOther || !strings.Contains(h.Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("a forged cookie on a page: %d, Set-Cookie %q: want the way to /login, and the cookie removed", code, h.Get("Set-Cookie"))
	}
	clock.Add(13 * time.Hour) // the session lasts 12
	code, _, h = u.do("GET", "/api/runs", "", "Cookie", cookie)
	if code != http.StatusUnauthorized || !strings.Contains(h.Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("an ended session: %d, Set-Cookie %q: want 401, and the cookie removed", code, h.Get("Set-Cookie"))
	}

	want := map[string]string{"bearer": "0", "login": "1", "cookie": "1"}
	for kind, n := range want {
		if got := u.metric("", token, `geoflow_ui_signin_failures_total{kind="`+kind+`"}`); got != n {
			t.Errorf("failures by %s: %s, want %s", kind, got, n)
		}
	}
	lines := u.logs.matching(`msg="failed sign-in"`)
	if len(lines) != 2 || !strings.Contains(lines[0], "method=POST path=/login credential=login") ||
		!strings.Contains(lines[1], "method=GET path=/runs credential=cookie") {
		t.Errorf("failed sign-ins logged:\n%s\nwant the /login one and the forged cookie's", strings.Join(lines, "\n"))
	}
	for _, line := range u.logs.matching("sign-in") {
		if strings.Contains(line, "wrong-login") || strings.Contains(line, mac[:16]) || strings.Contains(line, end) {
			t.Errorf("a log line holds a credential: %s", line)
		}
	}
}

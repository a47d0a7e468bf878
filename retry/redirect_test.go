package retry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/geoflow/geoflow/dlq"
)

// seen records the requests a fixture server received.
type seen struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (s *seen) add(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, r.Clone(context.Background()))
}

func (s *seen) all() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.reqs...)
}

// TestRedirectsKeepCredentials: a task's headers, its URL's userinfo and key-like
// parameters go only to the origin they were given for. A redirect within the origin is
// followed; one to another origin is refused by default, as a permanent invalid_request
// failure, and followed without the credentials with strip_credentials. No redirect
// carries a Referer the task did not set (Go's client would send the previous URL, its
// apikey included).
func TestRedirectsKeepCredentials(t *testing.T) {
	var other seen
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.add(r)
		io.WriteString(w, "elsewhere")
	}))
	t.Cleanup(elsewhere.Close)
	var home seen
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		home.add(r)
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, "/here?page=2", http.StatusFound)
		case "/away":
			http.Redirect(w, r, elsewhere.URL+"/tile.png", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		default:
			io.WriteString(w, "home")
		}
	}))
	t.Cleanup(origin.Close)
	u, _ := url.Parse(origin.URL)

	get := func(path string, policy Redirects) (string, error) {
		h := New(&Options{Seed: 1})
		var body string
		err := h.Do(context.Background(), Request{Unit: "u", Redirects: policy, Policy: Policy{MaxAttempts: 1},
			New: func(ctx context.Context) (*http.Request, error) {
				target := *u
				target.User = url.User("TOKEN")
				target.Path = path
				target.RawQuery = "apikey=SECRETKEY&x=1"
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
				if err == nil {
					req.Header.Set("X-Api-Key", "SECRETHEADER")
					req.Header.Set("Private-Token", "SECRETTOKEN")
					req.Header.Set("If-None-Match", `"v1"`)
					req.Header.Set("User-Agent", "geoflow")
				}
				return req, err
			}}, func(r *http.Response) error {
			b, err := io.ReadAll(r.Body)
			body = string(b)
			return err
		})
		return body, err
	}
	leaked := func(r *http.Request) string {
		var dump strings.Builder
		r.Header.Write(&dump)
		dump.WriteString(r.URL.String())
		for _, s := range []string{"SECRETHEADER", "SECRETTOKEN", "SECRETKEY", "TOKEN", "Referer"} {
			if strings.Contains(dump.String(), s) {
				return s
			}
		}
		return ""
	}

	t.Run("within the origin", func(t *testing.T) {
		body, err := get("/moved", "")
		if err != nil || body != "home" {
			t.Fatalf("got %q, %v; want the redirect followed", body, err)
		}
		reqs := home.all()
		last := reqs[len(reqs)-1]
		if last.URL.Path != "/here" || last.Header.Get("X-Api-Key") != "SECRETHEADER" {
			t.Errorf("the redirected request: %s with X-Api-Key %q; want the task's headers kept within the origin", last.URL, last.Header.Get("X-Api-Key"))
		}
		if ref := last.Header.Get("Referer"); ref != "" {
			t.Errorf("Referer %q sent on a redirect", ref)
		}
	})
	t.Run("another origin refused", func(t *testing.T) {
		before := len(other.all())
		_, err := get("/away", "")
		var e *Error
		if !errors.As(err, &e) || e.Class != dlq.ClassInvalid || !strings.Contains(e.Error(), "another origin") ||
			!strings.Contains(e.Error(), "strip_credentials") || e.Attempts != 1 {
			t.Fatalf("err = %v; want a permanent invalid_request naming the other origin and the setting", err)
		}
		if strings.Contains(e.Error(), "SECRETKEY") {
			t.Errorf("the error shows the key: %v", e)
		}
		if n := len(other.all()) - before; n != 0 {
			t.Errorf("the other origin got %d requests", n)
		}
	})
	t.Run("another origin with strip_credentials", func(t *testing.T) {
		body, err := get("/away", RedirectsStripCredentials)
		if err != nil || body != "elsewhere" {
			t.Fatalf("got %q, %v; want the redirect followed", body, err)
		}
		reqs := other.all()
		last := reqs[len(reqs)-1]
		if s := leaked(last); s != "" || last.Header.Get("Authorization") != "" {
			t.Errorf("the other origin received %s (Authorization %q): %v %s", s, last.Header.Get("Authorization"), last.Header, last.URL)
		}
		if last.Header.Get("User-Agent") != "geoflow" || last.Header.Get("If-None-Match") != `"v1"` {
			t.Errorf("standard headers lost: %v", last.Header)
		}
	})
	t.Run("another origin, no credentials", func(t *testing.T) {
		// A plain request (a public tile server redirecting to its CDN) is followed.
		h := New(&Options{Seed: 1})
		var body string
		err := h.Do(context.Background(), Request{Unit: "u", Policy: Policy{MaxAttempts: 1}, New: func(ctx context.Context) (*http.Request, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, origin.URL+"/away?x=1", nil)
			if err == nil {
				req.Header.Set("User-Agent", "geoflow")
			}
			return req, err
		}}, func(r *http.Response) error {
			b, err := io.ReadAll(r.Body)
			body = string(b)
			return err
		})
		if err != nil || body != "elsewhere" {
			t.Fatalf("got %q, %v; want the redirect followed", body, err)
		}
		reqs := other.all()
		if ref := reqs[len(reqs)-1].Header.Get("Referer"); ref != "" {
			t.Errorf("Referer %q sent", ref)
		}
	})
	t.Run("a loop", func(t *testing.T) {
		_, err := get("/loop", "")
		var e *Error
		if !errors.As(err, &e) || e.Class != dlq.ClassHTTP4xx || !strings.Contains(e.Error(), "stopped after 10 redirects") || e.Attempts != 1 {
			t.Fatalf("err = %v; want a permanent failure after 10 redirects", err)
		}
	})
	t.Run("a bad setting", func(t *testing.T) {
		if _, err := get("/", "sometimes"); err == nil || !strings.Contains(err.Error(), `redirects must be same_origin or strip_credentials, not "sometimes"`) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestSameOrigin(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"https://a.example/x", "https://a.example/y?z", true},
		{"https://a.example/x", "https://A.EXAMPLE:443/y", true},
		{"http://a.example/x", "https://a.example/y", true},  // an upgrade
		{"https://a.example/x", "http://a.example/y", false}, // a downgrade
		{"http://a.example:8080/x", "https://a.example/y", false},
		{"https://a.example/x", "https://b.example/x", false},
		{"https://a.example/x", "https://a.example:8443/x", false},
		{"https://example.org/x", "https://evil.example.org/x", false},
	}
	for _, tt := range tests {
		a, _ := url.Parse(tt.a)
		b, _ := url.Parse(tt.b)
		if got := SameOrigin(a, b); got != tt.want {
			t.Errorf("SameOrigin(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

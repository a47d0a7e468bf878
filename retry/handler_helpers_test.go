package retry

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// script is a fixture that answers each request with the next step of a
// script and repeats the last step when the script runs out.
type script struct {
	mu    sync.Mutex
	steps []http.HandlerFunc
	hits  atomic.Int64
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(s.hits.Add(1)) - 1
	s.mu.Lock()
	step := s.steps[min(n, len(s.steps)-1)]
	s.mu.Unlock()
	step(w, r)
}

func status(code int, body string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// truncated promises a long body, sends a part of it and drops the
// connection, as a proxy or a crashing server does.
func truncated(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Length", "1000")
	w.WriteHeader(200)
	io.WriteString(w, `{"type":"FeatureCollection","features":[`)
	w.(http.Flusher).Flush()
	panic(http.ErrAbortHandler)
}

func newHandler(t *testing.T, clock Clock, opts Options) (*Handler, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	opts.Clock = clock
	opts.Seed = 1
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return New(&opts), &logs
}

func get(url string) func(ctx context.Context) (*http.Request, error) {
	return func(ctx context.Context) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	}
}

func readAll(dst *[]byte) func(*http.Response) error {
	return func(resp *http.Response) error {
		b, err := io.ReadAll(resp.Body)
		*dst = b
		return err
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

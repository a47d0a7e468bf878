package retry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestCountRequests: a Tally holds what the requests sent under its context asked of each
// host, retries, 429s and waits included, and nothing of requests sent under another.
func TestCountRequests(t *testing.T) {
	s := &script{steps: []http.HandlerFunc{status(503, ""), status(429, "", "Retry-After", "2"), status(200, "ok")}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	clock := newFakeClock(true)
	h, _ := newHandler(t, clock, Options{})

	ctx, tally := CountRequests(context.Background())
	var body []byte
	if err := h.Do(ctx, Request{New: get(srv.URL)}, readAll(&body)); err != nil {
		t.Fatal(err)
	}
	if err := h.Do(ctx, Request{New: get(srv.URL)}, readAll(&body)); err != nil {
		t.Fatal(err)
	}
	// Another unit's request is its own.
	if err := h.Do(context.Background(), Request{New: get(srv.URL)}, readAll(&body)); err != nil {
		t.Fatal(err)
	}
	// A 503, a 429 and a 200, then one 200: every request sent is counted, retries included.
	if got := tally.Requests(); got != 4 {
		t.Errorf("Requests = %d, want 4 (server saw %d, one of them under another context)", got, s.hits.Load())
	}
	hosts := tally.Hosts()
	if len(hosts) != 1 {
		t.Fatalf("Hosts = %+v, want one host", hosts)
	}
	st := hosts[0]
	if st.Host != hostKey(mustURL(t, srv.URL)) || st.Requests != 4 || st.Retries != 2 || st.RateLimited != 1 || st.BreakerOpened != 0 {
		t.Errorf("Hosts()[0] = %+v; want 4 requests, 2 retries, one 429, no breaker", st)
	}
	// The backoff after the 503 and the 2 s the 429 asked for, at least.
	if st.Waited < 2*time.Second {
		t.Errorf("Waited = %s, want at least the 2s of the Retry-After", st.Waited)
	}
}

package retry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestCountRequests(t *testing.T) {
	s := &script{steps: []http.HandlerFunc{status(503, ""), status(503, ""), status(200, "ok")}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	h, _ := newHandler(t, newFakeClock(true), Options{})

	ctx := CountRequests(context.Background())
	var body []byte
	if err := h.Do(ctx, Request{New: get(srv.URL)}, readAll(&body)); err != nil {
		t.Fatal(err)
	}
	if err := h.Do(ctx, Request{New: get(srv.URL)}, readAll(&body)); err != nil {
		t.Fatal(err)
	}
	// Two 503s and a 200, then one 200: every request sent is counted, retries included.
	if got := RequestsSent(ctx); got != 4 {
		t.Errorf("RequestsSent = %d, want 4 (server saw %d)", got, s.hits.Load())
	}
	if got := RequestsSent(context.Background()); got != 0 {
		t.Errorf("RequestsSent without CountRequests = %d, want 0", got)
	}
}

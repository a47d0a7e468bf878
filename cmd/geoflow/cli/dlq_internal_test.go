package cli

import "testing"

// TestDLQReasonFirst: `dlq list` cut its ERROR column inside the URL of the handler's
// preamble; it now shows the server's reason, the class and status having columns of
// their own.
func TestDLQReasonFirst(t *testing.T) {
	for in, want := range map[string]string{
		`fetching tile 15/17430/11373: retry: GET http://127.0.0.1:39549/15/17430/11373.png?apikey=REDACTED: parse 200 after 1 attempt: the server answered "text/html" instead of an image`:                `the server answered "text/html" instead of an image`,
		`retry: GET https://wfs.example.org/wfs?SERVICE=WFS&REQUEST=GetFeature&TYPENAMES=gf:parcels&BBOX=11.45,48.05,11.5,48.1: http_5xx 503 after 6 attempts: 503 Service Unavailable: upstream timed out`: `503 Service Unavailable: upstream timed out`,
		`the store failed: connection refused`: `the store failed: connection refused`,
		`retry: GET http://wfs.example.org:80/wfs?REQUEST=GetFeature: http_5xx 500: HTTP 500 Internal Server Error from http://wfs.example.org:80 (breaker open since 2026-11-27T13:04:10Z; this unit was not sent)`: `HTTP 500 Internal Server Error from http://wfs.example.org:80 (breaker open since 2026-11-27T13:04:10Z; this unit was not sent)`,
	} {
		if got := dlqReason(in); got != want {
			t.Errorf("dlqReason(%q) = %q, want %q", in, got, want)
		}
	}
}

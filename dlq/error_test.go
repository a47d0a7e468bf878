package dlq

import "testing"

func TestReason(t *testing.T) {
	const url = "http://127.0.0.1:18090/wfs?token=REDACTED&SERVICE=WFS&REQUEST=GetFeature&BBOX=48.06%2C11.51%2C48.08%2C11.53"
	tests := []struct {
		name, err, want string
	}{
		{name: "http 500 after retries",
			err:  "retry: GET " + url + `: http_5xx 500 after 6 attempts: no attempts left (max_attempts): 500 Internal Server Error: <?xml version="1.0" encoding="UTF-8"?>: HTTP 500 Internal Server Error`,
			want: "HTTP 500 Internal Server Error (after 6 attempts: no attempts left)"},
		{name: "server's words kept",
			err:  "retry: GET " + url + ": http_5xx 503 after 3 attempts: no attempts left (max_attempts): 503 Service Unavailable: backend down for maintenance",
			want: "HTTP 503 Service Unavailable: backend down for maintenance (after 3 attempts: no attempts left)"},
		{name: "not sent: the breaker stayed open",
			err:  "retry: GET " + url + ": http_5xx 500: HTTP 500 Internal Server Error from http://127.0.0.1:18090 (breaker open since 2026-11-27T13:04:10Z; this unit was not sent)",
			want: "HTTP 500 Internal Server Error from http://127.0.0.1:18090 (breaker open since 2026-11-27T13:04:10Z; this unit was not sent)"},
		{name: "circuit open, no status",
			err:  "retry: GET " + url + ": circuit_open after 2 attempts: circuit breaker open for 127.0.0.1:18090; gave up: it stays open past max_elapsed 5m0s",
			want: "circuit_open: circuit breaker open for 127.0.0.1:18090; gave up: it stays open past max_elapsed 5m0s (after 2 attempts)"},
		{name: "budget exhausted",
			err:  "retry: GET " + url + ": rate_limited 429 after 2 attempts: retry budget of host 127.0.0.1:18090 exhausted, not retried: 429 Too Many Requests",
			want: "HTTP 429 Too Many Requests (after 2 attempts: retry budget of host 127.0.0.1:18090 exhausted, not retried)"},
		{name: "max elapsed",
			err:  "retry: GET " + url + ": timeout after 4 attempts: gave up: next attempt would start 5m1s after the first, past max_elapsed 5m0s: attempt timed out after 30s",
			want: "timeout: attempt timed out after 30s (after 4 attempts: gave up: next attempt would start 5m1s after the first, past max_elapsed 5m0s)"},
		{name: "one attempt, singular",
			err:  "retry: POST " + url + ": http_4xx 400 after 1 attempt: 400 Bad Request: InvalidParameterValue",
			want: "HTTP 400 Bad Request: InvalidParameterValue (after 1 attempt)"},
		{name: "wrapped by a task",
			err:  "page 3 of gf:parcels: retry: GET " + url + ": http_5xx 502 after 6 attempts: no attempts left (max_attempts): 502 Bad Gateway",
			want: "HTTP 502 Bad Gateway (after 6 attempts: no attempts left) [page 3 of gf:parcels]"},
		{name: "a 200 that is no image",
			err:  `fetching tile 15/17430/11373: retry: GET http://127.0.0.1:39549/15/17430/11373.png?apikey=REDACTED: parse 200 after 1 attempt: the server answered "text/html" instead of an image`,
			want: `parse: the server answered "text/html" instead of an image (after 1 attempt) [fetching tile 15/17430/11373]`},
		{name: "no request",
			err:  "retry: canceled: context ended: context canceled",
			want: "canceled: context ended: context canceled"},
		{name: "not the handler's", err: "parsing GML at byte 512: unexpected EOF\n", want: "parsing GML at byte 512: unexpected EOF"},
		{name: "empty", err: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Reason(tt.err); got != tt.want {
				t.Errorf("Reason(%q)\n got %q\nwant %q", tt.err, got, tt.want)
			}
		})
	}
}

package retry

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/geoflow/geoflow/dlq"
)

// TestSummaries: per host, at most one summary every 5s while retries go on, the rest
// when the run flushes; the clock is the test's.
func TestSummaries(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	r503 := retried{status: 503, class: dlq.ClassHTTP5xx, wait: 1200 * time.Millisecond}
	r429 := retried{status: 429, class: dlq.ClassRateLimited, hint: 2 * time.Second, wait: 4100 * time.Millisecond}
	type step struct {
		at    time.Duration
		host  string
		r     *retried // nil: ask what is due, without a retry
		flush bool
		want  []string
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "one line per 5s, then the rest at the end", steps: []step{
			{at: 0, host: "http://a", r: &r503},
			{at: time.Second, host: "http://a", r: &r429},
			{at: 4900 * time.Millisecond, host: "http://a", r: &r503},
			{at: 5 * time.Second, host: "http://a", r: &r503,
				want: []string{"a: 4 retries in 5s (3×503, 1×429 Retry-After 2s), max wait 4.1s"}},
			{at: 6 * time.Second, host: "http://a", r: &r503},
			{at: 9 * time.Second},
			{at: 9 * time.Second, flush: true, want: []string{"a: 1 retry in 3s (1×503), max wait 1.2s"}},
			{at: 20 * time.Second, flush: true},
		}},
		{name: "hosts apart, due without a retry", steps: []step{
			{at: 0, host: "http://a", r: &r503},
			{at: 2 * time.Second, host: "https://b:8443", r: &r429},
			{at: 5 * time.Second, want: []string{"a: 1 retry in 5s (1×503), max wait 1.2s"}},
			{at: 6 * time.Second},
			{at: 7 * time.Second, want: []string{"b:8443: 1 retry in 5s (1×429 Retry-After 2s), max wait 4.1s"}},
		}},
		{name: "timeouts have no status", steps: []step{
			{at: 0, host: "http://a", r: &retried{class: dlq.ClassTimeout, wait: 800 * time.Millisecond}},
			{at: 0, flush: true, want: []string{"a: 1 retry in 1s (1×timeout), max wait 800ms"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSummaries(5 * time.Second)
			for i, st := range tt.steps {
				var got []hostRetries
				switch {
				case st.r != nil:
					got = s.add(at(st.at), st.host, *st.r)
				case st.flush:
					got = s.flush(at(st.at))
				default:
					got = s.due(at(st.at))
				}
				lines := make([]string, len(got))
				for j, h := range got {
					lines[j] = h.String()
				}
				if strings.Join(lines, "\n") != strings.Join(st.want, "\n") {
					t.Errorf("step %d at %s: got %q, want %q", i, st.at, lines, st.want)
				}
			}
		})
	}
}

// TestSummaryFits: however many causes and however long the host, a summary line is at
// most summaryLen runes.
func TestSummaryFits(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name, host string
		causes     map[string]int
		want       string
	}{
		{name: "many causes", host: "http://geodienste.example.org",
			causes: map[string]int{"503": 9, "429": 3, "502": 2, "500": 1, "timeout": 1},
			want:   "geodienste.example.org: 16 retries in 5s (9×503, …), max wait 4.1s"},
		{name: "long host", host: "https://a-very-long-host-name-of-a-regional-geodata-portal.example.org:8443",
			causes: map[string]int{"503": 12}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			for _, c := range tt.causes {
				n += c
			}
			h := hostRetries{host: tt.host, n: n, since: t0, until: t0.Add(5 * time.Second), causes: tt.causes,
				maxHint: 2 * time.Second, maxWait: 4100 * time.Millisecond}
			got := h.String()
			if l := len([]rune(got)); l > summaryLen {
				t.Errorf("%q is %d runes, want at most %d", got, l, summaryLen)
			}
			if tt.want != "" && got != tt.want[:len(got)] {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRetriesLogAtDebug: each retry is a debug line; info level sees only the summary
// the run's end flushes, whose JSON keeps the figures.
func TestRetriesLogAtDebug(t *testing.T) {
	s := &script{steps: []http.HandlerFunc{status(503, "busy"), status(503, "busy"), status(200, "ok")}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	var b bytes.Buffer
	h, _ := newHandler(t, newFakeClock(true), Options{Logger: slog.New(slog.NewJSONHandler(&b, nil))})
	if err := h.Do(context.Background(), Request{Unit: "u", New: get(srv.URL + "/wfs?token=s3cr3t")}, func(*http.Response) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `"msg":"retrying"`) {
		t.Errorf("a retry logged at info level:\n%s", &b)
	}
	h.FlushRetrySummaries(context.Background())
	if !strings.Contains(b.String(), `: 2 retries in 1s (2×503), max wait`) || !strings.Contains(b.String(), `"summary":{"host":"`+srv.URL+`","retries":2`) {
		t.Errorf("no summary of the 2 retries:\n%s", &b)
	}
}

package retry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoflow/geoflow/dlq"
)

// exceptionReport is an OGC exception report as MapServer sends it, after pad
// bytes of XML comment.
func exceptionReport(code string, pad int) string {
	return `<?xml version="1.0" encoding="UTF-8"?>` + "\n<!--" + strings.Repeat(" ", pad) + "-->\n" +
		`<ows:ExceptionReport xmlns:ows="http://www.opengis.net/ows/1.1" version="2.0.0">` +
		`<ows:Exception exceptionCode="` + code + `"><ows:ExceptionText>msWFSGetFeature(): ` + code +
		`</ows:ExceptionText></ows:Exception></ows:ExceptionReport>`
}

// owsClassify classes OGC exception reports as a WFS task does: a server whose own
// database is down (NoApplicableCode) is retried, a bad parameter is not.
func owsClassify(status int, body []byte) error {
	switch {
	case bytes.Contains(body, []byte(`exceptionCode="NoApplicableCode"`)):
		return Transient(dlq.ClassExceptionReport, fmt.Errorf("HTTP %d: NoApplicableCode", status))
	case bytes.Contains(body, []byte(`exceptionCode="InvalidParameterValue"`)):
		return Permanent(dlq.ClassExceptionReport, fmt.Errorf("HTTP %d: InvalidParameterValue", status))
	}
	return nil
}

func TestDoClassify(t *testing.T) {
	ok := status(200, "ok")
	tests := []struct {
		name      string
		steps     []http.HandlerFunc
		classify  func(int, []byte) error
		accept    []int
		wantClass dlq.Class
		wantHits  int64
		wantCode  int
		wantMsg   string
		wantAsked int // calls of classify
	}{
		{name: "400 classed transient is retried", classify: owsClassify, wantHits: 2, wantAsked: 1,
			steps: []http.HandlerFunc{status(400, exceptionReport("NoApplicableCode", 0)), ok}},
		{name: "exception code past the snippet is seen", classify: owsClassify, wantHits: 2, wantAsked: 1,
			steps: []http.HandlerFunc{status(400, exceptionReport("NoApplicableCode", 3000)), ok}},
		{name: "400 classed nil stays http_4xx", classify: owsClassify, wantAsked: 1,
			steps:     []http.HandlerFunc{status(400, "bad bbox"), ok},
			wantClass: dlq.ClassHTTP4xx, wantHits: 1, wantCode: 400, wantMsg: "400 Bad Request: bad bbox"},
		{name: "503 classed permanent is not retried", classify: owsClassify, wantAsked: 1,
			steps:     []http.HandlerFunc{status(503, exceptionReport("InvalidParameterValue", 0)), ok},
			wantClass: dlq.ClassExceptionReport, wantHits: 1, wantCode: 503, wantMsg: "503 Service Unavailable: HTTP 503: InvalidParameterValue"},
		{name: "400 classed transient every time gives up", classify: owsClassify, wantAsked: 3,
			steps:     []http.HandlerFunc{status(400, exceptionReport("NoApplicableCode", 0))},
			wantClass: dlq.ClassExceptionReport, wantHits: 3, wantCode: 400, wantMsg: "no attempts left (max_attempts)"},
		{name: "other error ignored", wantHits: 2, wantAsked: 1,
			classify: func(int, []byte) error { return errors.New("not made by Permanent") },
			steps:    []http.HandlerFunc{status(503, ""), ok}},
		{name: "2xx not asked", wantHits: 1,
			classify: func(int, []byte) error { return Permanent(dlq.ClassParse, nil) },
			steps:    []http.HandlerFunc{ok}},
		{name: "accepted status not asked", wantHits: 1, accept: []int{404},
			classify: func(int, []byte) error { return Permanent(dlq.ClassParse, nil) },
			steps:    []http.HandlerFunc{status(404, exceptionReport("InvalidParameterValue", 0))}},
		{name: "message redacted", wantAsked: 1,
			classify: func(_ int, body []byte) error {
				return Permanent(dlq.ClassExceptionReport, fmt.Errorf("server said %s", body))
			},
			steps: []http.HandlerFunc{func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(400)
				fmt.Fprintf(w, "key %s refused", r.URL.Query().Get("apikey"))
			}},
			wantClass: dlq.ClassExceptionReport, wantHits: 1, wantCode: 400, wantMsg: "server said key REDACTED refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{steps: tt.steps}
			srv := httptest.NewServer(s)
			defer srv.Close()
			h, _ := newHandler(t, newFakeClock(true), Options{})
			var asked atomic.Int64
			var said atomic.Value // classify's last error
			err := h.Do(context.Background(), Request{
				Policy:       Policy{MaxAttempts: 3},
				AcceptStatus: tt.accept,
				Classify: func(status int, body []byte) error {
					asked.Add(1)
					if len(body) > 4<<10 {
						t.Errorf("classify shown %d bytes, want at most 4 KiB", len(body))
					}
					err := tt.classify(status, body)
					if err != nil {
						said.Store(err)
					}
					return err
				},
				New: get(srv.URL + "/wfs?apikey=S3CR3TKEY"),
			}, func(resp *http.Response) error { _, err := io.ReadAll(resp.Body); return err })
			if got := ClassOf(err); got != tt.wantClass {
				t.Errorf("class = %q, want %q (err %v)", got, tt.wantClass, err)
			}
			if got := s.hits.Load(); got != tt.wantHits {
				t.Errorf("server hits = %d, want %d", got, tt.wantHits)
			}
			if got := asked.Load(); got != int64(tt.wantAsked) {
				t.Errorf("classify asked %d times, want %d", got, tt.wantAsked)
			}
			if err == nil {
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Do returned %T, want *Error", err)
			}
			if e.Status != tt.wantCode || e.Attempts != int(tt.wantHits) {
				t.Errorf("status %d after %d attempts, want %d after %d", e.Status, e.Attempts, tt.wantCode, tt.wantHits)
			}
			if !strings.Contains(e.Message, tt.wantMsg) {
				t.Errorf("message = %q, want it to contain %q", e.Message, tt.wantMsg)
			}
			if n := strings.Count(e.Error(), fmt.Sprintf("after %d attempt", e.Attempts)); n > 1 {
				t.Errorf("the error says the attempts %d times: %v", n, e)
			}
			if e.Class == dlq.ClassExceptionReport && !errors.Is(err, said.Load().(error)) {
				t.Errorf("err = %v, want the error Classify returned in its chain", err)
			}
			if len(e.Snippet) > snippetLen {
				t.Errorf("snippet of %d bytes, want at most %d", len(e.Snippet), snippetLen)
			}
			if strings.Contains(err.Error(), "S3CR3TKEY") || strings.Contains(e.Snippet, "S3CR3TKEY") {
				t.Errorf("secret leaked: %v / snippet %q", err, e.Snippet)
			}
		})
	}
}

// TestDoClassifyHostFault: an answer Classify finds transient counts against the host's
// breaker like a 5xx; one it finds permanent does not, like a 4xx.
func TestDoClassifyHostFault(t *testing.T) {
	tests := []struct {
		name     string
		code     string
		wantOpen bool
	}{
		{name: "transient opens the breaker", code: "NoApplicableCode", wantOpen: true},
		{name: "permanent does not", code: "InvalidParameterValue", wantOpen: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{steps: []http.HandlerFunc{status(400, exceptionReport(tt.code, 0))}}
			srv := httptest.NewServer(s)
			defer srv.Close()
			h, _ := newHandler(t, newFakeClock(true), Options{
				Budget:  Budget{Disabled: true},
				Breaker: Breaker{ConsecutiveFailures: 2, Cooldown: time.Hour},
			})
			req := Request{Policy: Policy{MaxAttempts: 1}, Classify: owsClassify, New: get(srv.URL)}
			noop := func(*http.Response) error { return nil }
			for i := range 2 {
				if err := h.Do(context.Background(), req, noop); ClassOf(err) != dlq.ClassExceptionReport {
					t.Fatalf("unit %d: %v, want exception_report", i, err)
				}
			}
			err := h.Do(context.Background(), req, noop)
			if open := NotSent(err) != nil; open != tt.wantOpen {
				t.Errorf("third unit: %v, want breaker open %v", err, tt.wantOpen)
			}
			if want := map[bool]int64{true: 2, false: 3}[tt.wantOpen]; s.hits.Load() != want {
				t.Errorf("server hits = %d, want %d", s.hits.Load(), want)
			}
		})
	}
}

// sinkFault is a store's fault, as store.Fault is: retry must not import the store.
type sinkFault struct{ class dlq.Class }

func (f *sinkFault) Error() string           { return "inserting into public.parcels: connection refused" }
func (f *sinkFault) FailureClass() dlq.Class { return f.class }

// TestDoSinkFault: a read callback that fails to write where output goes is the sink's
// fault, not the host's: Do returns at once, spending no budget, and the breaker learns
// nothing from it, not even from a half-open probe.
func TestDoSinkFault(t *testing.T) {
	dbDown := &sinkFault{class: dlq.ClassDatabase}
	tests := []struct {
		name      string
		err       error
		wantClass dlq.Class
	}{
		{name: "store fault wrapped", err: fmt.Errorf("writing page 3: %w", dbDown), wantClass: dlq.ClassDatabase},
		{name: "disk fault marked transient", err: Transient(dlq.ClassDisk, errors.New("no space left on device")), wantClass: dlq.ClassDisk},
		{name: "database fault marked permanent", err: Permanent(dlq.ClassDatabase, dbDown), wantClass: dlq.ClassDatabase},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fail atomic.Bool
			var hits atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				if fail.Load() {
					w.WriteHeader(503)
				}
			}))
			defer srv.Close()
			clock := newFakeClock(true)
			h, _ := newHandler(t, clock, Options{Breaker: Breaker{ConsecutiveFailures: 1, Cooldown: time.Minute}})
			hs := h.host(hostKey(mustURL(t, srv.URL)), RateLimit{})
			breakerState := func() (int, int, int) {
				hs.mu.Lock()
				defer hs.mu.Unlock()
				return hs.breaker.state, hs.breaker.ringPos, hs.budget.tokens
			}
			req := Request{Policy: Policy{MaxAttempts: 5}, New: get(srv.URL)}
			sink := func(*http.Response) error { return tt.err }

			err := h.Do(context.Background(), req, sink)
			var e *Error
			if !errors.As(err, &e) || e.Class != tt.wantClass || !errors.Is(err, tt.err) || e.Err != tt.err {
				t.Fatalf("err = %v, want an *Error of class %s wrapping the read error", err, tt.wantClass)
			}
			if e.Attempts != 1 || hits.Load() != 1 || len(clock.Sleeps()) != 0 {
				t.Errorf("%d attempts, %d hits, sleeps %v: want one attempt and no wait", e.Attempts, hits.Load(), clock.Sleeps())
			}
			if ClassOf(tt.err) != tt.wantClass {
				t.Errorf("ClassOf(read error) = %q, want %q", ClassOf(tt.err), tt.wantClass)
			}
			if state, pos, tokens := breakerState(); state != stateClosed || pos != 0 || tokens != 500 {
				t.Errorf("breaker %d after %d records, budget %d: the sink's fault was held against the host", state, pos, tokens)
			}

			// Open the breaker, then let its half-open probe meet a sink fault:
			// the probe has no verdict, so the breaker stays half-open.
			fail.Store(true)
			if err := h.Do(context.Background(), Request{Policy: Policy{MaxAttempts: 1}, New: get(srv.URL)}, sink); ClassOf(err) != dlq.ClassHTTP5xx {
				t.Fatalf("down host: %v, want http_5xx", err)
			}
			fail.Store(false)
			clock.Advance(time.Minute)
			if err := h.Do(context.Background(), req, sink); ClassOf(err) != tt.wantClass {
				t.Fatalf("probe: %v, want %s", err, tt.wantClass)
			}
			if state, _, _ := breakerState(); state != stateHalfOpen {
				t.Errorf("breaker %d after a probe met a sink fault, want half-open (%d)", state, stateHalfOpen)
			}
			if err := h.Do(context.Background(), req, func(*http.Response) error { return nil }); err != nil {
				t.Fatalf("next probe: %v", err)
			}
			if state, _, _ := breakerState(); state != stateClosed {
				t.Errorf("breaker %d after a good probe, want closed", state)
			}
		})
	}
}

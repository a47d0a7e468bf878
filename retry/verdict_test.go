package retry

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/geoflow/geoflow/dlq"
)

func TestMayRetry(t *testing.T) {
	transient := outcome{class: dlq.ClassHTTP5xx, transient: true}
	tests := []struct {
		name       string
		o          outcome
		method     string
		declared   bool
		attempt    int
		want       bool
		wantReason string
	}{
		{name: "transient GET", o: transient, method: http.MethodGet, attempt: 1, want: true},
		{name: "empty method is GET", o: transient, method: "", attempt: 1, want: true},
		{name: "transient HEAD", o: transient, method: http.MethodHead, attempt: 5, want: true},
		{name: "permanent", o: outcome{class: dlq.ClassHTTP4xx}, method: http.MethodGet, attempt: 1},
		{name: "sink fault though transient", o: outcome{class: dlq.ClassDatabase, transient: true}, method: http.MethodGet, attempt: 1},
		{name: "permanent POST says nothing of the method", o: outcome{class: dlq.ClassParse}, method: http.MethodPost, attempt: 1},
		{name: "POST not declared idempotent", o: transient, method: http.MethodPost, attempt: 1,
			wantReason: "POST is not idempotent, not retried"},
		{name: "POST declared idempotent", o: transient, method: http.MethodPost, declared: true, attempt: 1, want: true},
		{name: "last attempt", o: transient, method: http.MethodGet, attempt: 6,
			wantReason: "no attempts left (max_attempts)"},
		{name: "past the last attempt", o: transient, method: http.MethodGet, attempt: 7,
			wantReason: "no attempts left (max_attempts)"},
		{name: "idempotence is asked before attempts", o: transient, method: http.MethodPut, attempt: 6,
			wantReason: "PUT is not idempotent, not retried"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, ok := mayRetry(tt.o, tt.method, tt.declared, tt.attempt, 6)
			if ok != tt.want || reason != tt.wantReason {
				t.Errorf("mayRetry = %q, %v; want %q, %v", reason, ok, tt.wantReason, tt.want)
			}
		})
	}
}

func TestPastMaxElapsed(t *testing.T) {
	start := testNow
	tests := []struct {
		name        string
		now         time.Time
		wait        time.Duration
		wantElapsed time.Duration
		wantPast    bool
	}{
		{name: "at once", now: start, wait: 0, wantElapsed: 0},
		{name: "within", now: start.Add(time.Minute), wait: time.Minute, wantElapsed: 2 * time.Minute},
		{name: "exactly at the limit is allowed", now: start.Add(4 * time.Minute), wait: time.Minute, wantElapsed: 5 * time.Minute},
		{name: "the wait takes it past", now: start.Add(4 * time.Minute), wait: time.Minute + time.Nanosecond,
			wantElapsed: 5*time.Minute + time.Nanosecond, wantPast: true},
		{name: "already past", now: start.Add(6 * time.Minute), wait: 0, wantElapsed: 6 * time.Minute, wantPast: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			elapsed, past := pastMaxElapsed(start, tt.now, tt.wait, 5*time.Minute)
			if elapsed != tt.wantElapsed || past != tt.wantPast {
				t.Errorf("pastMaxElapsed = %v, %v; want %v, %v", elapsed, past, tt.wantElapsed, tt.wantPast)
			}
		})
	}
}

func TestBreakerWait(t *testing.T) {
	tests := []struct {
		name string
		hint time.Duration
		rnd  float64
		want time.Duration
	}{
		{name: "no spread", hint: 30 * time.Second, rnd: 0, want: 30 * time.Second},
		{name: "half the spread", hint: 30 * time.Second, rnd: 0.5, want: 31500 * time.Millisecond},
		{name: "nearly all the spread", hint: 10 * time.Second, rnd: 0.99, want: 10*time.Second + 990*time.Millisecond},
		{name: "cool-down over", hint: 0, rnd: 0.7, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := breakerWait(tt.hint, tt.rnd); got != tt.want {
				t.Errorf("breakerWait(%v, %v) = %v, want %v", tt.hint, tt.rnd, got, tt.want)
			}
		})
	}
}

func TestFailure(t *testing.T) {
	cause := errors.New("HTTP 503 Service Unavailable")
	o := outcome{err: cause, class: dlq.ClassHTTP5xx, transient: true, status: 503,
		message: "503 Service Unavailable: busy", snippet: "busy"}
	tests := []struct {
		name   string
		reason string
		want   Error
	}{
		{name: "no reason", want: Error{Class: dlq.ClassHTTP5xx, Status: 503, Message: "503 Service Unavailable: busy",
			Snippet: "busy", Attempts: 3, Method: "GET", URL: "http://h/x", Err: cause}},
		{name: "reason first", reason: "no attempts left (max_attempts)",
			want: Error{Class: dlq.ClassHTTP5xx, Status: 503, Message: "no attempts left (max_attempts): 503 Service Unavailable: busy",
				Snippet: "busy", Attempts: 3, Method: "GET", URL: "http://h/x", Err: cause}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := failure(o, 3, "GET", "http://h/x", tt.reason); *got != tt.want {
				t.Errorf("failure = %+v, want %+v", *got, tt.want)
			}
		})
	}
}

func TestCheckRequest(t *testing.T) {
	read := func(*http.Response) error { return nil }
	tests := []struct {
		name    string
		r       Request
		read    func(*http.Response) error
		wantMsg string
	}{
		{name: "valid", r: Request{New: get("http://h/")}, read: read},
		{name: "negative attempts", r: Request{New: get("http://h/"), Policy: Policy{MaxAttempts: -1}}, read: read,
			wantMsg: "retry: invalid policy: max_attempts -1 is negative"},
		{name: "no New", r: Request{}, read: read, wantMsg: "retry: Request.New and read are required"},
		{name: "no read", r: Request{New: get("http://h/")}, wantMsg: "retry: Request.New and read are required"},
		{name: "policy before New", r: Request{Policy: Policy{Jitter: "odd"}}, read: read,
			wantMsg: `retry: invalid policy: unknown jitter "odd" (want full, equal, decorrelated or none)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkRequest(tt.r, tt.read)
			if tt.wantMsg == "" {
				if err != nil {
					t.Fatalf("checkRequest = %v, want nil", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Class != dlq.ClassInvalid || e.Message != tt.wantMsg {
				t.Errorf("checkRequest = %#v, want class invalid with message %q", err, tt.wantMsg)
			}
		})
	}
}

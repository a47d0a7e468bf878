package retry

import (
	"net/http"
	"time"
)

// What a failed attempt means for its unit: whether it is retried, and when a wait
// would take the unit past its max_elapsed. Do acts on these verdicts; they are pure.

// mayRetry decides, before its delay is known, whether attempt number attempt of a
// unit, which failed with o, may be retried: not when the failure is permanent or a
// sink's (reason ""), nor when method is not idempotent and the request was not
// declared so, nor when it was the last attempt maxAttempts allows. reason is what
// the unit's error says it was not retried for.
func mayRetry(o outcome, method string, declaredIdempotent bool, attempt, maxAttempts int) (reason string, ok bool) {
	switch {
	case !o.transient || o.class.Sink():
		return "", false
	case !idempotent(method, declaredIdempotent):
		return method + " is not idempotent, not retried", false
	case attempt >= maxAttempts:
		return "no attempts left (max_attempts)", false
	}
	return "", true
}

// pastMaxElapsed tells whether an attempt started after waiting wait from now
// would start past maxElapsed after the unit's start, and how long after it would.
func pastMaxElapsed(start, now time.Time, wait, maxElapsed time.Duration) (time.Duration, bool) {
	elapsed := now.Add(wait).Sub(start)
	return elapsed, elapsed > maxElapsed
}

// breakerWait is how long a unit refused by an open breaker waits: the breaker's
// cool-down left (hint) and up to a tenth more, by rnd in [0,1), so the units it
// refused do not come back together.
func breakerWait(hint time.Duration, rnd float64) time.Duration {
	return hint + time.Duration(rnd*0.1*float64(hint))
}

// failure is the unit's error after attempt number attempt failed with o and was
// not retried; a reason, when given, comes before o's message.
func failure(o outcome, attempt int, method, url, reason string) *Error {
	e := &Error{Class: o.class, Status: o.status, Message: o.message, Snippet: o.snippet,
		Attempts: attempt, Method: method, URL: url, Err: o.err}
	if reason != "" {
		e.Message = reason + ": " + e.Message
	}
	return e
}

// idempotent tells whether a request of method may be sent again: GET (also
// spelled "") and HEAD may, and so may any method the request was declared
// idempotent for.
func idempotent(method string, declared bool) bool {
	return method == "" || method == http.MethodGet || method == http.MethodHead || declared
}

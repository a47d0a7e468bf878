package retry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/geoflow/geoflow/dlq"
)

// What a unit the host's open circuit breaker refused does: wait for the breaker's
// half-open probe within the unit's time, or give up, and then with which cause. The
// decisions are pure; waitBreaker acts on them.

// hostFailure is an attempt that failed for the host's sake, as a breaker keeps the
// last one: the real cause of every unit it then keeps from being sent.
type hostFailure struct {
	class   dlq.Class
	status  int
	message string // the outcome's message: "500 Internal Server Error", a network error...
	at      time.Time
}

// breakerView is what a refused unit sees of its host's breaker.
type breakerView struct {
	open         bool          // open (cooling down), rather than half-open with its probes out
	cooldownLeft time.Duration // until the cool-down ends, while open
	openedAt     time.Time
	last         hostFailure
}

// breakerWaitVerdict decides how long a unit refused by its host's breaker waits before
// asking again, or that it gives up. deadline is the end of the unit's time (its
// max_elapsed from its start); rnd in [0,1) spreads the wake-ups of the units the
// breaker refused together. While the breaker cools down, the unit waits for the end of
// the cool-down (up to a tenth more), unless that end is past its deadline: the unit
// cannot be sent in its time, and gives up at once. While a probe is out (half-open),
// the unit waits until its deadline: the probe's verdict wakes it earlier. A unit whose
// deadline has passed gives up.
func breakerWaitVerdict(now, deadline time.Time, v breakerView, rnd float64) (wait time.Duration, giveUp bool) {
	left := deadline.Sub(now)
	if left <= 0 {
		return 0, true
	}
	if !v.open {
		return left, false
	}
	if v.cooldownLeft > left {
		return 0, true
	}
	return min(breakerWait(v.cooldownLeft, rnd), left), false
}

// notSentError is the error of a unit the host's breaker kept from being sent until
// its time ran out: it has the class, status and message of the host's last real
// failure (last), so the dead letter is grouped under what is wrong with the host, not
// under the breaker, and it says that this unit was not sent. attempts are the
// attempts the unit made itself before the breaker refused its retry: such a unit did
// fail, and its error has no NotSent.
func notSentError(host string, v breakerView, attempts int, method, url string) *Error {
	class, what := v.last.class, describeFailure(v.last)
	if class == "" { // no failure on record: the breaker opened in another way
		class, what = dlq.ClassCircuitOpen, "circuit breaker open"
	}
	unit := "this unit was not sent"
	if attempts > 0 {
		unit = fmt.Sprintf("its retry was not sent after %d attempt%s", attempts, plural(attempts))
	}
	msg := fmt.Sprintf("%s from %s (breaker open since %s; %s)", what, host, v.openedAt.UTC().Format(time.RFC3339), unit)
	e := &Error{Class: class, Status: v.last.status, Message: msg, Attempts: attempts, Method: method, URL: url}
	if attempts == 0 { // a unit that was sent and failed failed, whatever kept its retry back
		e.NotSent = &Unsent{Host: host, LastFailure: what, Since: v.openedAt}
	}
	return e
}

// describeFailure names a failure for people, on one line: "HTTP 500 Internal Server
// Error" for an answer (its body is the dead letter's snippet elsewhere), its message for
// anything else.
func describeFailure(f hostFailure) string {
	if f.status != 0 {
		return strings.TrimSpace(fmt.Sprintf("HTTP %d %s", f.status, http.StatusText(f.status)))
	}
	return f.message
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Unsent is why the rate-limit handler did not send a unit: its host's circuit breaker
// stayed open for as long as the unit could wait. The host failed other units, not
// this one.
type Unsent struct {
	Host        string    // scheme://host:port
	LastFailure string    // the host's last real failure: "HTTP 500 Internal Server Error"
	Since       time.Time // when the breaker opened
}

// NotSent returns why err's unit was not sent, when an *Error anywhere in its chain says
// so, and nil for any other error (or nil).
func NotSent(err error) *Unsent {
	var e *Error
	if errors.As(err, &e) {
		return e.NotSent
	}
	return nil
}

// waitLimitKey carries WaitUntil's time in a context.
type waitLimitKey struct{}

// WaitUntil returns a context in which a unit held by an open breaker waits at most until
// t, even when its max_elapsed would let it wait longer: a pool's unit runs within its
// job's time, and one cut short by that would be tried again only to meet the same
// breaker. The earlier of t and a limit ctx already carries wins.
func WaitUntil(ctx context.Context, t time.Time) context.Context {
	if prev, ok := ctx.Value(waitLimitKey{}).(time.Time); ok && prev.Before(t) {
		return ctx
	}
	return context.WithValue(ctx, waitLimitKey{}, t)
}

// waitDeadline is when a unit that started at start may stop waiting for its host's
// breaker: its max_elapsed after start, or the WaitUntil of ctx when that is earlier.
func waitDeadline(ctx context.Context, start time.Time, maxElapsed time.Duration) time.Time {
	d := start.Add(maxElapsed)
	if t, ok := ctx.Value(waitLimitKey{}).(time.Time); ok && t.Before(d) {
		return t
	}
	return d
}

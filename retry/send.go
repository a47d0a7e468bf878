package retry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/internal/redact"
)

// outcome is the result of one attempt.
type outcome struct {
	err       error // nil on success
	class     dlq.Class
	transient bool
	hooked    bool // classed by Request.Classify, not by the status
	status    int
	message   string
	snippet   string
	hint      time.Duration // server-requested delay before the retry
	hasHint   bool
	capped    time.Duration // the hint as asked, when capped
	canceled  bool
	hostFault bool // counts against the breaker
}

const (
	snippetLen  = 512     // what an *Error keeps of an error answer's body
	classifyLen = 4 << 10 // what Request.Classify is shown of it
)

// attemptTimeout is why an attempt was cut short: one of the Policy's timeouts.
type attemptTimeout struct{ msg string }

func (e *attemptTimeout) Error() string { return e.msg }

// timedOut tells whether the attempt's context ended on one of its timeouts, and gives
// the outcome: a transient timeout, held against the host.
func timedOut(actx context.Context) (outcome, bool) {
	var t *attemptTimeout
	if !errors.As(context.Cause(actx), &t) {
		return outcome{}, false
	}
	return outcome{err: Transient(dlq.ClassTimeout, t), class: dlq.ClassTimeout, transient: true, hostFault: true, message: t.msg}, true
}

// idleBody restarts its timer on every read that brings bytes: the timer fires (and
// ends the attempt) only when the body sends nothing for idle.
type idleBody struct {
	io.ReadCloser
	idle  time.Duration
	timer *time.Timer
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.timer.Reset(b.idle)
	}
	return n, err
}

// send makes the HTTP round trip and reads or classifies the response.
func (h *Handler) send(ctx context.Context, hs *host, req *http.Request, r Request, read func(*http.Response) error, secrets []string) (outcome, hints) {
	p := r.Policy.withDefaults()
	// The attempt's context descends from the request's, which carries its redirect
	// policy (and descends from ctx).
	actx, stop := context.WithCancelCause(req.Context())
	defer stop(nil)
	actx, stopAll := context.WithTimeoutCause(actx, p.AttemptTimeout, &attemptTimeout{fmt.Sprintf("the attempt took longer than attempt_timeout %s", p.AttemptTimeout)})
	defer stopAll()
	headers := time.AfterFunc(p.HeaderTimeout, func() {
		stop(&attemptTimeout{fmt.Sprintf("no response headers within header_timeout %s", p.HeaderTimeout)})
	})
	sent := h.clock.Now()
	resp, err := h.client.Do(req.WithContext(actx))
	if !headers.Stop() && err == nil {
		// The headers came as the timer fired: the attempt is cancelled already, and
		// its body would fail as if cut off. Say what happened instead.
		resp.Body.Close()
		o, _ := timedOut(actx)
		h.m.requests.WithLabelValues(hs.key, string(o.class)).Inc()
		return o, hints{}
	}
	if err != nil {
		if ctx.Err() != nil {
			return outcome{err: ctx.Err(), canceled: true}, hints{}
		}
		o, ok := timedOut(actx)
		if !ok {
			o = transportFailure(err, secrets)
		}
		h.m.requests.WithLabelValues(hs.key, string(o.class)).Inc()
		return o, hints{}
	}
	// Every body, an error answer's and the drain's included, is held to the idle
	// timeout: a 503 whose body stalls must not hold the attempt for attempt_timeout.
	body := &idleBody{ReadCloser: resp.Body, idle: p.IdleTimeout, timer: time.AfterFunc(p.IdleTimeout, func() {
		stop(&attemptTimeout{fmt.Sprintf("no bytes of the body for idle_timeout %s", p.IdleTimeout)})
	})}
	resp.Body = body
	defer func() {
		// Drain a little so the connection can be reused, then close.
		_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
		body.Close()
		body.timer.Stop()
	}()
	hn := hs.answerHints(resp.Header, sent, h.clock.Now())
	for _, f := range hn.forms {
		h.m.headers.WithLabelValues(hs.key, f).Inc()
	}
	code := resp.StatusCode
	h.m.requests.WithLabelValues(hs.key, strconv.Itoa(code)).Inc()

	var o outcome
	if code/100 == 2 || slices.Contains(r.AcceptStatus, code) {
		if o = h.read(ctx, hs, resp, read, secrets); o.err == nil || o.canceled {
			return o, hn
		}
	} else {
		o = answer(resp, r.Classify, secrets)
	}
	if t, ok := timedOut(actx); ok {
		// The body stalled, or the attempt ran out of time while it was read: a
		// timeout, whatever the status or the read said.
		h.m.requests.WithLabelValues(hs.key, string(t.class)).Inc()
		t.status = code
		return t, hn
	}
	return o, hn
}

// transportFailure classifies a round trip that brought no answer, neither cancelled
// by the caller nor cut by one of the attempt's timeouts. What classifyErr cannot
// name (parse) and a cancellation not the caller's are permanent network failures;
// a transient failure counts against the host.
func transportFailure(err error, secrets []string) outcome {
	class, transient := classifyErr(err)
	if class == dlq.ClassParse || class == dlq.ClassCanceled {
		class, transient = dlq.ClassNetwork, false
	}
	return outcome{err: err, class: class, transient: transient, hostFault: transient,
		message: redact.String(err.Error(), secrets...)}
}

// read hands an accepted response to the caller's read and classifies its
// error. A sink's fault (dlq.Class.Sink) is neither retried nor held against
// the host: the answer was fine, where it goes is not.
func (h *Handler) read(ctx context.Context, hs *host, resp *http.Response, read func(*http.Response) error, secrets []string) outcome {
	code := resp.StatusCode
	err := read(resp)
	if err == nil {
		return outcome{status: code}
	}
	if ctx.Err() != nil {
		return outcome{err: ctx.Err(), canceled: true, status: code}
	}
	class, transient := classifyErr(err)
	if class == dlq.ClassCanceled {
		class, transient = dlq.ClassNetwork, true
	}
	if class == dlq.ClassTruncated || class == dlq.ClassNetwork || class == dlq.ClassTimeout {
		h.m.requests.WithLabelValues(hs.key, string(class)).Inc()
	}
	return outcome{err: err, class: class, transient: transient, status: code,
		hostFault: transient && class != dlq.ClassRateLimited && !class.Sink(),
		message:   redact.String(err.Error(), secrets...)}
}

// answer classifies an error answer: a status neither 2xx nor accepted. The
// status decides, unless classify (Request.Classify) classes the answer from
// its first bytes; a transient class it gives counts against the host like a
// 5xx.
func answer(resp *http.Response, classify func(int, []byte) error, secrets []string) outcome {
	code := resp.StatusCode
	body, _ := io.ReadAll(io.LimitReader(resp.Body, classifyLen))
	// Masked whole, then cut: cut first, a secret the cut splits would keep its head.
	snippet := cut(redact.String(strings.ToValidUTF8(string(bytes.TrimSpace(body)), "?"), secrets...), snippetLen)
	o := outcome{err: fmt.Errorf("HTTP %s", resp.Status), status: code, message: resp.Status, snippet: snippet}
	if first := firstLine(snippet); first != "" {
		o.message += ": " + first
	}
	var c *classified
	if classify != nil {
		if err := classify(code, body); errors.As(err, &c) {
			msg := redact.String(err.Error(), secrets...)
			o.err = &redactedError{msg: msg, err: err}
			o.class, o.transient, o.hooked = c.class, c.transient, true
			o.message = resp.Status + ": " + msg
			o.hostFault = c.transient && c.class != dlq.ClassRateLimited && !c.class.Sink()
			return o
		}
	}
	o.class, o.transient = classifyStatus(code)
	o.hostFault = o.class == dlq.ClassHTTP5xx || (o.class == dlq.ClassTimeout && o.transient)
	return o
}

// firstLine is the start of the server's message, trimmed for one line.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	s = strings.TrimSpace(s)
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// redactedError shows the redacted message of err, which it unwraps to: a
// hook's error may quote the answer, and the answer may echo the request's
// credentials.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// cut is s cut to at most n bytes on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

package retry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/internal/redact"
)

// Options configure a Handler. A nil *Options, and each zero field, means
// the default noted on the field.
type Options struct {
	// Client sends the requests. Defaults to a client on a clone of
	// http.DefaultTransport keeping 16 idle connections per host and reading
	// responses 64 KiB at a time, with no overall timeout: each attempt is bounded
	// by its Policy's timeouts. Unless it has a CheckRedirect of its own, its
	// redirects follow each Request's Redirects.
	Client *http.Client
	// Logger receives, at debug level, one line per retry; at info level, per host, one
	// line every SummaryEvery at most that sums up its retries meanwhile
	// (FlushRetrySummaries logs those still pending); and a warning per capped server
	// delay. Defaults to discarding.
	Logger *slog.Logger
	// Registerer receives the metrics. Defaults to a private registry;
	// the global default registry is never used unless passed here.
	Registerer prometheus.Registerer
	// Seed seeds the jitter. 0 seeds from crypto/rand, so two processes do
	// not back off in step; tests set it to be deterministic.
	Seed int64
	// Clock tells time and waits. Defaults to the wall clock.
	Clock Clock
	// Budget is the per-host retry budget.
	Budget Budget
	// Breaker is the per-host circuit breaker.
	Breaker Breaker
	// Shared, when set, paces each host together with the other processes using the
	// same store: one send schedule per host at the quota the server's headers (or a
	// configured rate) allow, and a 429's pause held by all of them. Hosts whose
	// RateLimit says Local keep to this process's pacing.
	Shared Shared
}

// Handler sends HTTP requests for geoflow's tasks: paced per host, retried
// by Policy, within a per-host retry budget and behind a per-host circuit
// breaker. One Handler is meant to be shared by every worker of a process
// so the pacing of a host is shared; it is safe for concurrent use.
type Handler struct {
	client  *http.Client
	log     *slog.Logger
	clock   Clock
	budget  Budget
	breaker Breaker
	m       *metrics
	jitter  *jitter
	shared  Shared
	sums    *summaries

	mu    sync.Mutex
	hosts map[string]*host
}

// New returns a Handler. A nil opts means all defaults.
func New(opts *Options) *Handler {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Client == nil {
		tr, _ := http.DefaultTransport.(*http.Transport)
		var rt http.RoundTripper = http.DefaultTransport
		if tr != nil {
			c := tr.Clone()
			// Keep a connection for each request in flight, or the
			// default of 2 idle per host churns connections under pacing.
			c.MaxIdleConnsPerHost = 4 * DefaultConcurrency
			// Read a response in 64 KiB at a time rather than the default 4 KiB: a
			// harvested page is megabytes, and each read is a system call.
			c.ReadBufferSize = 64 << 10
			rt = c
		}
		// No Timeout for the whole exchange: each attempt has its own (Policy's
		// header, idle and attempt timeouts), so a large page that arrives steadily
		// is not cut off at a fixed minute.
		o.Client = &http.Client{Transport: rt}
	}
	if o.Client.CheckRedirect == nil {
		// Redirects keep a task's credentials with the origin they were given for.
		c := *o.Client
		c.CheckRedirect = checkRedirect
		o.Client = &c
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	return &Handler{
		client:  o.Client,
		log:     o.Logger,
		clock:   o.Clock,
		budget:  o.Budget.withDefaults(),
		breaker: o.Breaker.withDefaults(),
		m:       newMetrics(o.Registerer),
		jitter:  newJitter(o.Seed),
		shared:  o.Shared,
		sums:    newSummaries(SummaryEvery),
		hosts:   map[string]*host{},
	}
}

// Request is one unit of HTTP work.
type Request struct {
	// Unit names the unit of work, for logs and errors.
	Unit string
	// Policy says how the unit is retried; zero fields take defaults.
	Policy Policy
	// RateLimit configures the host's pacing the first time it is used.
	RateLimit RateLimit
	// Redirects says which redirects are followed; the zero value means
	// RedirectsSameOrigin.
	Redirects Redirects
	// Idempotent allows retrying a method other than GET and HEAD, such as
	// a WFS GetFeature POST.
	Idempotent bool
	// AcceptStatus lists non-2xx statuses passed to read instead of being
	// classified (304, or 404 for tiles that may be missing).
	AcceptStatus []int
	// Classify, when set, is asked about every answer whose status is neither 2xx nor in
	// AcceptStatus, with the first bytes of its body (up to 4 KiB), before the status decides.
	// It returns an error made by Permanent or Transient to class the answer itself, or nil
	// to let the status decide. A WFS task uses it for OGC exception reports: MapServer
	// answers HTTP 400 with exceptionCode="NoApplicableCode" when its own database is down,
	// which is worth retrying, while InvalidParameterValue is not. Any other error is
	// ignored: the status decides. It may be called from several goroutines at once.
	Classify func(status int, body []byte) error
	// New builds a fresh request for each attempt; it is required.
	New func(ctx context.Context) (*http.Request, error)
}

// host is the state shared by every request to one scheme://host:port: the
// policies the Handler composes for it, each guarded by mu.
type host struct {
	key string
	sem *slots // one slot per request in flight (RateLimit.Concurrency, or adaptive)
	// shared is the host's part of the schedule shared with other processes, when the
	// Handler has one and the host's RateLimit allows it.
	shared   sharedSlots
	isShared bool

	mu      sync.Mutex
	pacer   pacer       // fixed rate, quota headers, adaptive rate
	gate    gate        // Retry-After and 429 pauses
	budget  retryBudget // what retries may still cost
	breaker breaker     // holds every request while the host is down
	clock   serverClock // the host's clock against ours, from Date headers
	phase   windowPhase // its fixed windows' ends on our clock, from send times
	// queued counts the requests waiting for a slot or their pace, for Backlog.
	queued atomic.Int64
}

func (h *Handler) host(key string, rl RateLimit) *host {
	h.mu.Lock()
	defer h.mu.Unlock()
	if hs, ok := h.hosts[key]; ok {
		return hs
	}
	hs := &host{
		key:      key,
		sem:      newSlots(max(rl.Concurrency, 0)),
		pacer:    newPacer(rl),
		budget:   newRetryBudget(h.budget),
		breaker:  newBreaker(h.breaker),
		isShared: h.shared != nil && !rl.Local,
	}
	h.hosts[key] = hs
	h.m.budget.WithLabelValues(key).Set(float64(hs.budget.tokens))
	h.m.breaker.WithLabelValues(key).Set(stateClosed)
	h.m.pace.WithLabelValues(key).Set(rl.RequestsPerSecond)
	return hs
}

// hostKey is scheme://host:port with the default port made explicit.
func hostKey(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// Do sends the unit's request, paced for its host, and calls read with the
// response when its status is 2xx or in AcceptStatus. Failures are
// classified; transient ones of idempotent requests are retried (the whole
// unit: request and read) within the Policy, the host's retry budget and its
// circuit breaker. read's error is classified too: errors made by Permanent
// or Transient keep their class, io.ErrUnexpectedEOF anywhere in the chain
// is a truncated body (retried), transport errors are network or timeout
// (retried), anything else is parse (permanent). A dlq.Classed error of a sink
// class (database, disk) ends Do at once, not held against the host nor paid
// from its budget. Do closes every body.
//
// Do returns nil or an *Error. When ctx ends, Do returns at once with an
// *Error wrapping ctx.Err(); that is not held against the host.
func (h *Handler) Do(ctx context.Context, r Request, read func(*http.Response) error) error {
	if err := checkRequest(r, read); err != nil {
		return err
	}
	p := r.Policy.withDefaults()
	u := unit{start: h.clock.Now()}
	// A host's retries are summed up when they are due, also once its retries stop.
	h.logSummaries(ctx, h.sums.due(u.start))
	for attempt := 1; ; attempt++ {
		req, err := r.New(ctx)
		if err != nil || req == nil {
			if err == nil {
				err = errors.New("Request.New returned a nil request")
			}
			if ctxErr := ctx.Err(); ctxErr != nil {
				return h.canceled(ctxErr, u.method, u.url, attempt-1)
			}
			return &Error{Class: dlq.ClassInvalid, Message: "building request: " + redact.String(err.Error()), Attempts: attempt - 1, Method: u.method, URL: u.url, Err: err}
		}
		req = withRedirects(req, r.Redirects)
		u.method = req.Method
		u.url = redact.URL(req.URL.String())
		secrets := redact.Secrets(req.URL, req.Header)
		hs := h.host(hostKey(req.URL), r.RateLimit)

		last := h.attempt(ctx, hs, req, r, read, p, secrets, attempt)
		switch {
		case last.err == nil:
			h.refund(hs, u.paid)
			return nil
		case last.canceled:
			return h.canceled(last.err, u.method, u.url, attempt)
		case last.class == dlq.ClassCircuitOpen:
			// Nothing was sent: the attempt is not counted.
			if err := h.waitBreaker(ctx, r, hs, p, &u, attempt-1); err != nil {
				return err
			}
			attempt--
			continue
		}
		delay, err := h.backOff(ctx, r, hs, p, &u, last, attempt)
		if err != nil {
			return err
		}
		if err := h.wait(ctx, hs.key, delay); err != nil {
			return h.canceled(err, u.method, u.url, attempt)
		}
	}
}

// checkRequest refuses a Request that Do cannot send: an invalid Policy or
// Redirects, or no New or read. The error is an *Error of class invalid.
func checkRequest(r Request, read func(*http.Response) error) error {
	if err := errors.Join(r.Policy.Validate(), r.Redirects.Validate()); err != nil {
		return &Error{Class: dlq.ClassInvalid, Message: err.Error(), Err: err}
	}
	if r.New == nil || read == nil {
		err := errors.New("retry: Request.New and read are required")
		return &Error{Class: dlq.ClassInvalid, Message: err.Error(), Err: err}
	}
	return nil
}

// unit is what Do keeps across the attempts of one unit.
type unit struct {
	start     time.Time     // when Do began, for max_elapsed
	prevDelay time.Duration // the last backoff, for decorrelated jitter
	paid      int           // what its retries cost the host's budget
	waited    bool          // logged a wait for the breaker
	method    string        // of the last request built
	url       string        // of the last request built, redacted
}

// waitBreaker holds a unit whose attempt the host's open breaker refused until the
// breaker changes: its cool-down ends (spread by up to a tenth, so the waiting units do
// not come back together), or, while another unit probes the host, the probe's verdict.
// It waits on the breaker's change, never polling. The wait costs the unit no attempt
// and no budget; when the breaker stays open past the unit's max_elapsed, the unit
// gives up with the host's last real failure, marked not sent (notSentError); so does
// one past the WaitUntil of ctx. attempts
// is the number of attempts made so far.
func (h *Handler) waitBreaker(ctx context.Context, r Request, hs *host, p Policy, u *unit, attempts int) error {
	now := h.clock.Now()
	hs.mu.Lock()
	if hs.breaker.wouldAllow(now) { // it changed since the refusal: ask again at once
		hs.mu.Unlock()
		return nil
	}
	v := hs.view(now)
	changed := hs.breaker.watch()
	hs.mu.Unlock()
	wait, giveUp := breakerWaitVerdict(now, waitDeadline(ctx, u.start, p.MaxElapsed), v, h.jitter.float64())
	if giveUp {
		return notSentError(hs.key, v, attempts, u.method, u.url)
	}
	if !u.waited {
		u.waited = true
		until := "its probe answers"
		if v.open {
			until = "its cool-down ends"
		}
		h.log.DebugContext(ctx, "waiting for the host's circuit breaker to let requests through", "unit", r.Unit, "host", hs.key,
			"until", until, "at_most", wait.Round(time.Millisecond))
	}
	if err := ctx.Err(); err != nil {
		return h.canceled(err, u.method, u.url, attempts)
	}
	start := h.clock.Now()
	select {
	case <-ctx.Done():
		return h.canceled(ctx.Err(), u.method, u.url, attempts)
	case <-changed:
	case <-h.clock.After(wait):
	}
	if d := h.clock.Now().Sub(start); d > 0 {
		TallyOf(ctx).add(hs.key, func(s *HostStats) { s.Waited += d })
	}
	return nil
}

// view is what a unit refused at now sees of the host's breaker. Callers hold hs.mu.
func (hs *host) view(now time.Time) breakerView {
	b := &hs.breaker
	v := breakerView{openedAt: b.openedAt, last: b.last}
	if b.state == stateOpen {
		v.open = true
		v.cooldownLeft = max(b.openedAt.Add(b.cfg.Cooldown).Sub(now), 0)
	}
	return v
}

// backOff decides whether attempt number attempt, which failed with last, is
// retried. When it is, backOff pays the host's retry budget for it, counts and
// logs it, and returns the delay before the next attempt; when it is not, it
// returns the unit's *Error saying why.
func (h *Handler) backOff(ctx context.Context, r Request, hs *host, p Policy, u *unit, last outcome, attempt int) (time.Duration, error) {
	if reason, ok := mayRetry(last, u.method, r.Idempotent, attempt, p.MaxAttempts); !ok {
		return 0, failure(last, attempt, u.method, u.url, reason)
	}
	delay := h.jitter.delay(p, last, attempt-1, u.prevDelay)
	if last.hasHint && last.capped > 0 {
		h.log.WarnContext(ctx, "server asked for a longer delay than allowed; capped",
			"unit", r.Unit, "host", hs.key, "asked", last.capped, "cap", p.MaxServerDelay)
	}
	u.prevDelay = delay
	if elapsed, past := pastMaxElapsed(u.start, h.clock.Now(), delay, p.MaxElapsed); past {
		return 0, failure(last, attempt, u.method, u.url, fmt.Sprintf("gave up: next attempt would start %s after the first, past max_elapsed %s",
			elapsed.Round(time.Millisecond), p.MaxElapsed))
	}
	cost, ok := h.spend(hs, last.class)
	if !ok {
		return 0, failure(last, attempt, u.method, u.url, "retry budget of host "+hs.key+" exhausted, not retried")
	}
	u.paid += cost
	TallyOf(ctx).add(hs.key, func(s *HostStats) { s.Retries++ })
	h.m.retries.WithLabelValues(hs.key, string(last.class)).Inc()
	h.m.backoff.WithLabelValues(hs.key).Observe(delay.Seconds())
	h.log.DebugContext(ctx, "retrying", "unit", r.Unit, "host", hs.key, "attempt", attempt+1,
		"delay", delay, "reason", string(last.class), "status", last.status, "method", u.method, "url", u.url)
	var hint time.Duration
	if last.hasHint {
		hint = last.hint
	}
	h.logSummaries(ctx, h.sums.add(h.clock.Now(), hs.key, retried{status: last.status, class: last.class, hint: hint, wait: delay}))
	return delay, nil
}

func (h *Handler) canceled(err error, method, url string, attempts int) error {
	class := dlq.ClassCanceled
	if errors.Is(err, context.DeadlineExceeded) {
		class = dlq.ClassTimeout
	}
	return &Error{Class: class, Message: "context ended", Attempts: attempts, Method: method, URL: url, Err: err}
}

// spend pays the host's retry budget for a retry after a failure of class,
// and reports what was paid and whether the retry may go.
func (h *Handler) spend(hs *host, class dlq.Class) (int, bool) {
	hs.mu.Lock()
	cost, ok := hs.budget.spend(class)
	tokens := hs.budget.tokens
	hs.mu.Unlock()
	h.m.budget.WithLabelValues(hs.key).Set(float64(tokens))
	return cost, ok
}

// refund gives a unit that succeeded back what it paid for its retries.
func (h *Handler) refund(hs *host, paid int) {
	hs.mu.Lock()
	hs.budget.success(paid)
	tokens := hs.budget.tokens
	hs.mu.Unlock()
	h.m.budget.WithLabelValues(hs.key).Set(float64(tokens))
}

// attempt makes attempt n of a unit through the host's policies in turn:
// the breaker lets it through or fails it fast, a concurrency slot is taken,
// the gate and the pacer hold it until it may go, then it is sent and read;
// the answer teaches the pacer, may close the gate, and is the breaker's
// evidence.
func (h *Handler) attempt(ctx context.Context, hs *host, req *http.Request, r Request, read func(*http.Response) error, p Policy, secrets []string, n int) outcome {
	now := h.clock.Now()
	hs.mu.Lock()
	allowed, probe := hs.breaker.allow(now)
	state := hs.breaker.state
	wait := hs.breaker.retryIn(now)
	hs.mu.Unlock()
	h.m.breaker.WithLabelValues(hs.key).Set(float64(state))
	if !allowed {
		return outcome{err: errors.New("circuit breaker open for " + hs.key), class: dlq.ClassCircuitOpen,
			message: "circuit breaker open for host " + hs.key + ", not sent", hint: wait, hasHint: true}
	}
	verdict := false
	defer func() {
		if !verdict {
			hs.mu.Lock()
			hs.breaker.release(probe)
			hs.mu.Unlock()
		}
	}()

	hs.queued.Add(1)
	if err := hs.sem.acquire(ctx); err != nil {
		hs.queued.Add(-1)
		return outcome{err: err, canceled: true}
	}
	defer hs.sem.release()

	seq, err := h.pace(ctx, hs, p)
	hs.queued.Add(-1)
	if err != nil {
		return outcome{err: err, canceled: true}
	}

	sent := h.clock.Now()
	o, hn := h.send(ctx, hs, req, r, read, secrets)

	now = h.clock.Now()
	hs.mu.Lock()
	hs.pacer.observe(now, sent, o.class, o.status != 0 && !o.canceled, hn, seq)
	hs.serverDelay(now, &o, hn, p, h.jitter.float64)
	sharePause := hs.isShared && o.class == dlq.ClassRateLimited && o.hasHint && o.hint > 0
	opened := hs.breaker.opened
	// Neither the caller's cancellation nor a sink's fault says anything about the host.
	if !o.canceled && !o.class.Sink() {
		verdict = hs.breaker.verdict(now, n, o.hostFault, probe)
	}
	if o.hostFault && !o.canceled {
		hs.breaker.last = hostFailure{class: o.class, status: o.status, message: o.message, at: now}
	}
	pace := hs.pacer.current(now)
	quotaPace := hs.pacer.quota.pace(now)
	remaining := -1.0
	if hs.pacer.quota.have {
		remaining = math.Max(hs.pacer.quota.est, 0)
	}
	state = hs.breaker.state
	justOpened := hs.breaker.opened > opened
	hs.mu.Unlock()
	TallyOf(ctx).add(hs.key, func(s *HostStats) { s.count(o.status, justOpened) })
	if sharePause {
		h.sharePause(ctx, hs, o.hint)
	}
	if !o.canceled {
		hs.sem.answered(now.Sub(sent), quotaPace, o.class == dlq.ClassRateLimited)
	}
	_, limit := hs.sem.current()
	h.m.inflight.WithLabelValues(hs.key).Set(float64(limit))
	h.m.remaining.WithLabelValues(hs.key).Set(remaining)
	h.m.pace.WithLabelValues(hs.key).Set(pace)
	h.m.breaker.WithLabelValues(hs.key).Set(float64(state))
	if justOpened {
		h.m.opened.WithLabelValues(hs.key).Inc()
		h.log.WarnContext(ctx, "circuit breaker opened: nothing is sent to this host until the cool-down ends; its units wait",
			"host", hs.key, "cooldown", h.breaker.Cooldown, "last", string(o.class), "status", o.status)
	}
	return o
}

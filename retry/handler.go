package retry

import (
	"bytes"
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/internal/redact"
)

// RateLimit is the pacing configured for a host. Zero fields take their
// defaults: RequestsPerSecond 0 means no fixed rate (the server's rate-limit
// headers and the adaptive rate pace instead; most users never set it),
// Burst 10 (used only with a fixed rate), Concurrency 4 requests in flight
// per host. The first Request to a host decides its RateLimit; later ones
// with another RateLimit share the state already made.
type RateLimit struct {
	RequestsPerSecond float64
	Burst             int
	Concurrency       int
}

// Defaults of RateLimit.
const (
	DefaultBurst       = 10
	DefaultConcurrency = 4
)

// Budget configures the per-host retry budget, the AWS SDK's retry quota.
// Zero fields take their defaults: Tokens 500, RetryCost 5,
// TimeoutRetryCost 10, NoRetryIncrement 1 (added back by each unit that
// succeeds at its first attempt; a unit that succeeds after retries gets
// back what it paid). Disabled turns the budget off.
type Budget struct {
	Tokens           int
	RetryCost        int
	TimeoutRetryCost int
	NoRetryIncrement int
	Disabled         bool
}

func (b Budget) withDefaults() Budget {
	b.Tokens = cmp.Or(b.Tokens, 500)
	b.RetryCost = cmp.Or(b.RetryCost, 5)
	b.TimeoutRetryCost = cmp.Or(b.TimeoutRetryCost, 10)
	b.NoRetryIncrement = cmp.Or(b.NoRetryIncrement, 1)
	return b
}

// Breaker configures the per-host circuit breaker. It counts units whose first
// attempt failed for the host's sake (5xx, timeouts, network errors, truncated
// bodies), and successes; a retry that fails again is the same broken request,
// not more evidence against the host, so one URL failing forever cannot open
// the breaker for every other unit. 4xx answers, 429s and the caller's
// cancellations are not host failures. Zero fields take their defaults: it opens after
// ConsecutiveFailures 10 failures in a row, or when FailureRatio 0.5 of the
// last Window 20 attempts failed; it stays open for Cooldown 30s, failing
// calls at once with dlq.ClassCircuitOpen, then lets HalfOpenProbes 1 attempt
// through: success closes it, failure opens it again. Disabled turns it off.
type Breaker struct {
	ConsecutiveFailures int
	FailureRatio        float64
	Window              int
	Cooldown            time.Duration
	HalfOpenProbes      int
	Disabled            bool
}

func (b Breaker) withDefaults() Breaker {
	b.ConsecutiveFailures = cmp.Or(b.ConsecutiveFailures, 10)
	b.FailureRatio = cmp.Or(b.FailureRatio, 0.5)
	b.Window = cmp.Or(b.Window, 20)
	b.Cooldown = cmp.Or(b.Cooldown, 30*time.Second)
	b.HalfOpenProbes = cmp.Or(b.HalfOpenProbes, 1)
	return b
}

// Options configure a Handler. A nil *Options, and each zero field, means
// the default noted on the field.
type Options struct {
	// Client sends the requests. Defaults to a client with a 60s timeout
	// on a clone of http.DefaultTransport keeping 16 idle connections per
	// host.
	Client *http.Client
	// Logger receives one line per retry and per capped server delay.
	// Defaults to discarding.
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

	rndMu sync.Mutex
	rnd   *rand.Rand

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
			rt = c
		}
		o.Client = &http.Client{Timeout: 60 * time.Second, Transport: rt}
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
	seed := uint64(o.Seed)
	if o.Seed == 0 {
		var b [8]byte
		_, _ = crand.Read(b[:])
		seed = binary.LittleEndian.Uint64(b[:])
	}
	return &Handler{
		client:  o.Client,
		log:     o.Logger,
		clock:   o.Clock,
		budget:  o.Budget.withDefaults(),
		breaker: o.Breaker.withDefaults(),
		m:       newMetrics(o.Registerer),
		rnd:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
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
	// Idempotent allows retrying a method other than GET and HEAD, such as
	// a WFS GetFeature POST.
	Idempotent bool
	// AcceptStatus lists non-2xx statuses passed to read instead of being
	// classified (304, or 404 for tiles that may be missing).
	AcceptStatus []int
	// New builds a fresh request for each attempt; it is required.
	New func(ctx context.Context) (*http.Request, error)
}

// host is the state shared by every request to one scheme://host:port.
type host struct {
	key  string
	sem  chan struct{}
	conf *rate.Limiter // nil when no fixed rate

	mu       sync.Mutex
	quota    quotaPacer
	adaptive adaptiveRate
	budget   retryBudget
	breaker  breaker
	gate     time.Time // no request before this (Retry-After)
	gateLen  time.Duration
	seq      uint64 // requests sent
}

func (h *Handler) host(key string, rl RateLimit) *host {
	h.mu.Lock()
	defer h.mu.Unlock()
	if hs, ok := h.hosts[key]; ok {
		return hs
	}
	hs := &host{
		key:     key,
		sem:     make(chan struct{}, cmp.Or(max(rl.Concurrency, 0), DefaultConcurrency)),
		budget:  retryBudget{cfg: h.budget, tokens: h.budget.Tokens},
		breaker: breaker{cfg: h.breaker, ring: make([]bool, h.breaker.Window)},
	}
	if rl.RequestsPerSecond > 0 {
		hs.conf = rate.NewLimiter(rate.Limit(rl.RequestsPerSecond), cmp.Or(max(rl.Burst, 0), DefaultBurst))
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

func (h *Handler) rand01() float64 {
	h.rndMu.Lock()
	defer h.rndMu.Unlock()
	return h.rnd.Float64()
}

func (h *Handler) backoff(p Policy, n int, prev time.Duration) time.Duration {
	h.rndMu.Lock()
	defer h.rndMu.Unlock()
	return p.Backoff(n, prev, h.rnd)
}

// outcome is the result of one attempt.
type outcome struct {
	err       error // nil on success
	class     dlq.Class
	transient bool
	status    int
	message   string
	snippet   string
	hint      time.Duration // server-requested delay before the retry
	hasHint   bool
	capped    time.Duration // the hint as asked, when capped
	canceled  bool
	hostFault bool // counts against the breaker
}

// Do sends the unit's request, paced for its host, and calls read with the
// response when its status is 2xx or in AcceptStatus. Failures are
// classified; transient ones of idempotent requests are retried (the whole
// unit: request and read) within the Policy, the host's retry budget and its
// circuit breaker. read's error is classified too: errors made by Permanent
// or Transient keep their class, io.ErrUnexpectedEOF anywhere in the chain
// is a truncated body (retried), transport errors are network or timeout
// (retried), anything else is parse (permanent). Do closes every body.
//
// Do returns nil or an *Error. When ctx ends, Do returns at once with an
// *Error wrapping ctx.Err(); that is not held against the host.
func (h *Handler) Do(ctx context.Context, r Request, read func(*http.Response) error) error {
	p := r.Policy.withDefaults()
	if err := r.Policy.Validate(); err != nil {
		return &Error{Class: dlq.ClassInvalid, Message: err.Error(), Err: err}
	}
	if r.New == nil || read == nil {
		err := errors.New("retry: Request.New and read are required")
		return &Error{Class: dlq.ClassInvalid, Message: err.Error(), Err: err}
	}
	start := h.clock.Now()
	var (
		prevDelay time.Duration
		paid      int
		last      outcome
		method    string
		rawURL    string
	)
	for attempt := 1; ; attempt++ {
		req, err := r.New(ctx)
		if err != nil || req == nil {
			if err == nil {
				err = errors.New("Request.New returned a nil request")
			}
			if ctxErr := ctx.Err(); ctxErr != nil {
				return h.canceled(ctxErr, method, rawURL, attempt-1)
			}
			return &Error{Class: dlq.ClassInvalid, Message: "building request: " + redact.String(err.Error()), Attempts: attempt - 1, Method: method, URL: rawURL, Err: err}
		}
		method = req.Method
		rawURL = redact.URL(req.URL.String())
		secrets := redact.Secrets(req.URL, req.Header)
		hs := h.host(hostKey(req.URL), r.RateLimit)

		last = h.attempt(ctx, hs, req, r, read, p, secrets, attempt)
		if last.err == nil {
			hs.mu.Lock()
			hs.budget.success(paid)
			tokens := hs.budget.tokens
			hs.mu.Unlock()
			h.m.budget.WithLabelValues(hs.key).Set(float64(tokens))
			return nil
		}
		if last.canceled {
			return h.canceled(last.err, method, rawURL, attempt)
		}
		fail := func(msg string) error {
			e := &Error{Class: last.class, Status: last.status, Message: last.message, Snippet: last.snippet,
				Attempts: attempt, Method: method, URL: rawURL, Err: last.err}
			if msg != "" {
				e.Message = msg + ": " + e.Message
			}
			return e
		}
		if !last.transient {
			return fail("")
		}
		if !idempotent(method, r.Idempotent) {
			return fail(method + " is not idempotent, not retried")
		}
		if attempt >= p.MaxAttempts {
			return fail(fmt.Sprintf("gave up after %d attempts", attempt))
		}

		var delay time.Duration
		if last.hasHint {
			// Obey the server, with up to 10% more so the workers it
			// told the same thing do not come back together.
			delay = last.hint + time.Duration(h.rand01()*0.1*float64(last.hint))
			if last.capped > 0 {
				delay = last.hint
				h.log.WarnContext(ctx, "server asked for a longer delay than allowed; capped",
					"unit", r.Unit, "host", hs.key, "asked", last.capped, "cap", p.MaxServerDelay)
			}
		} else {
			delay = h.backoff(p, attempt-1, prevDelay)
		}
		prevDelay = delay
		if elapsed := h.clock.Now().Add(delay).Sub(start); elapsed > p.MaxElapsed {
			return fail(fmt.Sprintf("gave up: next attempt would start %s after the first, past max_elapsed %s",
				elapsed.Round(time.Millisecond), p.MaxElapsed))
		}
		cost := h.budget.RetryCost
		if last.class == dlq.ClassTimeout {
			cost = h.budget.TimeoutRetryCost
		}
		hs.mu.Lock()
		ok := hs.budget.take(cost)
		tokens := hs.budget.tokens
		hs.mu.Unlock()
		h.m.budget.WithLabelValues(hs.key).Set(float64(tokens))
		if !ok {
			return fail("retry budget of host " + hs.key + " exhausted, not retried")
		}
		if !h.budget.Disabled {
			paid += cost
		}
		h.m.retries.WithLabelValues(hs.key, string(last.class)).Inc()
		h.m.backoff.WithLabelValues(hs.key).Observe(delay.Seconds())
		h.log.InfoContext(ctx, "retrying", "unit", r.Unit, "host", hs.key, "attempt", attempt+1,
			"delay", delay, "reason", string(last.class), "status", last.status, "method", method, "url", rawURL)
		if err := sleep(ctx, h.clock, delay); err != nil {
			return h.canceled(err, method, rawURL, attempt)
		}
	}
}

func (h *Handler) canceled(err error, method, url string, attempts int) error {
	class := dlq.ClassCanceled
	if errors.Is(err, context.DeadlineExceeded) {
		class = dlq.ClassTimeout
	}
	return &Error{Class: class, Message: "context ended", Attempts: attempts, Method: method, URL: url, Err: err}
}

func idempotent(method string, declared bool) bool {
	return method == "" || method == http.MethodGet || method == http.MethodHead || declared
}

// attempt makes one paced attempt: breaker, concurrency, pacing, send, read.
func (h *Handler) attempt(ctx context.Context, hs *host, req *http.Request, r Request, read func(*http.Response) error, p Policy, secrets []string, n int) outcome {
	now := h.clock.Now()
	hs.mu.Lock()
	allowed, probe := hs.breaker.allow(now)
	state := hs.breaker.state
	hs.mu.Unlock()
	h.m.breaker.WithLabelValues(hs.key).Set(float64(state))
	if !allowed {
		return outcome{err: errors.New("circuit breaker open for " + hs.key), class: dlq.ClassCircuitOpen,
			message: "circuit breaker open for host " + hs.key + ", failing fast"}
	}
	verdict := false
	defer func() {
		if !verdict {
			hs.mu.Lock()
			hs.breaker.release(probe)
			hs.mu.Unlock()
		}
	}()

	select {
	case hs.sem <- struct{}{}:
	case <-ctx.Done():
		return outcome{err: ctx.Err(), canceled: true}
	}
	defer func() { <-hs.sem }()

	seq, err := h.pace(ctx, hs, p)
	if err != nil {
		return outcome{err: err, canceled: true}
	}

	o, hn := h.send(ctx, hs, req, r, read, secrets)

	now = h.clock.Now()
	hs.mu.Lock()
	if hn.hasQuota {
		hs.quota.observe(now, hn.quota, seq, hs.seq-seq)
	}
	if o.class == dlq.ClassRateLimited {
		// With quota headers the pacer has the server's own numbers;
		// the adaptive rate is for servers that say nothing.
		if !hn.hasQuota {
			hs.adaptive.throttled(now)
		}
	} else if o.status != 0 && !o.canceled {
		hs.adaptive.accepted(now)
	}
	if o.class == dlq.ClassRateLimited || o.class == dlq.ClassHTTP5xx || o.class == dlq.ClassTimeout {
		switch {
		case hn.hasRetryAfter:
			o.hint, o.hasHint = hn.retryAfter, true
		case o.class == dlq.ClassRateLimited:
			o.hint, o.hasHint = hs.quota.retryHint(now)
		}
		if o.hasHint && o.hint > p.MaxServerDelay {
			o.capped, o.hint = o.hint, p.MaxServerDelay
		}
		if o.hasHint && hn.hasRetryAfter {
			// Retry-After is about the host, not just this request.
			if until := now.Add(o.hint); until.After(hs.gate) {
				hs.gate, hs.gateLen = until, o.hint
			}
		}
		if o.class == dlq.ClassRateLimited && !o.hasHint {
			d := hs.adaptive.pause(p.BaseDelay, h.rand01())
			if until := now.Add(d); until.After(hs.gate) {
				hs.gate, hs.gateLen = until, 0
			}
		}
	}
	// A unit that keeps failing is one broken request, not a broken host: its retries
	// count against the breaker only when they succeed. A host that is down fails the
	// first attempt of unit after unit, which is what opens the breaker.
	if !o.canceled && (n == 1 || !o.hostFault || probe) {
		hs.breaker.record(now, o.hostFault, probe)
		verdict = true
	}
	pace := hs.currentPace(now)
	state = hs.breaker.state
	hs.mu.Unlock()
	h.m.pace.WithLabelValues(hs.key).Set(pace)
	h.m.breaker.WithLabelValues(hs.key).Set(float64(state))
	return o
}

// currentPace is the strictest rate in force, 0 when unpaced.
func (hs *host) currentPace(now time.Time) float64 {
	r := math.Inf(1)
	if hs.conf != nil {
		r = float64(hs.conf.Limit())
	}
	if hs.adaptive.rate > 0 {
		r = math.Min(r, hs.adaptive.rate)
	}
	if q := hs.quota.pace(now); q > 0 {
		r = math.Min(r, q)
	}
	if math.IsInf(r, 1) {
		return 0
	}
	return r
}

// pace waits until the host may take one more request: after any
// Retry-After gate, within the configured rate, the quota the headers
// report and the adaptive rate. It returns the request's send sequence
// number.
func (h *Handler) pace(ctx context.Context, hs *host, p Policy) (uint64, error) {
	for {
		now := h.clock.Now()
		hs.mu.Lock()
		gate, gateLen := hs.gate, hs.gateLen
		hs.mu.Unlock()
		if gate.After(now) {
			// Spread the wake-ups over a tenth of the gate, at most 1s.
			spread := time.Duration(h.rand01() * float64(min(gateLen/10, time.Second)))
			h.m.throttled.WithLabelValues(hs.key, "retry_after").Inc()
			if err := sleep(ctx, h.clock, min(gate.Sub(now)+spread, p.MaxServerDelay)); err != nil {
				return 0, err
			}
			continue
		}
		break
	}

	now := h.clock.Now()
	var confRes *rate.Reservation
	wait := time.Duration(0)
	source := ""
	if hs.conf != nil {
		confRes = hs.conf.ReserveN(now, 1)
		if d := confRes.DelayFrom(now); d > wait {
			wait, source = d, "rate"
		}
	}
	hs.mu.Lock()
	if d := hs.quota.grant(now, h.rand01).Sub(now); d > wait {
		wait, source = d, "quota"
	}
	if d := hs.adaptive.grant(now).Sub(now); d > wait {
		wait, source = d, "adaptive"
	}
	hs.mu.Unlock()
	if wait > p.MaxServerDelay {
		h.log.WarnContext(ctx, "pacing asked for a longer wait than allowed; capped", "host", hs.key, "asked", wait, "cap", p.MaxServerDelay)
		wait = p.MaxServerDelay
	}
	if wait > 0 {
		h.m.throttled.WithLabelValues(hs.key, source).Inc()
	}
	err := sleep(ctx, h.clock, wait)
	hs.mu.Lock()
	hs.quota.sent()
	var seq uint64
	if err == nil {
		hs.seq++
		seq = hs.seq
	}
	hs.mu.Unlock()
	if err != nil {
		if confRes != nil {
			confRes.CancelAt(h.clock.Now())
		}
		return 0, err
	}
	return seq, nil
}

const snippetLen = 512

// send makes the HTTP round trip and reads or classifies the response.
func (h *Handler) send(ctx context.Context, hs *host, req *http.Request, r Request, read func(*http.Response) error, secrets []string) (outcome, hints) {
	resp, err := h.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return outcome{err: ctx.Err(), canceled: true}, hints{}
		}
		class, transient := classifyErr(err)
		if class == dlq.ClassParse || class == dlq.ClassCanceled {
			class, transient = dlq.ClassNetwork, false
		}
		h.m.requests.WithLabelValues(hs.key, string(class)).Inc()
		return outcome{err: err, class: class, transient: transient, hostFault: transient,
			message: redact.String(err.Error(), secrets...)}, hints{}
	}
	defer func() {
		// Drain a little so the connection can be reused, then close.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}()
	hn := parseHints(resp.Header, h.clock.Now())
	for _, f := range hn.forms {
		h.m.headers.WithLabelValues(hs.key, f).Inc()
	}
	code := resp.StatusCode
	h.m.requests.WithLabelValues(hs.key, strconv.Itoa(code)).Inc()

	if code/100 == 2 || slices.Contains(r.AcceptStatus, code) {
		err := read(resp)
		if err == nil {
			return outcome{status: code}, hn
		}
		if ctx.Err() != nil {
			return outcome{err: ctx.Err(), canceled: true, status: code}, hn
		}
		class, transient := classifyErr(err)
		if class == dlq.ClassCanceled {
			class, transient = dlq.ClassNetwork, true
		}
		if class == dlq.ClassTruncated || class == dlq.ClassNetwork || class == dlq.ClassTimeout {
			h.m.requests.WithLabelValues(hs.key, string(class)).Inc()
		}
		return outcome{err: err, class: class, transient: transient, status: code,
			hostFault: transient && class != dlq.ClassRateLimited,
			message:   redact.String(err.Error(), secrets...)}, hn
	}

	body, _ := io.ReadAll(io.LimitReader(resp.Body, snippetLen))
	snippet := redact.String(strings.ToValidUTF8(string(bytes.TrimSpace(body)), "?"), secrets...)
	class, transient := classifyStatus(code)
	msg := resp.Status
	if first := firstLine(snippet); first != "" {
		msg += ": " + first
	}
	return outcome{err: fmt.Errorf("HTTP %s", resp.Status), class: class, transient: transient, status: code,
		message: msg, snippet: snippet, hostFault: class == dlq.ClassHTTP5xx || (class == dlq.ClassTimeout && transient)}, hn
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

package retry

import (
	"cmp"
	"context"
	"math"
	"time"

	"golang.org/x/time/rate"

	"github.com/geoflow/geoflow/dlq"
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
	// Local keeps the host's pacing to this process even when the Handler shares
	// pacing with other processes (Options.Shared).
	Local bool
}

// Defaults of RateLimit.
const (
	DefaultBurst       = 10
	DefaultConcurrency = 4
)

// pacer decides when the next request to a host may go: no sooner than the
// configured fixed rate, the quota the server's rate-limit headers report and
// the adaptive rate cut on 429s allow; the strictest wins. Make one with
// newPacer. Callers hold the host's lock (the fixed rate's limiter is safe by
// itself).
type pacer struct {
	fixed    *rate.Limiter // nil when no fixed rate
	quota    quotaPacer
	adaptive adaptiveRate
	seq      uint64 // requests sent
}

// newPacer returns the pacer of a host configured with rl.
func newPacer(rl RateLimit) pacer {
	var p pacer
	if rl.RequestsPerSecond > 0 {
		p.fixed = rate.NewLimiter(rate.Limit(rl.RequestsPerSecond), cmp.Or(max(rl.Burst, 0), DefaultBurst))
	}
	return p
}

// reserve books the next request's slot and returns how long it must wait,
// what holds it back ("rate", "quota" or "adaptive"; "" when nothing does)
// and the fixed rate's reservation, to cancel if the request never goes.
// rnd returns a value in [0,1).
//
// With shared (the host is paced with other processes, and the shared schedule knows its
// quota) the quota's local estimate is left out: it counts only this process's requests,
// and the shared schedule spaces everyone's.
func (pc *pacer) reserve(now time.Time, rnd func() float64, shared bool) (time.Duration, string, *rate.Reservation) {
	var res *rate.Reservation
	wait := time.Duration(0)
	source := ""
	if pc.fixed != nil {
		res = pc.fixed.ReserveN(now, 1)
		if d := res.DelayFrom(now); d > wait {
			wait, source = d, "rate"
		}
	}
	if !shared {
		if d := pc.quota.grant(now, rnd).Sub(now); d > wait {
			wait, source = d, "quota"
		}
	}
	if d := pc.adaptive.grant(now).Sub(now); d > wait {
		wait, source = d, "adaptive"
	}
	return wait, source, res
}

// sent records that a reserved request went out at now (ok) or was abandoned, and
// returns the send sequence number of the last request that went out.
func (pc *pacer) sent(now time.Time, ok bool) uint64 {
	pc.quota.sent(now, ok)
	if ok {
		pc.seq++
		pc.adaptive.sent(now, pc.seq)
	}
	return pc.seq
}

// observe applies an answer to the request with send sequence number seq:
// the quota headers it carried, and whether the server throttled it
// (class rate_limited) or took it (answered is true when it answered at all).
// With quota headers the pacer has the server's own numbers; the adaptive
// rate is for servers that say nothing.
//
// The adaptive rate counts what the server admitted by send time, when the server
// decided to take it: counted as answers arrive, a slow server's answers bunch, and the
// rate the server took looks higher than its quota.
func (pc *pacer) observe(now, sent time.Time, class dlq.Class, answered bool, hn hints, seq uint64) {
	if hn.hasQuota {
		pc.quota.observe(now, hn.quota, seq, pc.seq-seq)
	}
	if class == dlq.ClassRateLimited {
		if !hn.hasQuota {
			pc.adaptive.throttled(now, sent, seq)
		}
	} else if answered {
		pc.adaptive.accepted(now)
	}
}

// current is the strictest rate in force, 0 when unpaced.
func (pc *pacer) current(now time.Time) float64 {
	r := math.Inf(1)
	if pc.fixed != nil {
		r = float64(pc.fixed.Limit())
	}
	if pc.adaptive.rate > 0 {
		r = math.Min(r, pc.adaptive.rate)
	}
	if q := pc.quota.pace(now); q > 0 {
		r = math.Min(r, q)
	}
	if math.IsInf(r, 1) {
		return 0
	}
	return r
}

// pace waits until the host may take one more request: after any gate,
// within the configured rate, the quota the headers report and the adaptive
// rate, never longer than p.MaxServerDelay (the cap is logged). It returns
// the request's send sequence number.
func (h *Handler) pace(ctx context.Context, hs *host, p Policy) (uint64, error) {
	if err := h.waitGate(ctx, hs, p); err != nil {
		return 0, err
	}
	var sharedWait time.Duration
	shared := false
	if hs.isShared {
		sharedWait, shared = h.sharedWait(ctx, hs)
	}
	now := h.clock.Now()
	hs.mu.Lock()
	wait, source, res := hs.pacer.reserve(now, h.jitter.float64, shared)
	if sharedWait > wait {
		wait, source = sharedWait, "shared"
	}
	hs.mu.Unlock()
	if wait > p.MaxServerDelay {
		h.log.WarnContext(ctx, "pacing asked for a longer wait than allowed; capped", "host", hs.key, "asked", wait, "cap", p.MaxServerDelay)
		wait = p.MaxServerDelay
	}
	if wait > 0 {
		h.m.throttled.WithLabelValues(hs.key, source).Inc()
		h.m.waited.WithLabelValues(hs.key, source).Add(wait.Seconds())
	}
	err := h.wait(ctx, hs.key, wait)
	hs.mu.Lock()
	seq := hs.pacer.sent(h.clock.Now(), err == nil)
	hs.mu.Unlock()
	if err != nil {
		if res != nil {
			res.CancelAt(h.clock.Now())
		}
		return 0, err
	}
	return seq, nil
}

// quotaPacer spreads the requests the server says remain over the time to
// its reset, for every worker of one host. Its estimate of what remains is
// the server's last word minus what was sent since that word was given and
// what has been granted but not yet sent. Callers hold the host's lock.
type quotaPacer struct {
	have  bool
	limit float64
	est   float64 // requests left in the current window, after grants
	reset time.Time
	// early is the earliest the window may end on our clock (reset is the latest): a
	// request sent between them may count against either window.
	early  time.Time
	carry  int // requests sent since early
	window time.Duration
	// lastReset is the reset of the last answer taken, which a window's roll does not
	// clear: answers of earlier windows are told by it, and a window's length inferred.
	lastReset time.Time
	// windowInferred says window was guessed from two resets, not sent.
	windowInferred bool
	obsSeq         uint64 // send sequence number of the observation in force
	pending        int    // slots granted, not yet sent
	next           time.Time
}

// roll starts a new window when the known reset has passed.
func (q *quotaPacer) roll(now time.Time) {
	if !q.have || q.reset.IsZero() || now.Before(q.reset) {
		return
	}
	if q.limit > 0 {
		// What was sent since the window's earliest end may have reached the server
		// after it: it counts against the new window as well as the old.
		q.est = q.limit - float64(q.pending) - float64(q.carry)
		q.carry = 0
	} else {
		q.have = false
		return
	}
	if q.window > 0 {
		n := now.Sub(q.reset)/q.window + 1
		q.reset = q.reset.Add(n * q.window)
		q.early = q.early.Add(n * q.window)
	} else {
		q.reset, q.early = time.Time{}, time.Time{}
	}
}

// sustainableGap is the spacing that cannot exceed a windowed quota.
func (q *quotaPacer) sustainableGap() time.Duration {
	if q.window > 0 && q.limit > 0 {
		return time.Duration(float64(q.window) / q.limit)
	}
	return 0
}

// grant returns the earliest instant the next request may be sent. While
// more than half the quota remains requests go at once; below that they are
// spread evenly over the time to the reset, never slower than the
// sustainable rate of the window when it is known; once none remain they are
// placed one gap apart after the reset, each with a random part of a gap, so
// the workers do not all wake at the reset instant. rnd returns a value in
// [0,1).
func (q *quotaPacer) grant(now time.Time, rnd func() float64) time.Time {
	q.roll(now)
	if !q.have {
		return now
	}
	q.pending++
	start := now
	if q.next.After(start) {
		start = q.next
	}
	if q.est >= 1 {
		q.est--
		if q.limit > 0 && q.est+1 > q.limit/2 {
			return now
		}
		if q.reset.IsZero() {
			return now
		}
		left := q.reset.Sub(start)
		if left <= 0 {
			return start
		}
		gap := time.Duration(float64(left) / (q.est + 1))
		if sg := q.sustainableGap(); sg > 0 {
			// Above a reserve of a tenth of the quota go faster than the
			// sustainable rate (up to twice at half), so a token bucket
			// settles near the reserve instead of at half full.
			boost := 1 + max(0, q.est+1-0.1*q.limit)/(0.4*q.limit)
			gap = min(gap, time.Duration(float64(sg)/boost))
		}
		q.next = start.Add(gap)
		return start
	}
	if q.reset.IsZero() {
		// Out of quota with no reset known: probe, the next response says more.
		q.est--
		return now
	}
	q.est--
	gap := q.sustainableGap()
	if gap == 0 {
		gap = time.Duration(float64(q.reset.Sub(now)) / math.Max(q.limit, 1))
		gap = min(max(gap, time.Millisecond), time.Second)
	}
	if start.Before(q.reset) {
		start = q.reset
	}
	slot := start.Add(time.Duration(rnd() * float64(gap)))
	q.next = start.Add(gap)
	return slot
}

// sent records that a granted request went out at now (ok) or was abandoned.
func (q *quotaPacer) sent(now time.Time, ok bool) {
	if q.pending > 0 {
		q.pending--
	}
	if ok && q.have && !q.early.IsZero() && !now.Before(q.early) {
		q.carry++
	}
}

// observe applies what a response said. seq is the send sequence number of
// the request it answered; sentSince is how many requests were sent after
// it. Observations older than the one in force are dropped.
func (q *quotaPacer) observe(now time.Time, o quotaObs, seq uint64, sentSince uint64) {
	if q.have && seq < q.obsSeq {
		return
	}
	if o.limit > 0 {
		q.limit = float64(o.limit)
	} else if q.limit < float64(o.remaining) {
		q.limit = float64(o.remaining)
	}
	if o.window > 0 {
		q.window, q.windowInferred = o.window, false
	}
	if !o.reset.IsZero() {
		if !o.reset.After(now) || (!q.lastReset.IsZero() && o.reset.Before(q.lastReset.Add(-q.staleSlack()))) {
			// The answer describes a window that has ended (its request was admitted
			// before the window in force began, and answered after): it says nothing of
			// what remains now. Taken, it would put back a passed reset, and with no
			// reset known every worker would probe.
			return
		}
		if o.window == 0 && !q.lastReset.IsZero() && !now.Before(q.lastReset) {
			// A fixed window rolled over: its length is the distance between the two
			// resets. Observations can skip a window, so keep the shortest distance seen.
			if w := o.reset.Sub(q.lastReset); w >= 100*time.Millisecond && w <= 24*time.Hour &&
				(q.window == 0 || q.windowInferred && w < q.window*9/10) {
				q.window, q.windowInferred = w, true
			}
		}
		q.lastReset = o.reset
	}
	if !o.reset.Equal(q.reset) && (q.reset.IsZero() || o.reset.After(q.reset.Add(q.staleSlack()))) {
		q.carry = 0 // a later window: nothing was sent past its end yet
	}
	q.have = true
	q.obsSeq = seq
	q.reset = o.reset
	q.early = cmp.Or(o.early, o.reset)
	q.est = float64(o.remaining) - float64(sentSince) - float64(q.pending)
}

// staleSlack is how much earlier than the reset in force an answer's reset may fall and
// still name the same window: estimates of one reset differ by the uncertainty of the
// clocks, far less than a window.
func (q *quotaPacer) staleSlack() time.Duration {
	if q.window > 0 {
		return q.window / 2
	}
	return 500 * time.Millisecond
}

// retryHint is how long a throttled request should wait for the quota, when
// the pacer knows the quota is spent.
func (q *quotaPacer) retryHint(now time.Time) (time.Duration, bool) {
	if !q.have || q.est >= 1 || q.reset.IsZero() || !q.reset.After(now) {
		return 0, false
	}
	return q.reset.Sub(now), true
}

// pace is the current request rate the pacer allows, 0 when unpaced.
func (q *quotaPacer) pace(now time.Time) float64 {
	if !q.have || q.reset.IsZero() || !q.reset.After(now) {
		if g := q.sustainableGap(); q.have && g > 0 {
			return float64(time.Second) / float64(g)
		}
		return 0
	}
	r := math.Max(q.est, 0) / q.reset.Sub(now).Seconds()
	if g := q.sustainableGap(); g > 0 {
		r = math.Max(r, float64(time.Second)/float64(g))
	}
	return r
}

// adaptiveRate is a client-side send rate that is cut when the server
// throttles and regrows along the cubic curve of the AWS SDK's adaptive
// retry mode: rate(t) = C*(t-K)^3 + lastMax with K = cbrt((lastMax-beta*base)/C),
// where lastMax is the plateau, cubicPlateau of the base the cut was taken from.
// Unlike the SDK, the cut is taken from what the server admitted in the second
// before the throttled request was sent (every request sent then that was not
// itself throttled, answered or still in flight) rather than the rate sent, so
// one throttled burst does not collapse the rate to its floor, and a quota that
// shrank mid-run is found in one or two cuts. Callers hold the host's lock.
type adaptiveRate struct {
	rate    float64 // requests per second; 0 = not throttled yet, unlimited
	lastMax float64
	lastCut time.Time
	k       float64 // seconds from lastCut back to lastMax
	c       float64 // the cubic's C in force: cubicC, halved per stable cut
	// lastBase is the rate the last cut was taken from; stable counts the cuts in
	// a row at about the same rate (at most 3).
	lastBase float64
	stable   int
	streak   int // 429s in a row
	next     time.Time
	// sends are the requests sent in the last sendMemory, oldest first, by
	// send sequence number: sends[i] is request firstSeq+i.
	sends    []sendRec
	firstSeq uint64
}

// sendRec is one request the adaptive rate remembers.
type sendRec struct {
	at        time.Time
	throttled bool
}

const (
	cubicC    = 0.064
	cubicBeta = 0.9 // the cut keeps 90% of what the server admitted
	// cubicPlateau is where the regrowth flattens, a little below what the server
	// admitted: at the admitted rate itself, the jitter of a slow server's answers
	// puts one request too many in a window now and then.
	cubicPlateau = 0.95
	minRate      = 0.5 // requests per second
	cutCooldown  = 250 * time.Millisecond
	admitWindow  = time.Second
	sendMemory   = 3 * time.Second
	maxSendRecs  = 100_000
	// sureAdmitted is how many requests admitted since the last cut make the
	// rate they show trusted whole; with fewer a cut keeps at least half the rate.
	sureAdmitted = 8
)

// sent records that request seq went out at now.
func (a *adaptiveRate) sent(now time.Time, seq uint64) {
	if len(a.sends) == 0 {
		a.firstSeq = seq
	}
	if seq != a.firstSeq+uint64(len(a.sends)) {
		// Not the next number (cannot happen with one pacer per host): start over.
		a.sends, a.firstSeq = a.sends[:0], seq
	}
	a.sends = append(a.sends, sendRec{at: now})
	cut := 0
	for cut < len(a.sends) && (now.Sub(a.sends[cut].at) > sendMemory || len(a.sends)-cut > maxSendRecs) {
		cut++
	}
	if cut > 0 {
		a.sends = append(a.sends[:0], a.sends[cut:]...)
		a.firstSeq += uint64(cut)
	}
}

// accepted records an answer at now that was not a throttle: a success ends a
// streak of 429s and lets the rate regrow.
func (a *adaptiveRate) accepted(now time.Time) {
	a.streak = 0
	if a.rate == 0 {
		return
	}
	t := now.Sub(a.lastCut).Seconds()
	r := a.c*math.Pow(t-a.k, 3) + a.lastMax
	if r > a.rate {
		a.rate = r
	}
	// Regrown far past anything the server took: stop pacing until it
	// throttles again.
	if a.rate > 4*a.lastMax && a.rate > 1000 {
		a.rate = 0
	}
}

// admitted is the rate the server admitted before the request sent at sent: the
// requests sent in a span before it that were not throttled, over the span. The span is
// the time since the last cut, so that a quota that shrank is found at once, unless the
// server admitted nothing since (the rest of a spent fixed window: no news of its rate);
// then it is the least rate over the one, two and four seconds before sent. Spans are
// cut to the first request remembered, and are at least 100ms. Requests still in flight
// count as admitted: a window's quota is spent in order of arrival, and the throttled
// request came after them. sure says the since-cut span held enough admissions to be
// trusted whole.
func (a *adaptiveRate) admitted(sent time.Time) (float64, bool) {
	if len(a.sends) == 0 {
		return 0, false
	}
	rate := func(from time.Time) (float64, int) {
		if a.sends[0].at.After(from) {
			from = a.sends[0].at
		}
		n := 0
		for _, r := range a.sends {
			if !r.at.Before(from) && r.at.Before(sent) && !r.throttled {
				n++
			}
		}
		return float64(n) / max(sent.Sub(from), 100*time.Millisecond).Seconds(), n
	}
	if a.rate > 0 && sent.Sub(a.lastCut) < admitWindow {
		if r, n := rate(a.lastCut); n > 0 {
			return r, n >= sureAdmitted
		}
	}
	// The least rate over the last one, two and four seconds: a one-second span that
	// straddles two fixed windows counts up to both windows' quotas, and longer spans
	// dilute that.
	best := math.Inf(1)
	for _, span := range [...]time.Duration{admitWindow, 2 * admitWindow, 4 * admitWindow} {
		if r, _ := rate(sent.Add(-span)); r < best {
			best = r
		}
		if !a.sends[0].at.Before(sent.Add(-span)) {
			break // no history beyond this span
		}
	}
	return best, false
}

// throttled cuts the rate after a 429 at now to the request seq, sent at sent.
// A request sent before the last cut was sent at the old rate and is no news;
// cuts closer together than cutCooldown count once.
func (a *adaptiveRate) throttled(now, sent time.Time, seq uint64) {
	if seq >= a.firstSeq && seq-a.firstSeq < uint64(len(a.sends)) {
		a.sends[seq-a.firstSeq].throttled = true
	}
	if !a.lastCut.IsZero() && a.rate > 0 && (sent.Before(a.lastCut) || now.Sub(a.lastCut) < cutCooldown) {
		return
	}
	if sent.IsZero() || sent.After(now) {
		sent = now
	}
	acc, sure := a.admitted(sent)
	cur := a.rate
	if cur == 0 {
		cur = math.Inf(1)
	}
	base := math.Min(cur, math.Max(acc, cur/2))
	if sure {
		base = math.Min(cur, acc)
	}
	if math.IsInf(base, 1) {
		base = math.Max(acc, 1) // throttled before any success: start low
	}
	// A cut at about the rate of the one before says the quota holds still:
	// probe above it less often each time, so its 429s become rarer.
	if a.lastBase > 0 && math.Abs(base-a.lastBase) <= 0.15*a.lastBase {
		a.stable = min(a.stable+1, 3)
	} else {
		a.stable = 0
	}
	a.lastBase = base
	a.c = cubicC / float64(int(1)<<a.stable)
	a.rate = math.Max(base*cubicBeta, minRate)
	a.lastMax = math.Max(base*cubicPlateau, a.rate)
	a.k = math.Cbrt((a.lastMax - a.rate) / a.c)
	a.lastCut = now
}

// pause is how long the whole host should rest after a 429 that came with
// no hint of when to return: 50ms doubling with each 429 in a row, up to
// maxPause, half of it random, so that with many workers someone is not
// always ready to send into a spent window. A success ends the streak.
func (a *adaptiveRate) pause(maxPause time.Duration, rnd float64) time.Duration {
	a.streak++
	d := min(50*time.Millisecond<<min(a.streak-1, 20), maxPause)
	return d/2 + time.Duration(rnd*float64(d/2))
}

// grant returns the earliest instant the next request may go.
func (a *adaptiveRate) grant(now time.Time) time.Time {
	if a.rate == 0 {
		return now
	}
	slot := now
	if a.next.After(slot) {
		slot = a.next
	}
	a.next = slot.Add(time.Duration(float64(time.Second) / a.rate))
	return slot
}

package retry

import (
	"cmp"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// Jitter names how a backoff delay is randomised.
type Jitter string

// The jitter strategies. JitterFull does the least work under contention
// (Brooker); JitterDecorrelated finishes slightly sooner; JitterNone is plain
// exponential backoff and is there for comparison, not for use.
const (
	JitterFull         Jitter = "full"         // random(0, min(max, base*2^n))
	JitterEqual        Jitter = "equal"        // v/2 + random(0, v/2), v = min(max, base*2^n)
	JitterDecorrelated Jitter = "decorrelated" // min(max, random(base, prev*3))
	JitterNone         Jitter = "none"         // min(max, base*2^n)
)

// Defaults of Policy.
const (
	DefaultMaxAttempts    = 6
	DefaultBaseDelay      = 500 * time.Millisecond
	DefaultMaxDelay       = 30 * time.Second
	DefaultMaxElapsed     = 5 * time.Minute
	DefaultMaxServerDelay = 5 * time.Minute
	// DefaultHeaderTimeout bounds connecting and waiting for a response's headers.
	DefaultHeaderTimeout = 60 * time.Second
	// DefaultIdleTimeout bounds a body that stops sending: no byte for this long.
	DefaultIdleTimeout = 60 * time.Second
	// DefaultAttemptTimeout bounds one attempt, body included, however steadily it
	// arrives: generous, for large pages from slow servers.
	DefaultAttemptTimeout = 30 * time.Minute
)

// Policy says how often and how patiently one unit is retried. The zero
// value is the default policy; each zero field takes its default:
// MaxAttempts 6 (including the first), BaseDelay 500ms, MaxDelay 30s,
// MaxElapsed 5m (from the first attempt to the start of the last),
// MaxServerDelay 5m (the most a Retry-After or a quota reset is obeyed;
// longer requests are capped and the cap is logged), Jitter "full".
type Policy struct {
	MaxAttempts    int
	BaseDelay      time.Duration
	MaxDelay       time.Duration
	MaxElapsed     time.Duration
	MaxServerDelay time.Duration
	Jitter         Jitter
	// HeaderTimeout bounds connecting and the wait for the response's headers;
	// IdleTimeout a body that sends nothing for that long; AttemptTimeout a whole
	// attempt. Each ends the attempt as a timeout, which is retried. Defaults 60s,
	// 60s, 30m.
	HeaderTimeout  time.Duration
	IdleTimeout    time.Duration
	AttemptTimeout time.Duration
}

// Validate reports a policy that cannot be used: negative values, an
// unknown jitter, or a base delay above the maximum delay.
func (p Policy) Validate() error {
	var errs []error
	if p.MaxAttempts < 0 {
		errs = append(errs, fmt.Errorf("max_attempts %d is negative", p.MaxAttempts))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"base_delay", p.BaseDelay}, {"max_delay", p.MaxDelay}, {"max_elapsed", p.MaxElapsed}, {"max_server_delay", p.MaxServerDelay},
		{"header_timeout", p.HeaderTimeout}, {"idle_timeout", p.IdleTimeout}, {"attempt_timeout", p.AttemptTimeout}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s %s is negative", d.name, d.v))
		}
	}
	switch p.Jitter {
	case "", JitterFull, JitterEqual, JitterDecorrelated, JitterNone:
	default:
		errs = append(errs, fmt.Errorf("unknown jitter %q (want full, equal, decorrelated or none)", p.Jitter))
	}
	if d := p.withDefaults(); d.BaseDelay > d.MaxDelay && p.BaseDelay > 0 && p.MaxDelay > 0 {
		errs = append(errs, fmt.Errorf("base_delay %s is above max_delay %s", p.BaseDelay, p.MaxDelay))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("retry: invalid policy: %w", err)
	}
	return nil
}

func (p Policy) withDefaults() Policy {
	p.MaxAttempts = cmp.Or(p.MaxAttempts, DefaultMaxAttempts)
	p.BaseDelay = cmp.Or(p.BaseDelay, DefaultBaseDelay)
	p.MaxDelay = cmp.Or(p.MaxDelay, DefaultMaxDelay)
	p.MaxElapsed = cmp.Or(p.MaxElapsed, DefaultMaxElapsed)
	p.MaxServerDelay = cmp.Or(p.MaxServerDelay, DefaultMaxServerDelay)
	p.Jitter = cmp.Or(p.Jitter, JitterFull)
	p.HeaderTimeout = cmp.Or(p.HeaderTimeout, DefaultHeaderTimeout)
	p.IdleTimeout = cmp.Or(p.IdleTimeout, DefaultIdleTimeout)
	p.AttemptTimeout = cmp.Or(p.AttemptTimeout, DefaultAttemptTimeout)
	return p
}

// Backoff returns the delay before retry number n (0 for the first retry),
// given the previous delay (used by decorrelated jitter) and a random source.
// p's zero fields take their defaults. It is exported for the benchmark and
// for callers that pace work of their own.
func (p Policy) Backoff(n int, prev time.Duration, rnd *rand.Rand) time.Duration {
	p = p.withDefaults()
	ceil := expDelay(p.BaseDelay, p.MaxDelay, n)
	switch p.Jitter {
	case JitterNone:
		return ceil
	case JitterEqual:
		half := ceil / 2
		return half + randDur(rnd, ceil-half)
	case JitterDecorrelated:
		prev = max(prev, p.BaseDelay)
		hi := min(prev*3, p.MaxDelay)
		if hi <= p.BaseDelay {
			return min(p.BaseDelay, p.MaxDelay)
		}
		return p.BaseDelay + randDur(rnd, hi-p.BaseDelay)
	default:
		return randDur(rnd, ceil)
	}
}

// expDelay is min(maxDelay, base*2^n) without overflow.
func expDelay(base, maxDelay time.Duration, n int) time.Duration {
	if n < 0 {
		n = 0
	}
	f := float64(base) * math.Pow(2, float64(n))
	if f >= float64(maxDelay) || math.IsInf(f, 0) {
		return maxDelay
	}
	return time.Duration(f)
}

// randDur is uniform in [0, d].
func randDur(rnd *rand.Rand, d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(rnd.Int64N(int64(d) + 1))
}

// jitter is the random source of a Handler's backoff and of the spread of
// wake-ups, shared by every worker. It is safe for concurrent use.
type jitter struct {
	mu  sync.Mutex
	rnd *rand.Rand
}

// newJitter seeds a jitter. Seed 0 seeds from crypto/rand, so two processes do
// not back off in step.
func newJitter(seed int64) *jitter {
	s := uint64(seed)
	if seed == 0 {
		var b [8]byte
		_, _ = crand.Read(b[:])
		s = binary.LittleEndian.Uint64(b[:])
	}
	return &jitter{rnd: rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))}
}

// float64 returns a value in [0,1).
func (j *jitter) float64() float64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.rnd.Float64()
}

// delay is the wait before retry number n (0 for the first retry) after the
// outcome o, given the previous delay. A server's hint is obeyed, with up to
// 10% more so the workers it told the same thing do not come back together,
// or exactly when it was capped; without one, p's backoff decides.
func (j *jitter) delay(p Policy, o outcome, n int, prev time.Duration) time.Duration {
	if !o.hasHint {
		j.mu.Lock()
		defer j.mu.Unlock()
		return p.Backoff(n, prev, j.rnd)
	}
	spread := time.Duration(j.float64() * 0.1 * float64(o.hint))
	if o.capped > 0 {
		return o.hint
	}
	return o.hint + spread
}

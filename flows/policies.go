package flows

// The retry and rate-limit policies a flow's defaults and each task set: their checks,
// and a task's policy as its own keys over the defaults.

import (
	"time"

	"github.com/geoflow/geoflow/retry"
)

// checkRetry reports the retry keys at path that no policy can have.
func (d *decoder) checkRetry(r retrySpec, path string) {
	if r.MaxAttempts != nil && *r.MaxAttempts < 1 {
		d.errorf(d.keys[path+".max_attempts"], "%s.max_attempts must be at least 1", path)
	}
	if r.BaseDelay != nil && r.MaxDelay != nil && *r.MaxDelay < *r.BaseDelay {
		d.errorf(d.keys[path+".max_delay"], "%s.max_delay (%s) must not be below base_delay (%s)", path, *r.MaxDelay, *r.BaseDelay)
	}
	for _, t := range []struct {
		key string
		v   *time.Duration
	}{{"header_timeout", r.HeaderTimeout}, {"idle_timeout", r.IdleTimeout}, {"attempt_timeout", r.AttemptTimeout}} {
		if t.v != nil && *t.v <= 0 {
			d.errorf(d.keys[path+"."+t.key], "%s.%s must be above 0", path, t.key)
		}
	}
}

// checkRateLimit reports the rate_limit keys at path that no policy can have.
func (d *decoder) checkRateLimit(r rateLimitSpec, path string) {
	if r.RequestsPerSecond != nil && *r.RequestsPerSecond <= 0 {
		d.errorf(d.keys[path+".requests_per_second"], "%s.requests_per_second must be above 0", path)
	}
	if r.Burst != nil && *r.Burst < 1 {
		d.errorf(d.keys[path+".burst"], "%s.burst must be at least 1", path)
	}
	if r.Concurrency != nil && *r.Concurrency < 1 {
		d.errorf(d.keys[path+".concurrency"], "%s.concurrency must be at least 1", path)
	}
}

// mergeRetry is a task's retry policy: its own keys, else the defaults'; a key set by
// neither stays zero, which the retry package reads as its default.
func mergeRetry(def, own retrySpec) retry.Policy {
	var p retry.Policy
	pick := func(a, b *time.Duration) time.Duration {
		if b != nil {
			return *b
		}
		if a != nil {
			return *a
		}
		return 0
	}
	if own.MaxAttempts != nil {
		p.MaxAttempts = *own.MaxAttempts
	} else if def.MaxAttempts != nil {
		p.MaxAttempts = *def.MaxAttempts
	}
	p.BaseDelay = pick(def.BaseDelay, own.BaseDelay)
	p.MaxDelay = pick(def.MaxDelay, own.MaxDelay)
	p.MaxElapsed = pick(def.MaxElapsed, own.MaxElapsed)
	p.MaxServerDelay = pick(def.MaxServerDelay, own.MaxServerDelay)
	p.HeaderTimeout = pick(def.HeaderTimeout, own.HeaderTimeout)
	p.IdleTimeout = pick(def.IdleTimeout, own.IdleTimeout)
	p.AttemptTimeout = pick(def.AttemptTimeout, own.AttemptTimeout)
	if own.Jitter != nil {
		p.Jitter = retry.Jitter(*own.Jitter)
	} else if def.Jitter != nil {
		p.Jitter = retry.Jitter(*def.Jitter)
	}
	return p
}

// mergeRateLimit is a task's rate limit: its own keys, else the defaults'.
func mergeRateLimit(def, own rateLimitSpec) retry.RateLimit {
	var r retry.RateLimit
	if own.RequestsPerSecond != nil {
		r.RequestsPerSecond = *own.RequestsPerSecond
	} else if def.RequestsPerSecond != nil {
		r.RequestsPerSecond = *def.RequestsPerSecond
	}
	if own.Burst != nil {
		r.Burst = *own.Burst
	} else if def.Burst != nil {
		r.Burst = *def.Burst
	}
	if own.Concurrency != nil {
		r.Concurrency = *own.Concurrency
	} else if def.Concurrency != nil {
		r.Concurrency = *def.Concurrency
	}
	if own.Shared != nil {
		r.Local = !*own.Shared
	} else if def.Shared != nil {
		r.Local = !*def.Shared
	}
	return r
}

package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// fixtureConfig says how the quota-enforcing server behaves.
type fixtureConfig struct {
	Bucket     bool    // token bucket instead of fixed 1-second windows
	Headers    bool    // send X-RateLimit-* (windows) or IETF RateLimit (bucket)
	RetryAfter bool    // send Retry-After on 429
	Quota      float64 // requests per second
	FaultRate  float64 // share of admitted requests that fail transiently
	HalveAfter int64   // halve the capacity after this many successes (0 never)
	Service    time.Duration
	// Tail makes the service time long-tailed: log-normal with Service as its median,
	// cut at 5 s, as a database-backed server answers under load.
	Tail bool
	// Stall makes a third of the faults a 3 s stall before the body (the request was
	// admitted and holds a slot), the others split between 503 and a cut-off body.
	Stall bool
	// Skew sets the server's clock ahead of the client's: its windows, its Reset
	// (epoch seconds) and its Date header follow its own clock.
	Skew time.Duration
	Seed uint64
}

// fixture is a quota-enforcing server. Fixed windows are aligned to wall
// clock seconds (as at GitHub, whose X-RateLimit-Reset is epoch seconds).
// The token bucket holds one second of quota and reports the IETF fields,
// with t the whole seconds until the bucket is full.
type fixture struct {
	cfg fixtureConfig

	mu       sync.Mutex
	rnd      *rand.Rand
	quota    float64
	halvedAt time.Time
	// fixed windows
	window int64
	count  int
	// token bucket
	tokens float64
	last   time.Time

	start     time.Time
	trace     map[int64][2]int   // window -> admitted, throttled (only with -trace)
	arrivals  map[int64][]string // window -> arrival ms, X when throttled (only with -trace)
	attempts  atomic.Int64
	throttled atomic.Int64
	admitted  atomic.Int64
	successes atomic.Int64
	faults    atomic.Int64
	busy      atomic.Int64 // nanoseconds requests spent in the server, summed
	// busyBefore and admittedBefore are busy and admitted for the requests that
	// arrived before the quota was halved.
	busyBefore     atomic.Int64
	admittedBefore atomic.Int64
	attemptsBefore atomic.Int64
}

func newFixture(cfg fixtureConfig) *fixture {
	now := time.Now()
	return &fixture{cfg: cfg, rnd: rand.New(rand.NewPCG(cfg.Seed, 7)), quota: cfg.Quota,
		tokens: cfg.Quota, last: now, start: now, window: now.Unix()}
}

// capacity is how many requests the quota allowed from start to end: the
// rate over time, halved at halvedAt, plus for the token bucket the full
// bucket it starts with. (Fixed windows are pro-rated over the run: the
// first window's full allowance is not counted twice.)
func (f *fixture) capacity(end time.Time) float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := 0.0
	if f.cfg.Bucket {
		c = f.cfg.Quota
	}
	if f.halvedAt.IsZero() {
		return c + f.cfg.Quota*end.Sub(f.start).Seconds()
	}
	return c + f.cfg.Quota*f.halvedAt.Sub(f.start).Seconds() + f.cfg.Quota/2*end.Sub(f.halvedAt).Seconds()
}

func (f *fixture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.attempts.Add(1)
	began := time.Now()
	before := false
	defer func() {
		f.busy.Add(int64(time.Since(began)))
		if before {
			f.busyBefore.Add(int64(time.Since(began)))
		}
	}()
	now := time.Now().Add(f.cfg.Skew) // the server's clock
	f.mu.Lock()
	if f.cfg.HalveAfter > 0 && f.halvedAt.IsZero() && f.successes.Load() >= f.cfg.HalveAfter {
		f.halvedAt = now
		f.quota = f.cfg.Quota / 2
		f.tokens = math.Min(f.tokens, f.quota)
	}
	limit := int(f.quota)
	before = f.halvedAt.IsZero()
	if before {
		f.attemptsBefore.Add(1)
	}
	var admitted bool
	var remaining int
	var resetIn time.Duration // until the window resets / the bucket is full
	var retryIn time.Duration // until one more request would be admitted
	if f.cfg.Bucket {
		f.tokens = math.Min(f.quota, f.tokens+now.Sub(f.last).Seconds()*f.quota)
		f.last = now
		if f.tokens >= 1 {
			f.tokens--
			admitted = true
		}
		remaining = int(f.tokens)
		resetIn = time.Duration((f.quota - f.tokens) / f.quota * float64(time.Second))
		retryIn = time.Duration(math.Max(0, 1-f.tokens) / f.quota * float64(time.Second))
	} else {
		if sec := now.Unix(); sec != f.window {
			f.window, f.count = sec, 0
		}
		f.count++
		admitted = f.count <= limit
		remaining = max(limit-f.count, 0)
		resetIn = time.Unix(f.window+1, 0).Sub(now)
		retryIn = resetIn
	}
	if f.trace != nil {
		c := f.trace[now.Unix()]
		if admitted {
			c[0]++
		} else {
			c[1]++
		}
		f.trace[now.Unix()] = c
		f.arrivals[now.Unix()] = append(f.arrivals[now.Unix()], fmt.Sprintf("%d%s", now.Nanosecond()/1e6, map[bool]string{true: "", false: "X"}[admitted]))
	}
	fault := admitted && f.rnd.Float64() < f.cfg.FaultRate
	kind := 0 // 503
	if fault {
		if f.cfg.Stall {
			kind = f.rnd.IntN(3)
		} else {
			kind = f.rnd.IntN(2)
		}
	}
	truncate, stall := fault && kind == 1, fault && kind == 2
	service := f.cfg.Service
	if f.cfg.Tail && service > 0 {
		// Log-normal around the median, sigma 1: a tenth of the answers take over
		// 3.6 times the median, one in a hundred over 10 times.
		service = min(time.Duration(float64(service)*math.Exp(f.rnd.NormFloat64())), 5*time.Second)
	}
	f.mu.Unlock()
	w.Header().Set("Date", now.UTC().Format(http.TimeFormat))

	if f.cfg.Headers {
		if f.cfg.Bucket {
			w.Header().Set("RateLimit", fmt.Sprintf(`"default";r=%d;t=%d`, remaining, int(math.Ceil(resetIn.Seconds()))))
			w.Header().Set("RateLimit-Policy", fmt.Sprintf(`"default";q=%d;w=1`, limit))
		} else {
			w.Header().Set("X-RateLimit-Limit", strconv.Itoa(limit))
			w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
			w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(f.window+1, 10))
		}
	}
	if !admitted {
		f.throttled.Add(1)
		if f.cfg.RetryAfter {
			w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(retryIn.Seconds())))))
		}
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, "rate limit exceeded\n")
		return
	}
	f.admitted.Add(1)
	if before {
		f.admittedBefore.Add(1)
	}
	if service > 0 {
		time.Sleep(service)
	}
	if stall {
		f.faults.Add(1)
		time.Sleep(3 * time.Second)
		fault = false // then answers
	}
	if fault {
		f.faults.Add(1)
		if truncate {
			w.Header().Set("Content-Length", "4096")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, `{"type":"FeatureCollection","features":[{"type":"Feature",`)
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "backend busy\n")
		return
	}
	f.successes.Add(1)
	w.Header().Set("Content-Type", "application/geo+json")
	io.WriteString(w, `{"type":"FeatureCollection","features":[]}`)
}

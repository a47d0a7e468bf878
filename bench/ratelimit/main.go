// Command ratelimit measures how geoflow's rate-limit handler (package
// retry) harvests from a quota-enforcing server, beside the naive retry
// strategies most clients use. The server listens on 127.0.0.1 only.
//
//	go run ./bench/ratelimit            # full matrix, a few minutes on 2 cores
//	go run ./bench/ratelimit -quick     # 4 workers, fewer requests
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type options struct {
	quick    bool
	requests int
	quota    float64
	workers  []int
	faults   float64
	seed     int64
	timeout  time.Duration
	server   string // fixed, bucket or all
	headers  string // on, off or all
	retryAft string // on, off or all
	strats   string // comma-separated, or all
	// latency runs the rows of a slow server instead: answers that take latency (fixed,
	// then long-tailed), a small quota, a skewed server clock and stalls among the faults.
	latency time.Duration
	skew    time.Duration
	trace   bool   // print each server window's admitted and throttled requests to stderr
	tail    string // the slow rows' latency: on (long-tailed), off (fixed) or all
}

func pick(filter, v string) bool { return filter == "all" || filter == v }

func main() {
	var o options
	var workers string
	flag.BoolVar(&o.quick, "quick", false, "quick mode: 4 workers, 200 requests, fewer strategies")
	flag.IntVar(&o.requests, "requests", 2000, "logical requests per run (a run of a few seconds is dominated by its end: one retry backoff of the last unit idles the quota)")
	flag.Float64Var(&o.quota, "quota", 200, "server quota, requests per second (halved mid-run)")
	flag.StringVar(&workers, "workers", "4,16,64", "comma-separated worker counts")
	flag.Float64Var(&o.faults, "faults", 0.05, "share of admitted requests that fail transiently (503 or truncated body)")
	flag.Int64Var(&o.seed, "seed", 1, "random seed")
	flag.DurationVar(&o.timeout, "timeout", 60*time.Second, "give up on a run after this long (unfinished units count as lost)")
	flag.StringVar(&o.server, "server", "all", "fixed, bucket or all")
	flag.StringVar(&o.headers, "headers", "all", "rate-limit headers: on, off or all")
	flag.StringVar(&o.retryAft, "retry-after", "all", "Retry-After on 429: on, off or all")
	flag.StringVar(&o.strats, "strategies", "all", "comma-separated: geoflow, immediate, exponential, full-jitter, or all")
	flag.DurationVar(&o.latency, "latency", 0, "run the slow-server rows: answers of this median latency (fixed and long-tailed), -quota small")
	flag.DurationVar(&o.skew, "skew", 1500*time.Millisecond, "with -latency: the server's clock runs this far ahead (Date, Reset)")
	flag.BoolVar(&o.trace, "trace", false, "print each server window's admitted/throttled counts to stderr")
	flag.StringVar(&o.tail, "tail", "all", "with -latency: long-tailed latency rows on, fixed-latency rows off, or all")
	flag.Parse()
	for _, s := range strings.Split(workers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "bad -workers %q\n", workers)
			os.Exit(2)
		}
		o.workers = append(o.workers, n)
	}
	if o.quick {
		o.workers, o.requests = []int{4}, 200
	}
	if err := run(context.Background(), os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// result is one row of the table.
type result struct {
	fixture   fixtureConfig
	workers   int
	strategy  string
	elapsed   time.Duration
	ok, lost  int
	attempts  int64
	throttled int64
	admitted  int64
	capacity  float64
	p99       time.Duration
	goodput   float64
	utilised  float64
	share429  float64
	amplify   float64
	// busy is the share of the workers' time spent with a request in the server: near
	// 100%, the workers, not the pacing, held the rate back.
	busy float64
	// usedBefore and busyBefore are quota used and workers busy before the quota was
	// halved (where the quota is highest, and the workers most likely the ceiling).
	usedBefore, busyBefore float64
	// reachable is admitted requests over what the quota allowed or the workers could
	// send, whichever is less, phase by phase: a worker holds one request at a time, so n
	// workers send at most n per mean time a request spends in the server (Little's law).
	reachable float64
}

func run(ctx context.Context, w io.Writer, o options) error {
	type scenario struct {
		bucket, headers, retryAfter bool
		strategies                  []string
	}
	all := []string{"geoflow", "immediate", "exponential", "full-jitter"}
	var scenarios []scenario
	for _, bucket := range []bool{false, true} {
		// The naive strategies read no header, so they run once per
		// window kind, against a server that sends every header.
		naive := all[1:]
		if o.quick {
			naive = []string{"full-jitter"}
		}
		scenarios = append(scenarios,
			scenario{bucket, true, true, append([]string{"geoflow"}, naive...)},
			scenario{bucket, true, false, []string{"geoflow"}},
			scenario{bucket, false, true, []string{"geoflow"}},
			scenario{bucket, false, false, []string{"geoflow"}},
		)
	}
	if o.latency > 0 {
		return runLatency(ctx, w, o)
	}
	fmt.Fprintf(w, "quota %.0f req/s (halved after %d successes), %d logical requests, %.0f%% transient faults\n\n",
		o.quota, o.requests/2, o.requests, o.faults*100)
	fmt.Fprintln(w, "| server | headers | Retry-After | workers | strategy | goodput (units/s) | quota used | 429 share | amplification | p99 latency | units lost |")
	fmt.Fprintln(w, "|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|")
	var results []result
	onOff := map[bool]string{true: "on", false: "off"}
	for _, sc := range scenarios {
		server := "fixed"
		if sc.bucket {
			server = "bucket"
		}
		if !pick(o.server, server) || !pick(o.headers, onOff[sc.headers]) || !pick(o.retryAft, onOff[sc.retryAfter]) {
			continue
		}
		for _, n := range o.workers {
			for _, st := range sc.strategies {
				if o.strats != "all" && !slices.Contains(strings.Split(o.strats, ","), st) {
					continue
				}
				cfg := fixtureConfig{Bucket: sc.bucket, Headers: sc.headers, RetryAfter: sc.retryAfter, Quota: o.quota,
					FaultRate: o.faults, HalveAfter: int64(o.requests / 2), Service: 2 * time.Millisecond, Seed: uint64(o.seed)}
				r, err := runOne(ctx, cfg, n, st, o)
				if err != nil {
					return err
				}
				results = append(results, r)
				fmt.Fprintln(w, r.row())
			}
		}
	}
	fmt.Fprintln(w)
	summarise(w, results)
	return nil
}

// runLatency runs the rows of a slow server: fixed one-second windows reset at whole
// epoch seconds of a clock running o.skew ahead, answers taking o.latency (fixed, then
// long-tailed), and a third of the faults a 3 s stall.
func runLatency(ctx context.Context, w io.Writer, o options) error {
	fmt.Fprintf(w, "slow server: quota %.0f req/s in fixed 1 s windows (halved after %d successes), answers in %s (fixed, then log-normal with that median, cut at 5 s), server clock %s ahead, %.0f%% faults (503, cut-off body, 3 s stall), %d logical requests\n\n",
		o.quota, o.requests/2, o.latency, o.skew, o.faults*100, o.requests)
	fmt.Fprintln(w, "| latency | headers | workers | strategy | goodput (units/s) | quota used | 429 share | amplification | p99 latency | units lost | workers busy | before the halving: quota used, workers busy | of what the quota and the workers allow |")
	fmt.Fprintln(w, "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	var results []result
	for _, tail := range []bool{false, true} {
		if !pick(o.tail, map[bool]string{true: "on", false: "off"}[tail]) {
			continue
		}
		for _, headers := range []bool{true, false} {
			if !pick(o.headers, map[bool]string{true: "on", false: "off"}[headers]) {
				continue
			}
			for _, n := range o.workers {
				cfg := fixtureConfig{Headers: headers, RetryAfter: true, Quota: o.quota, FaultRate: o.faults,
					HalveAfter: int64(o.requests / 2), Service: o.latency, Tail: tail, Stall: true, Skew: o.skew, Seed: uint64(o.seed)}
				r, err := runOne(ctx, cfg, n, "geoflow", o)
				if err != nil {
					return err
				}
				results = append(results, r)
				lat := "fixed"
				if tail {
					lat = "long tail"
				}
				fmt.Fprintf(w, "| %s %s | %s | %d | geoflow | %.1f | %.0f%% | %.1f%% | %.2f | %s | %d | %.0f%% | %.0f%%, %.0f%% | %.0f%% |\n", lat, o.latency,
					map[bool]string{true: "on", false: "off"}[headers], n, r.goodput, r.utilised*100, r.share429*100, r.amplify,
					r.p99.Round(time.Millisecond), r.lost, r.busy*100, r.usedBefore*100, r.busyBefore*100, r.reachable*100)
			}
		}
	}
	fmt.Fprintln(w)
	summarise(w, results)
	return nil
}

func (r result) row() string {
	server := "fixed 1s windows"
	if r.fixture.Bucket {
		server = "token bucket"
	}
	onOff := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	return fmt.Sprintf("| %s | %s | %s | %d | %s | %.1f | %.0f%% | %.1f%% | %.2f | %s | %d |",
		server, onOff(r.fixture.Headers), onOff(r.fixture.RetryAfter), r.workers, r.strategy,
		r.goodput, r.utilised*100, r.share429*100, r.amplify, r.p99.Round(time.Millisecond), r.lost)
}

// summarise checks the goals of the handler against the rows.
func summarise(w io.Writer, rs []result) {
	var worstHdrUtil, worstHdr429, worstNoHdr429, worstAmp = 1.0, 0.0, 0.0, 0.0
	lost := 0
	for _, r := range rs {
		if r.strategy != "geoflow" {
			continue
		}
		lost += r.lost
		worstAmp = math.Max(worstAmp, r.amplify)
		if r.fixture.Headers {
			worstHdrUtil = math.Min(worstHdrUtil, r.utilised)
			worstHdr429 = math.Max(worstHdr429, r.share429)
		} else {
			worstNoHdr429 = math.Max(worstNoHdr429, r.share429)
		}
	}
	check := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	fmt.Fprintf(w, "geoflow, worst case over the runs above:\n")
	fmt.Fprintf(w, "- with headers: quota used >= %.0f%% (goal >= 90%%: %s), 429 share <= %.1f%% (goal <= 2%%: %s)\n",
		worstHdrUtil*100, check(worstHdrUtil >= 0.9), worstHdr429*100, check(worstHdr429 <= 0.02))
	fmt.Fprintf(w, "- without headers: 429 share <= %.1f%% (goal <= 15%%: %s)\n", worstNoHdr429*100, check(worstNoHdr429 <= 0.15))
	fmt.Fprintf(w, "- amplification <= %.2f (goal <= 1.1 at 5%% faults, 429 retries included: %s)\n", worstAmp, check(worstAmp <= 1.1))
	fmt.Fprintf(w, "- units lost: %d (goal 0: %s)\n", lost, check(lost == 0))
}

func runOne(ctx context.Context, cfg fixtureConfig, workers int, name string, o options) (result, error) {
	fx := newFixture(cfg)
	if o.trace {
		fx.trace, fx.arrivals = map[int64][2]int{}, map[int64][]string{}
		defer func() {
			keys := slices.Sorted(maps.Keys(fx.trace))
			fmt.Fprintf(os.Stderr, "trace %d workers, headers %v, tail %v:", workers, cfg.Headers, cfg.Tail)
			for _, k := range keys {
				c := fx.trace[k]
				fmt.Fprintf(os.Stderr, " %d/%d", c[0], c[1])
			}
			fmt.Fprintln(os.Stderr)
			for _, k := range keys {
				if fx.trace[k][1] > 0 { // the windows with 429s, beside the window before
					fmt.Fprintln(os.Stderr, "  ", k, fx.arrivals[k-1], fx.arrivals[k])
				}
			}
			fmt.Fprintln(os.Stderr)
		}()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return result{}, fmt.Errorf("listening on loopback: %w", err)
	}
	srv := &http.Server{Handler: fx, ErrorLog: nil}
	go srv.Serve(ln)
	defer srv.Close()

	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 128
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	defer tr.CloseIdleConnections()

	var st strategy
	switch name {
	case "geoflow":
		st = newGeoflow(client, o.seed)
	default:
		st = &naive{client: client, rule: name, rnd: randFor(o.seed)}
	}

	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	base := "http://" + ln.Addr().String() + "/collections/roads/items?bbox="
	jobs := make(chan int)
	var (
		mu    sync.Mutex
		lat   []time.Duration
		okN   atomic.Int64
		lostN atomic.Int64
		wg    sync.WaitGroup
	)
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for j := range jobs {
				t0 := time.Now()
				if err := st.fetch(ctx, base+strconv.Itoa(j)); err != nil {
					lostN.Add(1)
					continue
				}
				okN.Add(1)
				mu.Lock()
				lat = append(lat, time.Since(t0))
				mu.Unlock()
			}
		})
	}
	for j := range o.requests {
		jobs <- j
	}
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)
	fx.start = start.Add(cfg.Skew) // the server's clock

	r := result{fixture: cfg, workers: workers, strategy: name, elapsed: elapsed,
		ok: int(okN.Load()), lost: int(lostN.Load()),
		attempts: fx.attempts.Load(), throttled: fx.throttled.Load(), admitted: fx.admitted.Load(),
		capacity: fx.capacity(start.Add(elapsed).Add(cfg.Skew))}
	slices.Sort(lat)
	if len(lat) > 0 {
		r.p99 = lat[min(len(lat)-1, int(math.Ceil(0.99*float64(len(lat))))-1)]
	}
	r.goodput = float64(r.ok) / elapsed.Seconds()
	r.utilised = math.Min(float64(r.admitted)/r.capacity, 1)
	if r.attempts > 0 {
		r.share429 = float64(r.throttled) / float64(r.attempts)
	}
	r.amplify = float64(r.attempts) / float64(o.requests)
	r.busy = float64(fx.busy.Load()) / (float64(workers) * float64(elapsed))
	if h := fx.halvedAt.Sub(fx.start); !fx.halvedAt.IsZero() && h > 0 {
		r.usedBefore = math.Min(float64(fx.admittedBefore.Load())/(cfg.Quota*h.Seconds()), 1)
		r.busyBefore = float64(fx.busyBefore.Load()) / (float64(workers) * float64(h))
		// Phase by phase, the least of the quota and the workers' ceiling.
		ceiling := func(busy, attempts int64, d time.Duration, quota float64) float64 {
			byQuota := quota * d.Seconds()
			if attempts == 0 || busy == 0 {
				return byQuota
			}
			mean := float64(busy) / float64(attempts) // ns a request spends in the server
			return math.Min(byQuota, float64(workers)*float64(d)/mean)
		}
		end := start.Add(elapsed).Add(cfg.Skew)
		c1 := ceiling(fx.busyBefore.Load(), fx.attemptsBefore.Load(), h, cfg.Quota)
		c2 := ceiling(fx.busy.Load()-fx.busyBefore.Load(), fx.attempts.Load()-fx.attemptsBefore.Load(), end.Sub(fx.halvedAt), cfg.Quota/2)
		r.reachable = math.Min(float64(r.admitted)/(c1+c2), 1)
	}
	return r, nil
}

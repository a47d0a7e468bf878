package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/store"
)

var deadLettersDesc = prometheus.NewDesc("geoflow_dead_letters_open",
	"Open dead letters in the store, by failure class and task (read from the store at each scrape).",
	[]string{"class", "task"}, nil)

// deadLetterCollector reads the open dead letters from the store at each scrape: they
// are the store's, not this process's (a CLI run or another instance adds them too).
type deadLetterCollector struct {
	st  store.DeadLetters
	log *slog.Logger
}

func (c *deadLetterCollector) Describe(ch chan<- *prometheus.Desc) { ch <- deadLettersDesc }

func (c *deadLetterCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	rows, err := c.st.DeadLetterStats(ctx, dlq.Filter{Status: dlq.StatusOpen})
	if err != nil {
		// The rest of /metrics still answers: a store that is down shows on /readyz.
		c.log.Warn("counting dead letters for /metrics", "err", err)
		return
	}
	type key struct{ class, task string }
	n := map[key]int64{}
	for _, r := range rows {
		n[key{string(r.Class), r.Task}] += r.N
	}
	for k, v := range n {
		ch <- prometheus.MustNewConstMetric(deadLettersDesc, prometheus.GaugeValue, float64(v), k.class, k.task)
	}
}

// The pool's workers as each last reported itself (geoflow_workers), so that one scrape of
// geoflow serve sees the whole pool; each worker's own /metrics (geoflow worker --listen)
// has the same counts live, and its hosts' waits.
var (
	poolUnitsDesc = prometheus.NewDesc("geoflow_pool_worker_units_total",
		"Units each worker of the pool has ended since it started, by outcome (done, failed, snoozed), as it last reported.",
		[]string{"worker", "outcome"}, nil)
	poolInFlightDesc = prometheus.NewDesc("geoflow_pool_worker_units_in_flight",
		"Units each live worker of the pool was executing when it last reported.", []string{"worker"}, nil)
	poolAliveDesc = prometheus.NewDesc("geoflow_pool_workers",
		"The pool's workers by state: alive, silent (no report for 15 s) or stopped.", []string{"state"}, nil)
)

// poolCollector reads the pool's workers from a store with a job queue at each scrape.
type poolCollector struct {
	q   store.Queue
	log *slog.Logger
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- poolUnitsDesc
	ch <- poolInFlightDesc
	ch <- poolAliveDesc
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	ws, err := c.q.ListWorkers(ctx)
	if err != nil {
		c.log.Warn("listing the pool's workers for /metrics", "err", err)
		return
	}
	now := time.Now()
	states := map[string]int{"alive": 0, "silent": 0, "stopped": 0}
	for _, w := range ws {
		switch {
		case w.StoppedAt != nil:
			states["stopped"]++
			continue // gone: its counts are history, not the pool's
		case !w.Alive(now):
			states["silent"]++
		default:
			states["alive"]++
			ch <- prometheus.MustNewConstMetric(poolInFlightDesc, prometheus.GaugeValue, float64(w.InFlight), w.ID)
		}
		for outcome, n := range map[string]int64{"done": w.Done, "failed": w.Failed, "snoozed": w.Snoozed} {
			ch <- prometheus.MustNewConstMetric(poolUnitsDesc, prometheus.CounterValue, float64(n), w.ID, outcome)
		}
	}
	for st, n := range states {
		ch <- prometheus.MustNewConstMetric(poolAliveDesc, prometheus.GaugeValue, float64(n), st)
	}
}

// The latest run of each flow in the store and its tasks, by state: what a dashboard or
// an alert asks ("is the parcels harvest's last run incomplete?"), whichever process ran
// it (a CLI run, the scheduler, the UI).
var (
	lastRunDesc = prometheus.NewDesc("geoflow_flow_last_run",
		"1 for the status of each flow's latest run in the store (running, done, incomplete, failed, interrupted, crashed), read at each scrape.",
		[]string{"flow", "status"}, nil)
	lastRunTasksDesc = prometheus.NewDesc("geoflow_flow_last_run_tasks",
		"The tasks of each flow's latest run in the store, by state (done, incomplete, failed, upstream_failed, ...), read at each scrape.",
		[]string{"flow", "state"}, nil)
)

// What the requests of each flow's latest run asked of each host, summed over the processes
// that sent them (a distributed run's workers, and the process that planned it), from the
// run's units. The labels are the flow and the host only: the processes of a pool come and
// go under new names (hostname-pid), and geoflow runs show has the split by process.
var (
	lastRunHostRequestsDesc = prometheus.NewDesc("geoflow_flow_last_run_host_requests",
		"Requests the latest run of each flow sent to each host, retries included, by all its processes.", []string{"flow", "host"}, nil)
	lastRunHostRetriesDesc = prometheus.NewDesc("geoflow_flow_last_run_host_retries",
		"Retries of the latest run of each flow, by host.", []string{"flow", "host"}, nil)
	lastRunHostThrottledDesc = prometheus.NewDesc("geoflow_flow_last_run_host_rate_limited",
		"Answers 429 Too Many Requests the latest run of each flow got, by host.", []string{"flow", "host"}, nil)
	lastRunHostWaitDesc = prometheus.NewDesc("geoflow_flow_last_run_host_wait_seconds",
		"Time the requests of the latest run of each flow were held back by pacing and Retry-After or slept before retries, by host, summed over its requests.",
		[]string{"flow", "host"}, nil)
	lastRunHostBreakerDesc = prometheus.NewDesc("geoflow_flow_last_run_host_breaker_opened",
		"Times the circuit breakers of a host opened in the latest run of each flow, summed over its processes (each has its own).", []string{"flow", "host"}, nil)
)

// collectHosts sends the figures of a flow's latest run per host.
func collectHosts(ch chan<- prometheus.Metric, flow string, hosts []store.HostCount) {
	for _, h := range hosts {
		for d, v := range map[*prometheus.Desc]float64{
			lastRunHostRequestsDesc:  float64(h.Requests),
			lastRunHostRetriesDesc:   float64(h.Retries),
			lastRunHostThrottledDesc: float64(h.RateLimited),
			lastRunHostWaitDesc:      float64(h.WaitedMS) / 1000,
			lastRunHostBreakerDesc:   float64(h.BreakerOpened),
		} {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, flow, h.Host)
		}
	}
}

// lastRunLimit caps the runs a scrape reads to find each flow's latest.
const lastRunLimit = 500

// lastRunCollector reads each flow's latest run from the store at each scrape.
type lastRunCollector struct {
	st  store.History
	log *slog.Logger
}

func (c *lastRunCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- lastRunDesc
	ch <- lastRunTasksDesc
	ch <- lastRunHostRequestsDesc
	ch <- lastRunHostRetriesDesc
	ch <- lastRunHostThrottledDesc
	ch <- lastRunHostWaitDesc
	ch <- lastRunHostBreakerDesc
}

func (c *lastRunCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	runs, err := c.st.ListRuns(ctx, store.RunFilter{Limit: lastRunLimit})
	if err != nil {
		c.log.Warn("reading the latest runs for /metrics", "err", err)
		return
	}
	seen := map[string]bool{}
	for _, r := range runs { // latest first
		if seen[r.Flow] {
			continue
		}
		seen[r.Flow] = true
		ch <- prometheus.MustNewConstMetric(lastRunDesc, prometheus.GaugeValue, 1, r.Flow, string(r.Status))
		full, err := c.st.GetRun(ctx, r.ID)
		if err != nil {
			c.log.Warn("reading a run's tasks for /metrics", "run", r.ID, "err", err)
			continue
		}
		n := map[store.State]int{}
		for _, t := range full.Tasks {
			n[t.State]++
		}
		for st, k := range n {
			ch <- prometheus.MustNewConstMetric(lastRunTasksDesc, prometheus.GaugeValue, float64(k), r.Flow, string(st))
		}
		collectHosts(ch, r.Flow, full.Hosts)
	}
}

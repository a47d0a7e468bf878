package server

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// WorkerProcess is geoflow worker, for Run: it joins the pool on the store's job queue
// and executes units of distributed runs until the stop, adopts the distributed runs
// whose starting process is gone (engine.Adopter), and, when Listen is set, serves its
// /metrics and /healthz there. Its fields are the command's options, validated.
type WorkerProcess struct {
	// Engine is the database the runs are recorded in, migrated, with the job queue
	// (Queue); required.
	Engine engine.Stores
	// Pacing is the pacing of hosts shared with the other processes on the database
	// (the store's, retry.Options.Shared).
	Pacing retry.Shared
	// Database names the store in the start-up log line (no credentials).
	Database string
	// ID, Hostname and Version are the worker's in the pool (store.WorkConfig).
	ID       string
	Hostname string
	Version  string
	// Concurrency, RescueAfter and Grace are the queue's (store.WorkConfig); Grace is
	// the stop's budget too (budgetFor), required above 0.
	Concurrency int
	RescueAfter time.Duration
	Grace       time.Duration
	// SnoozeAfter and Memory are the units' (engine.UnitWorker); Memory is a limit in bytes.
	SnoozeAfter time.Duration
	Memory      int64
	// Tasks are the task kinds of the units; Secrets, when set, gets the secrets of the
	// flows parsed.
	Tasks   *tasks.Registry
	Secrets *redact.Set
	// Listen, when set, is the address /metrics and /healthz are served on.
	Listen string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (p *WorkerProcess) lifecycle() lifecycle {
	return lifecycle{kind: workerKind, listen: p.Listen, budget: budgetFor(workerKind, p.Grace), log: p.Logger}
}

// setup builds the unit worker and its metrics; its loop is the queue's Work, from the
// "worker started" line to the "worker stopped" one. A worker is never unready: it has
// no /readyz.
func (p *WorkerProcess) setup(_ context.Context, reg *prometheus.Registry, _ *atomic.Bool) (*parts, error) {
	log := cmp.Or(p.Logger, slog.Default())
	handler := retry.New(&retry.Options{Logger: log, Shared: p.Pacing, Registerer: reg})
	memory := tasks.NewMemory(p.Memory)
	w := &engine.UnitWorker{ID: p.ID, Store: p.Engine, HTTP: handler, Registry: p.Tasks, Logger: log.With("worker", p.ID),
		Secrets: p.Secrets, Backlog: handler.Backlog, SnoozeAfter: p.SnoozeAfter, Memory: memory}
	adopter := &engine.Adopter{Store: p.Engine, HTTP: handler, Registry: p.Tasks, Secrets: p.Secrets, Logger: log.With("worker", p.ID),
		By: "worker " + p.ID, Memory: memory}
	registerWorkerMetrics(reg, p.ID, w)
	cfg := store.WorkConfig{ID: p.ID, Hostname: p.Hostname, Version: p.Version, Concurrency: p.Concurrency,
		Grace: budgetFor(workerKind, p.Grace).units, RescueAfter: p.RescueAfter, Stats: w.Stats, Logger: log.With("worker", p.ID)}
	return &parts{
		handler: metricsHandler(reg, p.Secrets),
		loop: func(ctx context.Context) error {
			log.Info("worker started", "worker", p.ID, "concurrency", p.Concurrency, "rescue_after", p.RescueAfter, "database", p.Database)
			// Beside its units, the worker adopts the distributed runs whose starting
			// process is gone, looking on every report; at the stop it hands them back
			// at once, for the other workers, while its units get their grace.
			watching, stopWatching := context.WithCancel(ctx)
			var adopting sync.WaitGroup
			adopting.Go(func() { adopter.Watch(watching, store.WorkerReport) })
			err := p.Engine.Queue.Work(ctx, cfg, w.Execute)
			stopWatching()
			adopting.Wait()
			s := w.Stats()
			log.Info("worker stopped", "worker", p.ID, "units_done", s.Done, "units_failed", s.Failed, "snoozed", s.Snoozed)
			return err // nil when asked to stop (SIGINT, SIGTERM) and stopped cleanly
		},
	}, nil
}

// metricsHandler serves a worker's /metrics, with the flows' secrets masked, and /healthz.
func metricsHandler(reg *prometheus.Registry, secrets *redact.Set) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metricsHandlerFor(reg, secrets))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	return mux
}

// registerWorkerMetrics exposes what the worker did, by the worker's id.
func registerWorkerMetrics(reg *prometheus.Registry, id string, w *engine.UnitWorker) {
	labels := prometheus.Labels{"worker": id}
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "geoflow_worker_units_done_total", Help: "Units this worker executed to done.", ConstLabels: labels},
			func() float64 { return float64(w.Stats().Done) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "geoflow_worker_units_failed_total", Help: "Units this worker dead-lettered.", ConstLabels: labels},
			func() float64 { return float64(w.Stats().Failed) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "geoflow_worker_units_snoozed_total", Help: "Units this worker gave back to wait (their host's backlog, a previous worker still on them).", ConstLabels: labels},
			func() float64 { return float64(w.Stats().Snoozed) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "geoflow_worker_units_in_flight", Help: "Units this worker is executing.", ConstLabels: labels},
			func() float64 { return float64(w.Stats().InFlight) }),
	)
}

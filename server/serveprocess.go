package server

import (
	"cmp"
	"context"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/schedule"
	"github.com/geoflow/geoflow/store"
)

// ServeProcess is geoflow serve, for Run: the scheduler fires the flows of Dir that have
// a schedule (SIGHUP reloads them), and HTTP on Listen serves the web UI, its API,
// /metrics, /healthz and /readyz. Its fields are the command's options, validated.
type ServeProcess struct {
	// Backend is what the UI and its API read and change (Options.Store); Fires is where
	// fires are claimed; Engine is where runs are recorded. All three are required, and
	// are normally one store, migrated.
	Backend Backend
	Fires   store.Fires
	Engine  engine.Stores
	// Dir is the flows directory; Flows is how its files are parsed (Registry required).
	Dir   string
	Flows flows.Options
	// Listen is the HTTP address (port 0 picks one); Token, StoreName, CookieSecure and
	// MetricsPublic are the web UI's (Options).
	Listen        string
	Token         string
	StoreName     string
	CookieSecure  bool
	MetricsPublic bool
	// Basemap is the web UI's (Options.Basemap).
	Basemap string
	// Grace is the stop's budget (budgetFor); required above 0.
	Grace time.Duration
	// Instance names this instance in the fires it claims (schedule.Options).
	Instance string
	// Distributed hands every run's units to the pool of workers.
	Distributed bool
	// Pacing is the pacing of hosts the store shares between processes (retry.Options.Shared);
	// nil paces this process alone.
	Pacing retry.Shared
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (p *ServeProcess) lifecycle() lifecycle {
	return lifecycle{kind: serveKind, listen: p.Listen, budget: budgetFor(serveKind, p.Grace), log: p.Logger}
}

// setup builds the scheduler, the launcher of the UI's runs and the handler, in that
// order: the catalog the UI shows is the scheduler's live one.
func (p *ServeProcess) setup(ctx context.Context, reg *prometheus.Registry, ready *atomic.Bool) (*parts, error) {
	b, log := budgetFor(serveKind, p.Grace), cmp.Or(p.Logger, slog.Default())
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics, err := schedule.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	runOpts := engine.RunOptions{
		Store:       p.Engine,
		HTTP:        retry.New(&retry.Options{Logger: log, Registerer: reg, Shared: p.Pacing}),
		Logger:      log,
		Grace:       b.units,
		Distributed: p.Distributed,
	}
	sched, err := schedule.New(schedule.Options{Store: p.Fires, Dir: p.Dir, Flows: p.Flows, Logger: log, Metrics: metrics,
		Instance: p.Instance, RunOptions: runOpts, Drain: b.drain})
	if err != nil {
		return nil, err
	}
	catalog := &Catalog{Dir: p.Dir, Options: p.Flows, Live: sched}
	runOpts.Store = p.Engine
	launcher, err := NewLauncher(ctx, catalog, runOpts, replayOptions(p.Flows, runOpts))
	if err != nil {
		return nil, err
	}
	h, err := Handler(Options{Store: p.Backend, Flows: sched, Registry: reg, Ready: ready, Logger: log, Catalog: catalog,
		Launcher: launcher, Token: p.Token, StoreName: p.StoreName, CookieSecure: p.CookieSecure, MetricsPublic: p.MetricsPublic, Basemap: p.Basemap})
	if err != nil {
		return nil, err
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	return &parts{
		handler:  h,
		launcher: launcher,
		loop: func(ctx context.Context) error {
			go reloadOnHUP(ctx, hup, sched, log)
			return sched.Run(ctx)
		},
		listening: func(addr net.Addr) { log.Info("serving", "listen", addr.String(), "flows", p.Dir) },
		release:   func() { signal.Stop(hup) },
	}, nil
}

// reloadOnHUP reloads the scheduler's flows on each SIGHUP until ctx ends.
func reloadOnHUP(ctx context.Context, hup <-chan os.Signal, sched *schedule.Scheduler, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			log.Info("SIGHUP: reloading flows")
			_ = sched.Reload(ctx)
		}
	}
}

// replayOptions are the options of the replays the UI of serve and ui starts: those of
// its runs, with the flows' task kinds and secrets.
func replayOptions(fl flows.Options, run engine.RunOptions) engine.ReplayOptions {
	return engine.ReplayOptions{Store: run.Store, HTTP: run.HTTP, Registry: fl.Registry, Secrets: fl.Secrets, Logger: run.Logger, Grace: run.Grace}
}

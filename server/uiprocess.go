package server

import (
	"cmp"
	"context"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/schedule"
)

// UIProcess is geoflow ui, for Run: the web UI and its API over a store, without the
// scheduler. Its fields are the command's options, validated.
type UIProcess struct {
	// Backend is what the UI and its API read and change (Options.Store), and Engine
	// where the runs it starts are recorded; both required, normally one store with its
	// migrations current.
	Backend Backend
	Engine  engine.Stores
	// Dir is the flows directory the UI shows and runs; when it is not a directory the
	// UI shows the store's runs only (and says so in the log). Flows is how its files are
	// parsed (Registry required).
	Dir   string
	Flows flows.Options
	// Listen is the HTTP address (port 0 picks one); Token, StoreName, CookieSecure,
	// MetricsPublic and ReadOnly are the web UI's (Options).
	Listen        string
	Token         string
	StoreName     string
	CookieSecure  bool
	MetricsPublic bool
	// Basemap is the web UI's (Options.Basemap).
	Basemap  string
	ReadOnly bool
	// Grace is the stop's budget (budgetFor); required above 0.
	Grace time.Duration
	// Pacing is the pacing of hosts the store shares between processes (retry.Options.Shared);
	// nil paces this process alone.
	Pacing retry.Shared
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (p *UIProcess) lifecycle() lifecycle {
	return lifecycle{kind: uiKind, listen: p.Listen, budget: budgetFor(uiKind, p.Grace), log: p.Logger}
}

// noSchedule is the scheduler of geoflow ui: none.
type noSchedule struct{}

func (noSchedule) Flows(int) []schedule.FlowInfo { return []schedule.FlowInfo{} }

// setup builds the handler, and the launcher of the UI's runs when there are flows to
// run and the UI may run them. Its /readyz reports the store alone: ready is not
// consulted.
func (p *UIProcess) setup(ctx context.Context, reg *prometheus.Registry, _ *atomic.Bool) (*parts, error) {
	log := cmp.Or(p.Logger, slog.Default())
	opts := Options{Store: p.Backend, Flows: noSchedule{}, Registry: reg, Logger: log, Token: p.Token, StoreName: p.StoreName,
		ReadOnly: p.ReadOnly, CookieSecure: p.CookieSecure, MetricsPublic: p.MetricsPublic, Basemap: p.Basemap}
	if fi, err := os.Stat(p.Dir); err == nil && fi.IsDir() {
		opts.Catalog = &Catalog{Dir: p.Dir, Options: p.Flows}
		if !p.ReadOnly {
			run := engine.RunOptions{Store: p.Engine, HTTP: retry.New(&retry.Options{Logger: log, Registerer: reg, Shared: p.Pacing}),
				Logger: log, Grace: budgetFor(uiKind, p.Grace).units}
			if opts.Launcher, err = NewLauncher(ctx, opts.Catalog, run, replayOptions(p.Flows, run)); err != nil {
				return nil, err
			}
		}
	} else {
		log.Warn("no flows directory: the UI shows the store's runs only", "flows", p.Dir)
	}
	h, err := Handler(opts)
	if err != nil {
		return nil, err
	}
	runs := opts.Launcher != nil
	return &parts{
		handler:  h,
		launcher: opts.Launcher,
		listening: func(addr net.Addr) {
			log.Info("web UI", "url", "http://"+addr.String()+"/", "store", p.StoreName, "runs", runs)
		},
	}, nil
}

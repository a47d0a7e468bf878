package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/schedule"
	"github.com/geoflow/geoflow/server"
)

type serveFlags struct {
	dir      string
	listen   string
	token    string
	grace    time.Duration
	instance string
	// cookieSecure: the UI is reached over HTTPS through a proxy (server.Options.CookieSecure).
	cookieSecure bool
	distributed  bool
}

func newServeCmd(g *globals) *cobra.Command {
	var sf serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Fire flows on their schedule, and serve metrics, health and run history over HTTP",
		Long: "Fire every flow of --flows that has a schedule:, until SIGTERM or SIGINT. Several instances may\n" +
			"run over one database: each fire is claimed there first and runs once. SIGHUP, or a changed flow\n" +
			"file, reloads the flows; a flow that no longer validates keeps its previous version.\n\n" +
			"On SIGTERM, no more fires start; runs still going may finish within the first half of --grace,\n" +
			"then they stop taking new units and their units in flight get most of the rest. What did not\n" +
			"finish is recorded interrupted (continue it with geoflow run FLOW --resume).\n\n" +
			"HTTP on --listen: the web UI at / (runs, units and dead letters on a map; draw a box to rerun an\n" +
			"area), its JSON API under /api/, /metrics, /healthz and /readyz. --listen beyond loopback needs\n" +
			"--token (or GEOFLOW_UI_TOKEN); see geoflow ui.\n\n" +
			"Exit codes: 0 after a clean shutdown; 1 error (no database, --flows unreadable, --listen taken).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), g, sf)
		},
	}
	f := cmd.Flags()
	f.StringVar(&sf.dir, "flows", "flows", "directory of flow files; those with a schedule: are fired")
	f.StringVar(&sf.listen, "listen", "127.0.0.1:8080", "address of the web UI and the HTTP endpoints; beyond loopback it needs --token")
	f.StringVar(&sf.token, "token", "", "token the UI and API require (16+ characters; default $GEOFLOW_UI_TOKEN); required when --listen is not loopback")
	f.DurationVar(&sf.grace, "grace", 30*time.Second, "on SIGTERM/SIGINT, how long runs still going may take to finish or stop")
	f.StringVar(&sf.instance, "instance", "", "name of this instance in the fires it claims (default hostname:pid)")
	f.BoolVar(&sf.cookieSecure, "cookie-secure", false, "send the sign-in cookie over HTTPS only: set it when a TLS proxy serves the UI")
	f.BoolVar(&sf.distributed, "distributed", false, "hand every run's units (scheduled, and started from the UI) to the pool of geoflow worker processes on the database (PostgreSQL only), as a flow's distributed: true does")
	return cmd
}

func runServe(ctx context.Context, g *globals, sf serveFlags) error {
	log, err := g.logger()
	if err != nil {
		return err
	}
	if sf.grace <= 0 {
		return errors.New("--grace must be above 0")
	}
	if sf.distributed {
		if _, err := queueLocation(g); err != nil {
			return err
		}
	}
	if st, err := os.Stat(sf.dir); err != nil || !st.IsDir() {
		return fmt.Errorf("--flows %q is not a directory", sf.dir)
	}
	token := uiToken(sf.token)
	if err := server.CheckListen(sf.listen, token); err != nil {
		return err
	}
	// Each scheduled run holds a connection for its flow's lock and one for its own, on top
	// of its workers': more than a single run needs.
	st, release, err := openServerStore(ctx, g)
	if err != nil {
		return err
	}
	defer st.Close()
	defer release()
	if _, err := st.Migrate(ctx); err != nil {
		return fmt.Errorf("migrating the database: %w", err)
	}
	ln, err := net.Listen("tcp", sf.listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics, err := schedule.NewMetrics(reg)
	if err != nil {
		ln.Close()
		return err
	}
	runOpts := engine.RunOptions{
		HTTP:   retry.New(&retry.Options{Logger: log, Registerer: reg, Shared: sharedPacing(st)}),
		Logger: log,
		// Half of --grace to finish normally (Drain), 40% for units in flight to
		// stop, the rest for the bookkeeping after.
		Grace:       sf.grace * 2 / 5,
		Distributed: sf.distributed,
	}
	sched, err := schedule.New(schedule.Options{
		Store:      st,
		Dir:        sf.dir,
		Flows:      g.flowOptions(registry()),
		Logger:     log,
		Metrics:    metrics,
		Instance:   sf.instance,
		RunOptions: runOpts,
		Drain:      sf.grace / 2,
	})
	if err != nil {
		ln.Close()
		return err
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var ready atomic.Bool
	ready.Store(true)
	catalog := &server.Catalog{Dir: sf.dir, Options: g.flowOptions(registry()), Live: sched}
	runOpts.Store = stores(st)
	launcher, err := server.NewLauncher(ctx, catalog, runOpts, g.replayOptions(runOpts))
	if err != nil {
		ln.Close()
		return err
	}
	// From the first signal on, while runs drain and the endpoints still answer: not
	// ready, and no new run or replay from the UI (503). stopped says when, for the
	// bound of the wait below.
	stopped := make(chan time.Time, 1)
	context.AfterFunc(ctx, func() {
		ready.Store(false)
		launcher.Close()
		stopped <- time.Now()
	})
	h, err := server.Handler(server.Options{Store: st, Flows: sched, Registry: reg, Ready: &ready, Logger: log,
		Catalog: catalog, Launcher: launcher, Token: token, StoreName: g.storeName(), CookieSecure: sf.cookieSecure})
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	httpDone := make(chan error, 1)
	go func() { httpDone <- srv.Serve(ln) }()
	log.Info("serving", "listen", ln.Addr().String(), "flows", sf.dir)

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				log.Info("SIGHUP: reloading flows")
				_ = sched.Reload(ctx)
			}
		}
	}()

	schedErr := make(chan error, 1)
	go func() { schedErr <- sched.Run(ctx) }()
	select {
	case err = <-schedErr:
	case herr := <-httpDone:
		err = fmt.Errorf("serving HTTP: %w", herr)
		stop(err)
		<-schedErr
	}
	// The scheduler may also have ended by itself, on an error: the UI's runs stop then too.
	stop(err)
	// Runs started from the UI stop as scheduled ones do, within --grace of the signal;
	// then HTTP stops, and the store closes.
	waitUI(ctx, log, launcher, (<-stopped).Add(sf.grace))
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	if err != nil {
		return err
	}
	if cause := context.Cause(ctx); cause != nil {
		log.Info("stopped", "cause", cause.Error())
	}
	return nil
}

package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/schedule"
	"github.com/geoflow/geoflow/server"
)

type uiFlags struct {
	dir      string
	listen   string
	token    string
	readOnly bool
	grace    time.Duration
	// cookieSecure: the UI is reached over HTTPS through a proxy (server.Options.CookieSecure).
	cookieSecure bool
}

func newUICmd(g *globals) *cobra.Command {
	var uf uiFlags
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve the web UI over a store, without the scheduler",
		Long: "Serve geoflow's web UI and its JSON API for the store --database names (PostgreSQL or a GeoPackage):\n" +
			"runs with their units on a map, coloured by state and live while a run goes; dead letters on the\n" +
			"same map, to replay or discard; each flow with its tasks drawn; draw a box on any map to rerun that\n" +
			"area. geoflow serve serves the same pages alongside its scheduler.\n\n" +
			"Safe by default: it listens on 127.0.0.1 and answers to loopback host names only. --listen beyond\n" +
			"loopback needs --token (or GEOFLOW_UI_TOKEN): requests then carry it (Authorization: Bearer TOKEN,\n" +
			"or the cookie of /login). Requests that change anything must come from the UI's own pages.\n\n" +
			"Exit codes: 0 after SIGINT/SIGTERM; 1 error (no store, --listen taken, no --token for a public --listen).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runUI(cmd.Context(), g, uf)
		},
	}
	f := cmd.Flags()
	f.StringVar(&uf.dir, "flows", "flows", "directory of flow files, to show and run them")
	f.StringVar(&uf.listen, "listen", "127.0.0.1:8080", "address to serve on; beyond loopback it needs --token")
	f.StringVar(&uf.token, "token", "", "token the UI and API require (16+ characters; default $GEOFLOW_UI_TOKEN); required when --listen is not loopback")
	f.BoolVar(&uf.readOnly, "read-only", false, "only look: start no runs, replays or discards")
	f.DurationVar(&uf.grace, "grace", 30*time.Second, "on SIGTERM/SIGINT, how long runs started from the UI may take to stop")
	f.BoolVar(&uf.cookieSecure, "cookie-secure", false, "send the sign-in cookie over HTTPS only: set it when a TLS proxy serves the UI")
	return cmd
}

// uiToken is --token, else $GEOFLOW_UI_TOKEN.
func uiToken(flag string) string { return cmp.Or(flag, os.Getenv("GEOFLOW_UI_TOKEN")) }

// storeName names the store for the UI's header and its start-up log: host:port/dbname
// or the GeoPackage's file, never a user, a password or another parameter (storeLabel).
func (g *globals) storeName() string {
	if loc := g.databaseURL(); loc != "" {
		return storeLabel(loc)
	}
	abs, _ := filepath.Abs(defaultGeoPackage)
	return abs
}

// replayOptions are the options of replays started by the UI of serve and ui.
func (g *globals) replayOptions(run engine.RunOptions) engine.ReplayOptions {
	return engine.ReplayOptions{Store: run.Store, HTTP: run.HTTP, Registry: registry(), Secrets: g.secrets, Logger: run.Logger, Grace: run.Grace}
}

// noSchedule is the scheduler of geoflow ui: none.
type noSchedule struct{}

func (noSchedule) Flows(int) []schedule.FlowInfo { return []schedule.FlowInfo{} }

func runUI(ctx context.Context, g *globals, uf uiFlags) error {
	log, err := g.logger()
	if err != nil {
		return err
	}
	token := uiToken(uf.token)
	if err := server.CheckListen(uf.listen, token); err != nil {
		return err
	}
	if uf.grace <= 0 {
		return errors.New("--grace must be above 0")
	}
	st, release, err := openServerStore(ctx, g)
	if err != nil {
		return err
	}
	defer st.Close()
	defer release()
	// Looking writes nothing: a store an older geoflow wrote is not migrated behind its
	// owner's back (the error says to run geoflow migrate up).
	if err := st.CheckMigrations(ctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", uf.listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	// The runs started here live in runCtx: cancelled on a signal and when serving fails.
	runCtx, stopRuns := context.WithCancel(ctx)
	defer stopRuns()
	reg := prometheus.NewRegistry()
	opts := server.Options{Store: st, Flows: noSchedule{}, Registry: reg, Logger: log, Token: token, StoreName: g.storeName(),
		ReadOnly: uf.readOnly, CookieSecure: uf.cookieSecure}
	var launcher *server.Launcher
	if fi, err := os.Stat(uf.dir); err == nil && fi.IsDir() {
		opts.Catalog = &server.Catalog{Dir: uf.dir, Options: g.flowOptions(registry())}
		if !uf.readOnly {
			// Units in flight get most of --grace; the rest is for recording the run
			// interrupted, so that the whole stop fits in --grace.
			run := engine.RunOptions{Store: stores(st), HTTP: retry.New(&retry.Options{Logger: log, Registerer: reg, Shared: sharedPacing(st)}),
				Logger: log, Grace: uf.grace * 4 / 5}
			if launcher, err = server.NewLauncher(runCtx, opts.Catalog, run, g.replayOptions(run)); err != nil {
				ln.Close()
				return err
			}
			opts.Launcher = launcher
		}
	} else {
		log.Warn("no flows directory: the UI shows the store's runs only", "flows", uf.dir)
	}
	h, err := server.Handler(opts)
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	log.Info("web UI", "url", "http://"+ln.Addr().String()+"/", "store", g.storeName(), "runs", launcher != nil)
	select {
	case err = <-done:
		err = fmt.Errorf("serving HTTP: %w", err)
	case <-ctx.Done():
	}
	// In this order: the runs are told to stop; new ones are refused (503) while the
	// pages still answer; the runs get --grace to be recorded; only then does HTTP stop
	// and the store close (deferred above).
	stopRuns()
	if launcher != nil {
		launcher.Close()
		waitUI(ctx, log, launcher, time.Now().Add(uf.grace))
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	return err
}

// waitUI waits until deadline for the runs and replays launcher started to end (a
// stopping process, whose store closes next); what is still going then is logged and
// left to the exit.
func waitUI(ctx context.Context, log *slog.Logger, launcher *server.Launcher, deadline time.Time) {
	waitCtx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	if err := launcher.Wait(waitCtx); err != nil {
		log.Warn("runs started from the UI did not stop within --grace; exiting without them (geoflow runs list shows what became of them)", "err", err)
	}
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

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
	// metricsPublic: /metrics answers without the token (server.Options.MetricsPublic).
	metricsPublic bool
	distributed   bool
	// basemap: an XYZ template drawn beneath the maps (server.Options.Basemap).
	basemap string
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
			"--token (or GEOFLOW_UI_TOKEN), which /metrics then asks for too unless --metrics-public; see\n" +
			"geoflow ui.\n\n" +
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
	f.StringVar(&sf.basemap, "basemap", "", basemapUsage)
	f.BoolVar(&sf.metricsPublic, "metrics-public", false, "serve /metrics without --token; by default a scraper sends it as Authorization: Bearer TOKEN (Prometheus: authorization: {credentials: TOKEN})")
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
	err = server.Run(ctx, &server.ServeProcess{Backend: st, Fires: st, Engine: stores(st), Dir: sf.dir, Flows: g.flowOptions(registry()),
		Listen: sf.listen, Token: token, StoreName: g.storeName(), CookieSecure: sf.cookieSecure, MetricsPublic: sf.metricsPublic, Basemap: sf.basemap,
		Grace: sf.grace, Instance: sf.instance, Distributed: sf.distributed, Pacing: sharedPacing(st), Logger: log})
	if err != nil {
		return err
	}
	if cause := context.Cause(ctx); cause != nil {
		log.Info("stopped", "cause", cause.Error())
	}
	return nil
}

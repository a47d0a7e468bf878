package cli

import (
	"cmp"
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

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
	// metricsPublic: /metrics answers without the token (server.Options.MetricsPublic).
	metricsPublic bool
	// basemap: an XYZ template drawn beneath the maps (server.Options.Basemap).
	basemap string
}

func newUICmd(g *globals) *cobra.Command {
	var uf uiFlags
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve the web UI over a store, without the scheduler",
		Long: "Serve geoflow's web UI and its JSON API for the store --database names (PostgreSQL or a GeoPackage):\n" +
			"runs with their units on a map, coloured by state and live while a run goes; dead letters on the\n" +
			"same map, to replay or discard; each flow with its tasks drawn; draw a box on any map to rerun that\n" +
			"area; every table geoflow wrote, its features on the map as vector tiles (click one for its\n" +
			"attributes and versions), to download as GeoJSON or a GeoPackage. geoflow serve serves the same\n" +
			"pages alongside its scheduler.\n\n" +
			"Safe by default: it listens on 127.0.0.1 and answers to loopback host names only. --listen beyond\n" +
			"loopback needs --token (or GEOFLOW_UI_TOKEN): requests then carry it (Authorization: Bearer TOKEN,\n" +
			"or the cookie of /login), /metrics too unless --metrics-public. Requests that change anything must\n" +
			"come from the UI's own pages. A client that fails to sign in 5 times within a minute is answered\n" +
			"429 until the minute has passed; each failure is logged. Request bodies over 1 MiB are refused (413).\n\n" +
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
	f.StringVar(&uf.basemap, "basemap", "", basemapUsage)
	f.BoolVar(&uf.metricsPublic, "metrics-public", false, "serve /metrics without --token; by default a scraper sends it as Authorization: Bearer TOKEN (Prometheus: authorization: {credentials: TOKEN})")
	return cmd
}

// basemapUsage is --basemap's help, in geoflow ui and geoflow serve.
const basemapUsage = "an XYZ tile URL template ({z}/{x}/{y}) drawn beneath the maps of flows that store no tiles of their own, e.g. https://tile.openstreetmap.org/{z}/{x}/{y}.png"

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
	return server.Run(ctx, &server.UIProcess{Backend: st, Engine: stores(st), Dir: uf.dir, Flows: g.flowOptions(registry()),
		Listen: uf.listen, Token: token, StoreName: g.storeName(), CookieSecure: uf.cookieSecure, MetricsPublic: uf.metricsPublic, ReadOnly: uf.readOnly, Basemap: uf.basemap,
		Grace: uf.grace, Pacing: sharedPacing(st), Logger: log})
}

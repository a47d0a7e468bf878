package cli

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/paulmach/orb"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/geoflow/geoflow/internal/devserver/stacserver"
	"github.com/geoflow/geoflow/internal/devserver/tileserver"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/devserver/wmsserver"
)

func newDevCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Local services for trying geoflow out: the sample WFS (and OGC API - Features) of make demo, an ArcGIS feature service, a tile server, a WMS and a STAC API",
	}
	var (
		listen              string
		opts                wfsserver.Options
		quota               int
		window              time.Duration
		headers             string
		retryAfter, bucket  bool
		f5xx, trunc, exc200 float64
		html200             float64
		failOneIn           int
		outageAfter         int
		outage              time.Duration
	)
	wfs := &cobra.Command{
		Use:   "wfs",
		Short: "Serve a sample WFS 2.0/1.1/1.0 over generated parcels until interrupted",
		Long: "Serve a real WFS (GetCapabilities, DescribeFeatureType, GetFeature in GML 3.2, 3.1.1, 2 and GeoJSON,\n" +
			"paging, BBOX, hits) over deterministically generated parcels, with switches for rate limiting and faults.\n" +
			"ogr2ogr reads it: ogrinfo WFS:http://127.0.0.1:8090/wfs\n\n" + devRevisionHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if quota > 0 {
				opts.Quota = &wfsserver.Quota{Limit: quota, Window: window, Headers: headers, RetryAfter: retryAfter, TokenBucket: bucket}
			}
			opts.Faults = wfsserver.Faults{Rate5xx: f5xx, RateTruncate: trunc, RateException200: exc200, RateHTML200: html200, Seed: opts.Seed}
			opts.Faults.FailForever = devFailures(failOneIn, outageAfter, outage)
			if err := checkDevRevision(opts.Revision, opts.Changes, opts.Features); err != nil {
				return err
			}
			return serveDevWFS(cmd.Context(), g, listen, opts)
		},
	}
	f := wfs.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:8090", "address to listen on (loopback only by default)")
	f.IntVar(&opts.Features, "features", 10000, "number of parcels, --added ones included")
	f.Int64Var(&opts.Seed, "seed", 1, "generation seed: equal seeds serve equal data")
	f.StringVar(&opts.Flavor, "flavor", "geoserver", "server quirks: geoserver, mapserver, deegree or qgis")
	f.IntVar(&opts.CountDefault, "count-default", 1000, "the server's maximum page size")
	f.BoolVar(&opts.ImplementsSorting, "sorting", true, "advertise and honour SORTBY")
	f.BoolVar(&opts.UnstableOrder, "unstable-order", false, "without SORTBY, return rows in a different order per request")
	f.BoolVar(&opts.NoGeoJSON, "no-geojson", false, "do not offer GeoJSON output")
	f.DurationVar(&opts.Latency, "latency", 0, "delay every request by this much")
	f.DurationVar(&opts.RowCost, "row-cost", 0, "modelled database time per row read, skipped STARTINDEX rows included (deep pages cost more)")
	f.DurationVar(&opts.EncodeCost, "encode-cost", 0, "modelled time per feature written as GeoJSON (GML costs twice as much)")
	f.IntVar(&quota, "quota", 0, "allow this many requests per --quota-window (0: no limit)")
	f.DurationVar(&window, "quota-window", time.Second, "quota window")
	f.BoolVar(&bucket, "token-bucket", false, "refill the quota continuously instead of per fixed window")
	f.StringVar(&headers, "quota-headers", "x-ratelimit", "rate-limit headers: x-ratelimit, ietf or none")
	f.BoolVar(&retryAfter, "retry-after", true, "send Retry-After with 429")
	f.Float64Var(&f5xx, "fault-5xx", 0, "share of GetFeature requests answered 500/502/503")
	f.Float64Var(&trunc, "fault-truncate", 0, "share of GetFeature bodies cut off mid-stream")
	f.Float64Var(&exc200, "fault-exception-200", 0, "share answered an exception report with HTTP 200")
	f.Float64Var(&html200, "fault-html-200", 0, "share answered a proxy HTML page with HTTP 200")
	f.IntVar(&failOneIn, "fail-one-in", 0, "answer 500 forever to one GetFeature URL in N (by a hash of the URL; counts spared); restart without it to heal")
	f.IntVar(&outageAfter, "outage-after", 0, "with --outage: GetFeature requests for features served before the outage begins")
	f.DurationVar(&outage, "outage", 0, "answer 500 to every GetFeature for features for this long (counts spared), after --outage-after of them; then recover")
	devRevisionFlags(f, &opts.Revision, &opts.Changes, &opts.Empty)
	cmd.AddCommand(wfs, newDevArcGISCmd(g), newDevTilesCmd(g), newDevWMSCmd(g), newDevSTACCmd(g))
	return cmd
}

// newDevTilesCmd serves the sample tile server flows/basemap.yaml runs against.
func newDevTilesCmd(g *globals) *cobra.Command {
	var (
		listen, format string
		maxZoom, size  int
		latency        time.Duration
	)
	cmd := &cobra.Command{
		Use:   "tiles",
		Short: "Serve sample XYZ map tiles at /{z}/{x}/{y}.png (for flows/basemap.yaml) until interrupted",
		Long: "Serve generated XYZ tiles with ETag/Last-Modified revalidation (a rerun gets 304s) and 404 outside\n" +
			"its coverage (Munich). Try: geoflow dev tiles & geoflow run flows/basemap.yaml --bbox 11.5,48.1,11.51,48.11",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			srv := tileserver.New(tileserver.Options{Coverage: munich, MaxZoom: maxZoom, Format: format, Size: size, Latency: latency})
			return serveDev(cmd.Context(), g, listen, []string{"/"}, srv, fmt.Sprintf("sample tiles: http://{addr}/{z}/{x}/{y}.%s (zoom 0-%d, Munich), and as a WMTS: %s", format, maxZoom, tileserver.WMTSCapabilitiesURL("http://{addr}")), func() string {
				st := srv.Stats()
				return fmt.Sprintf("served %d requests: %d tiles, %d not modified, %d not found", st.Requests, st.OK, st.NotModified, st.NotFound)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:8091", "address to listen on (loopback only by default)")
	f.IntVar(&maxZoom, "max-zoom", 18, "deepest zoom served")
	f.StringVar(&format, "format", "png", "png or jpeg")
	f.IntVar(&size, "size", 256, "tile side in pixels")
	f.DurationVar(&latency, "latency", 0, "delay every request by this much")
	return cmd
}

// newDevWMSCmd serves the sample WMS the ortho task of flows/imagery.yaml runs against.
func newDevWMSCmd(g *globals) *cobra.Command {
	var (
		listen  string
		geotiff bool
	)
	cmd := &cobra.Command{
		Use:   "wms",
		Short: "Serve a sample WMS 1.3.0/1.1.1 at /wms (for the ortho task of flows/imagery.yaml) until interrupted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			srv := wmsserver.New(wmsserver.Options{GeoTIFF: geotiff})
			return serveDev(cmd.Context(), g, listen, []string{"/wms"}, srv, "sample WMS: http://{addr}/wms (layer ortho)", func() string {
				st := srv.Stats()
				return fmt.Sprintf("served %d capabilities, %d maps, %d exceptions", st.Capabilities, len(st.GetMaps), st.Exceptions)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:8092", "address to listen on (loopback only by default)")
	f.BoolVar(&geotiff, "geotiff", true, "offer image/geotiff besides PNG and JPEG")
	return cmd
}

// newDevSTACCmd serves the sample STAC API the scenes task of flows/imagery.yaml runs
// against.
func newDevSTACCmd(g *globals) *cobra.Command {
	var (
		listen string
		items  int
	)
	cmd := &cobra.Command{
		Use:   "stac",
		Short: "Serve a sample STAC API (POST /search, paged; assets with checksums and ranges) for the scenes task of flows/imagery.yaml",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			srv := stacserver.New(stacserver.Options{Items: items})
			return serveDev(cmd.Context(), g, listen, []string{"/"}, srv, fmt.Sprintf("sample STAC API: http://{addr} (collection aerial, %d scenes)", items), func() string {
				st := srv.Stats()
				return fmt.Sprintf("served %d searches, %d asset requests, %d asset bytes", st.Searches, st.AssetRequests, st.AssetBytes)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:8093", "address to listen on (loopback only by default)")
	f.IntVar(&items, "items", 12, "number of scenes")
	return cmd
}

// munich is where the sample services have data, as the sample flows ask.
var munich = orb.Bound{Min: orb.Point{11.3, 47.9}, Max: orb.Point{11.8, 48.3}}

// serveDev serves h at each of paths on listen until ctx ends, printing banner (with
// {addr} for the address) first and the summary last.
func serveDev(ctx context.Context, g *globals, listen string, paths []string, h http.Handler, banner string, summary func() string) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", listen, err)
	}
	mux := http.NewServeMux()
	for _, p := range paths {
		mux.Handle(p, h)
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintln(g.stdout, strings.ReplaceAll(banner, "{addr}", ln.Addr().String()))
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Fprintln(g.stdout, summary())
	return nil
}

// devFailures is the sample WFS's FailForever hook: one URL in failOneIn failing forever
// (0: none), and an outage of the given length after outageAfter feature requests (0: none).
func devFailures(failOneIn, outageAfter int, outage time.Duration) func(*http.Request) bool {
	var hooks []func(*http.Request) bool
	if failOneIn > 0 {
		hooks = append(hooks, failOneURLIn(failOneIn))
	}
	if outage > 0 {
		hooks = append(hooks, wfsserver.Outage(outageAfter, outage, nil))
	}
	if len(hooks) == 0 {
		return nil
	}
	return func(r *http.Request) bool {
		for _, h := range hooks {
			if h(r) {
				return true
			}
		}
		return false
	}
}

// failOneURLIn picks one GetFeature URL in n, by a hash of its query, to fail forever;
// the same URL fails on every attempt, as a broken area of a real server does. Counts
// (RESULTTYPE=hits) are spared, so that the failures fall on the fetches of some tiles
// rather than, by chance, on the count of the whole area.
func failOneURLIn(n int) func(*http.Request) bool {
	return func(r *http.Request) bool {
		q := r.URL.Query()
		get := func(k string) string {
			for key, v := range q {
				if strings.EqualFold(key, k) && len(v) > 0 {
					return v[0]
				}
			}
			return ""
		}
		items := strings.HasSuffix(r.URL.Path, "/items") && get("limit") != "1" // OGC API - Features; limit=1 counts
		if !items && (!strings.EqualFold(get("REQUEST"), "GetFeature") || strings.EqualFold(get("RESULTTYPE"), "hits")) {
			return false
		}
		h := fnv.New32a()
		h.Write([]byte(r.URL.RawQuery))
		return h.Sum32()%uint32(n) == 0
	}
}

func serveDevWFS(ctx context.Context, g *globals, listen string, opts wfsserver.Options) error {
	srv := wfsserver.New(opts)
	banner := fmt.Sprintf("sample WFS: http://{addr}/wfs (%d parcels, type %s); OGC API - Features: http://{addr}/ogcapi (collection %s)",
		srv.Count(), srv.TypeName(), srv.TypeName()[strings.Index(srv.TypeName(), ":")+1:]) + devControlBanner
	return serveDev(ctx, g, listen, []string{"/wfs", "/ogcapi", "/ogcapi/", "/_dev/"}, withDevControl(srv, srv), banner, func() string {
		st := srv.Stats()
		return fmt.Sprintf("served %d requests (%d GetFeature, %d hits, %d answered 429, %d faults injected), %d features",
			st.Requests, st.GetFeature, st.Hits, st.TooManyRequests, st.Faults, st.FeaturesServed)
	})
}

// devRevisionHelp documents the revision flags and the control endpoints of geoflow dev wfs
// and geoflow dev arcgis.
const devRevisionHelp = "The data can change between two harvests, as an edited source does: revision 0 serves the parcels\n" +
	"but the last --added ones; revision 1 and later serve them all but --deleted ones, spread over the extent,\n" +
	"and --edited ones (also spread) with a new assessed_value and updated_at, half of them reshaped a little,\n" +
	"their ids kept; each later revision edits them again. --empty answers every query with no features.\n" +
	"Switch a running server without a restart:\n" +
	"  curl -X POST 'http://ADDR/_dev/revision?rev=1'   (also edited=, deleted=, added=; counts not given stay)\n" +
	"  curl -X POST 'http://ADDR/_dev/empty?on=1'       (on=0 switches it off)\n" +
	"  curl http://ADDR/_dev/state"

// devControlBanner is the banner's second line for the servers with control endpoints.
const devControlBanner = "\ndata control: POST http://{addr}/_dev/revision?rev=N, POST http://{addr}/_dev/empty?on=1, GET http://{addr}/_dev/state"

// devRevisionFlags declares --revision, --edited, --deleted, --added, --hidden and --empty.
func devRevisionFlags(f *pflag.FlagSet, rev *int, c *wfsserver.Changes, empty *bool) {
	f.IntVar(rev, "revision", 0, "data revision served first (0: without --added parcels; 1 and later: without --deleted ones, --edited ones changed)")
	f.IntVar(&c.Edited, "edited", 0, "parcels whose attributes (and for half of them geometry) change from revision 1 on, ids kept")
	f.IntVar(&c.Deleted, "deleted", 0, "parcels served at revision 0 only")
	f.IntVar(&c.Added, "added", 0, "parcels (the last of --features) served from revision 1 on only")
	f.IntVar(&c.Hidden, "hidden", 0, "parcels left out of every listing and count from revision 1 on, yet still answered by id (a listing filtered by an access rule or a view)")
	f.BoolVar(empty, "empty", false, "answer every query with no features and a count of 0 (POST /_dev/empty?on=0 heals it)")
}

// checkDevRevision refuses revision flags the parcels cannot hold.
func checkDevRevision(rev int, c wfsserver.Changes, features int) error {
	if rev < 0 {
		return fmt.Errorf("--revision must not be negative, not %d", rev)
	}
	if err := c.Validate(features); err != nil {
		return fmt.Errorf("--edited, --deleted, --added with --features %d: %w", features, err)
	}
	return nil
}

// withDevControl serves the control endpoints of sw under /_dev/ and h elsewhere.
func withDevControl(sw wfsserver.Switcher, h http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/_dev/", wfsserver.ControlHandler(sw))
	mux.Handle("/", h)
	return mux
}

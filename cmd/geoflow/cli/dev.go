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

	"github.com/spf13/cobra"

	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
)

func newDevCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Local services for trying geoflow out (the sample WFS of make demo)",
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
	)
	wfs := &cobra.Command{
		Use:   "wfs",
		Short: "Serve a sample WFS 2.0/1.1/1.0 over generated parcels until interrupted",
		Long: "Serve a real WFS (GetCapabilities, DescribeFeatureType, GetFeature in GML 3.2, 3.1.1, 2 and GeoJSON,\n" +
			"paging, BBOX, hits) over deterministically generated parcels, with switches for rate limiting and faults.\n" +
			"ogr2ogr reads it: ogrinfo WFS:http://127.0.0.1:8090/wfs",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if quota > 0 {
				opts.Quota = &wfsserver.Quota{Limit: quota, Window: window, Headers: headers, RetryAfter: retryAfter, TokenBucket: bucket}
			}
			opts.Faults = wfsserver.Faults{Rate5xx: f5xx, RateTruncate: trunc, RateException200: exc200, RateHTML200: html200, Seed: opts.Seed}
			if failOneIn > 0 {
				opts.Faults.FailForever = failOneURLIn(failOneIn)
			}
			return serveDevWFS(cmd.Context(), g, listen, opts)
		},
	}
	f := wfs.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:8090", "address to listen on (loopback only by default)")
	f.IntVar(&opts.Features, "features", 10000, "number of parcels")
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
	cmd.AddCommand(wfs)
	return cmd
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
		if !strings.EqualFold(get("REQUEST"), "GetFeature") || strings.EqualFold(get("RESULTTYPE"), "hits") {
			return false
		}
		h := fnv.New32a()
		h.Write([]byte(r.URL.RawQuery))
		return h.Sum32()%uint32(n) == 0
	}
}

func serveDevWFS(ctx context.Context, g *globals, listen string, opts wfsserver.Options) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", listen, err)
	}
	srv := wfsserver.New(opts)
	mux := http.NewServeMux()
	mux.Handle("/wfs", srv)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(g.stdout, "sample WFS: http://%s/wfs (%d parcels, type %s)\n", ln.Addr(), srv.Len(), srv.TypeName())
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	st := srv.Stats()
	fmt.Fprintf(g.stdout, "served %d requests (%d GetFeature, %d hits, %d answered 429, %d faults injected), %d features\n",
		st.Requests, st.GetFeature, st.Hits, st.TooManyRequests, st.Faults, st.FeaturesServed)
	return nil
}

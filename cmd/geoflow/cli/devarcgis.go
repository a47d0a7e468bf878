package cli

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/geoflow/geoflow/internal/devserver/arcgisserver"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
)

// newDevArcGISCmd serves the sample ArcGIS feature service layer.
func newDevArcGISCmd(g *globals) *cobra.Command {
	var (
		listen     string
		opts       arcgisserver.Options
		failOneIn  int
		quota      int
		window     time.Duration
		headers    string
		retryAfter bool
		bucket     bool
	)
	cmd := &cobra.Command{
		Use:   "arcgis",
		Short: "Serve a sample ArcGIS REST feature service layer over the sample parcels until interrupted",
		Long: "Serve .../FeatureServer/0 (the layer document) and .../FeatureServer/0/query (where=1=1, objectIds,\n" +
			"an envelope, returnIdsOnly, returnCountOnly, resultOffset, f=json/geojson) over the parcels of geoflow dev wfs,\n" +
			"answering errors with HTTP 200 and {\"error\":...} as ArcGIS does, with switches for caps and faults.\n\n" +
			devRevisionHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if quota > 0 {
				opts.Quota = &wfsserver.Quota{Limit: quota, Window: window, Headers: headers, RetryAfter: retryAfter, TokenBucket: bucket}
			}
			if failOneIn > 0 {
				opts.Faults.FailIDs = func(id int) bool {
					h := fnv.New32a()
					h.Write([]byte(strconv.Itoa(id)))
					return h.Sum32()%uint32(failOneIn*1000) == 0
				}
			}
			if err := checkDevRevision(opts.Revision, opts.Changes, opts.Features); err != nil {
				return err
			}
			srv := arcgisserver.New(opts)
			banner := fmt.Sprintf("sample ArcGIS layer: http://{addr}/arcgis/rest/services/Parcels/FeatureServer/0 (%d parcels, maxRecordCount %d)", srv.Count(), max(opts.MaxRecordCount, 1000)) + devControlBanner
			return serveDev(cmd.Context(), g, listen, []string{"/arcgis/", "/_dev/"}, withDevControl(srv, srv), banner, func() string {
				st := srv.Stats()
				return fmt.Sprintf("served %d requests (%d id lists, %d counts, %d feature queries, %d answered 429, %d faults injected), %d features",
					st.Requests, st.IDQueries, st.CountQueries, st.FeatureQueries, st.TooManyRequests, st.Faults, st.FeaturesServed)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:8094", "address to listen on (loopback only by default)")
	f.IntVar(&opts.Features, "features", 10000, "number of parcels, --added ones included")
	f.Int64Var(&opts.Seed, "seed", 1, "generation seed: equal seeds serve equal data")
	f.IntVar(&opts.MaxRecordCount, "max-record-count", 1000, "features per query at most")
	f.IntVar(&opts.MaxIDs, "max-ids", 0, "cap returnIdsOnly lists at this many (0: no cap, as Esri documents)")
	f.StringVar(&opts.Token, "token", "", "require this token (X-Esri-Authorization: Bearer, or the token parameter)")
	f.BoolVar(&opts.NoGeoJSON, "no-geojson", false, "refuse f=geojson")
	f.Float64Var(&opts.Faults.Rate5xx, "fault-5xx", 0, "share of queries answered 503 with an HTML page")
	f.Float64Var(&opts.Faults.RateError200, "fault-error-200", 0, "share of queries answered HTTP 200 {\"error\":{\"code\":500}}")
	f.Float64Var(&opts.Faults.RateTruncate, "fault-truncate", 0, "share of query bodies cut off mid-stream")
	f.IntVar(&failOneIn, "fail-one-in", 0, "fail forever every query holding one of about one object id in N*1000 (restart without it to heal)")
	f.IntVar(&quota, "quota", 0, "allow this many requests per --quota-window (0: no limit)")
	f.DurationVar(&window, "quota-window", time.Second, "quota window")
	f.BoolVar(&bucket, "token-bucket", false, "refill the quota continuously instead of per fixed window")
	f.StringVar(&headers, "quota-headers", "x-ratelimit", "rate-limit headers: x-ratelimit, ietf or none")
	f.BoolVar(&retryAfter, "retry-after", true, "send Retry-After with 429")
	devRevisionFlags(f, &opts.Revision, &opts.Changes, &opts.Empty)
	return cmd
}

package wfs_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
)

// TestMiscountingServers: a server whose count is higher than what it returns (count =
// true + 1), or whose pages hold fewer features than asked, made the planner split and
// shrink without end (15,993 units after 90 s, nothing stored, still growing). Now the
// harvest ends, every feature stored once, in a bounded number of units, and the
// discrepancy is reported instead of chased.
func TestMiscountingServers(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts wfsserver.Options
		warn string
	}{
		{name: "count one too high", opts: wfsserver.Options{Features: 2000, CountDefault: 300, CountExtra: 1},
			warn: "the server counts more features than it returns"},
		{name: "count one too high, sorted", opts: wfsserver.Options{Features: 2000, CountDefault: 300, CountExtra: 1, ImplementsSorting: true},
			warn: "the server counts more features than it returns"},
		{name: "pages capped below the advertised size", opts: wfsserver.Options{Features: 2000, CountDefault: 300, PageCap: 120},
			warn: "server returns fewer features per page than advertised"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.opts)
			src := fmt.Sprintf("name: test\ndefaults:\n  retry: {base_delay: 1ms, max_delay: 20ms}\n  rate_limit: {requests_per_second: 1000, burst: 100, concurrency: 4}\n"+
				"tasks:\n  parcels:\n    type: wfs\n    url: %s/wfs\n    typename: %s\n    bbox: [11.45, 48.05, 11.55, 48.15]\n    target: {table: public.parcels}\n", h.srv.URL, h.fx.TypeName())
			f, err := flows.Parse("test.yaml", []byte(src), flows.Options{Registry: registry()})
			if err != nil {
				t.Fatal(err)
			}
			log := slog.New(slog.NewTextHandler(h.logs, nil))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			res, err := flows.Run(ctx, f, flows.RunOptions{Store: h.db, Logger: log, HTTP: retry.New(&retry.Options{Logger: log, Seed: 1}), Grace: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status == store.Interrupted {
				t.Fatalf("the harvest did not end in 60 s: %d units\n%s", res.Summary.UnitsTotal, tail(h.logs.String()))
			}
			if res.Status != store.Done || strings.Contains(h.logs.String(), "INCOMPLETE") {
				t.Errorf("run %s; want done, and no INCOMPLETE from a count that ran high\n%s", res.Status, tail(h.logs.String()))
			}
			h.checkComplete("public.parcels", extent)
			if n := res.Summary.UnitsTotal; n > 400 {
				t.Errorf("%d units for 2,000 features", n)
			}
			if n := testdb.Int64(t, h.dbURL, "SELECT count(*) FROM geoflow_dlq"); n != 0 {
				t.Errorf("%d dead letters", n)
			}
			if !strings.Contains(h.logs.String(), tt.warn) {
				t.Errorf("the discrepancy is not reported (%q)\n%s", tt.warn, tail(h.logs.String()))
			}
			t.Logf("%s: %d units, %d requests", res.Status, res.Summary.UnitsTotal, h.fx.Stats().GetFeature+h.fx.Stats().Hits)
		})
	}
}

// TestFeatureBeyondLimits shows a feature beyond the task's limits failing its unit as a
// permanent too_large dead letter, asked for once (a retry gets the same feature), in
// GML and in GeoJSON.
func TestFeatureBeyondLimits(t *testing.T) {
	for _, format := range []string{"gml", "geojson"} {
		t.Run(format, func(t *testing.T) {
			h := newHarness(t, wfsserver.Options{Features: 50})
			res := h.run(`typename: gf:parcels
bbox: [11.45, 48.05, 11.55, 48.15]
output_format: `+format+`
limits: {max_vertices: 3, max_string_bytes: 1MiB}
target: {table: limited}`, flows.RunOptions{})
			dead := res.DeadLetters()
			if dead == 0 || res.DeadByClass[dlq.ClassTooLarge] != dead {
				t.Fatalf("run %s, %d dead %v; want every unit dead as too_large\n%s", res.Status, dead, res.DeadByClass, tail(h.logs.String()))
			}
			if got := h.fx.Stats().GetFeature; got != dead {
				t.Errorf("%d GetFeature requests for %d dead units: too_large must not be retried", got, dead)
			}
			if !strings.Contains(h.logs.String(), "limits.max_vertices") {
				t.Errorf("the log does not say which limit to raise:\n%s", tail(h.logs.String()))
			}
		})
	}
}

package wfs_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoflow/geoflow/internal/testflow"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
)

// TestDatabaseFaultsAreNotTheHosts kills every connection geoflow holds, twice, in the
// middle of a harvest (what a PostgreSQL restart does to a client): the run completes
// with every feature once and no dead letter, the units waiting for the database rather
// than failing, and the WFS host, which never failed, is not charged: no retry against
// it, its breaker never opens.
func TestDatabaseFaultsAreNotTheHosts(t *testing.T) {
	h := newHarness(t, wfsserver.Options{Features: 6000, Extent: extent, CountDefault: 200, Latency: 5 * time.Millisecond})
	reg := prometheus.NewRegistry()
	httpLog := slog.New(slog.NewTextHandler(h.logs, nil))
	handler := retry.New(&retry.Options{Logger: httpLog, Seed: 1, Registerer: reg})

	var killed atomic.Int64
	stop := make(chan struct{})
	go func() {
		// Wait until units are being committed, then cut every connection of geoflow's.
		for testdb.Int64(t, h.dbURL, "SELECT count(*) FROM pg_tables WHERE tablename = 'fault_parcels'") == 0 ||
			testdb.Int64(t, h.dbURL, "SELECT count(*) FROM geoflow_units WHERE state = 'done'") < 5 {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		for range 2 {
			killed.Add(testdb.Int64(t, h.dbURL, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
				WHERE application_name = 'geoflow' AND datname = current_database() AND pid <> pg_backend_pid()`))
			time.Sleep(300 * time.Millisecond)
		}
	}()
	res := h.run(`
typename: gf:parcels
target: {table: fault_parcels}
`, engine.RunOptions{HTTP: handler})
	close(stop)
	if killed.Load() == 0 {
		t.Fatal("no connection was terminated: the test did not test anything")
	}
	if res.Status != store.Done || res.DeadLetters() != 0 {
		t.Fatalf("run %s with %d dead letters after %d connections were terminated\n%s", res.Status, res.DeadLetters(), killed.Load(), tail(h.logs.String()))
	}
	h.checkComplete("fault_parcels", extent)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "geoflow_http_retries_total":
				t.Errorf("the host was retried %v times for the database's faults (%v)", m.GetCounter().GetValue(), m.GetLabel())
			case "geoflow_http_breaker_opened_total":
				if v := m.GetCounter().GetValue(); v != 0 {
					t.Errorf("the host's breaker opened %v times", v)
				}
			}
		}
	}
	// Logged once per change of state, each outage with its end, not once per fault: the
	// pool's other terminated connections may fail a write right after one went through,
	// which is another outage, but never more of them than connections were terminated.
	logs := h.logs.String()
	downs, ups := strings.Count(logs, "units wait for it with a growing backoff"), strings.Count(logs, "the store answers again")
	if downs == 0 || downs != ups || int64(downs) > killed.Load() {
		t.Errorf("%d outages logged, %d ends, for %d connections terminated: want one log per change of state, each outage with its end\n%s",
			downs, ups, killed.Load(), tail(logs))
	}
	t.Logf("%d connections terminated; run %s, %d units", killed.Load(), res.Status, res.Summary.UnitsTotal)
}

// TestManyTasksSlowServerDefaultPool runs 4 WFS tasks with 8 units in flight each (32
// at once) against a server that takes 150 ms to answer, on the store's default pool of
// 16 connections: no connection waits on the network (a unit's transaction opens once its
// response is in), so the run completes whatever the pool size.
func TestManyTasksSlowServerDefaultPool(t *testing.T) {
	h := newHarness(t, wfsserver.Options{Features: 3000, Extent: extent, CountDefault: 50, Latency: 150 * time.Millisecond})
	var b strings.Builder
	for i := range 4 {
		fmt.Fprintf(&b, `
  t%d:
    type: wfs
    url: %s/wfs
    typename: gf:parcels
    rate_limit: {concurrency: 8}
    target: {table: pool_%d}
`, i, h.srv.URL, i)
	}
	src := `
name: pool
max_parallel_tasks: 4
defaults:
  retry: {base_delay: 1ms, max_delay: 20ms}
  rate_limit: {concurrency: 32}
tasks:` + b.String()
	f, err := flows.Parse("pool.yaml", []byte(src), flows.Options{Registry: registry()})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(h.logs, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := engine.Run(ctx, f, engine.RunOptions{Store: testflow.Stores(h.db), Logger: log, HTTP: retry.New(&retry.Options{Logger: log, Seed: 1})})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != store.Done || res.DeadLetters() != 0 {
		t.Fatalf("run %s, %d dead\n%s", res.Status, res.DeadLetters(), tail(h.logs.String()))
	}
	for i := range 4 {
		h.checkComplete(fmt.Sprintf("pool_%d", i), extent)
	}
	t.Logf("%d units in %s", res.Summary.UnitsTotal, res.Elapsed.Round(time.Millisecond))
}

// TestNoApplicableCodeIsRetried: MapServer answers HTTP 400 with an exception report of
// code NoApplicableCode while its own database restarts. That is worth asking again; an
// InvalidParameterValue is not.
func TestNoApplicableCodeIsRetried(t *testing.T) {
	h := newHarness(t, wfsserver.Options{Features: 500, Extent: extent, CountDefault: 1000})
	var left atomic.Int64
	left.Store(3)
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(strings.ToLower(r.URL.RawQuery), "getfeature") && left.Add(-1) >= 0 {
			w.Header().Set("Content-Type", "text/xml")
			w.WriteHeader(400)
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?>
<ows:ExceptionReport xmlns:ows="http://www.opengis.net/ows/1.1" version="2.0.0" xml:lang="en-US">
  <ows:Exception exceptionCode="NoApplicableCode" locator="mapserv">
    <ows:ExceptionText>msPostGISLayerOpen(): Query error. Database connection failed.</ows:ExceptionText>
  </ows:Exception>
</ows:ExceptionReport>`)
			return
		}
		h.fx.ServeHTTP(w, r)
	}))
	t.Cleanup(flaky.Close)
	h.srv = flaky
	res := h.run(`
typename: gf:parcels
target: {table: nac_parcels}
`, engine.RunOptions{})
	if res.Status != store.Done || res.DeadLetters() != 0 {
		t.Fatalf("run %s, %d dead\n%s", res.Status, res.DeadLetters(), tail(h.logs.String()))
	}
	h.checkComplete("nac_parcels", extent)
}

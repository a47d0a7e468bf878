package engine

import (
	"context"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/wfs"
)

// quotaServer is the sample WFS behind a quota of 10 requests per one-second window
// that it does not advertise (so that even one process meets it), answering the requests
// over it 429 with Retry-After; it counts what it was sent.
func quotaServer(t *testing.T) (*wfsserver.Server, string) {
	t.Helper()
	fx := wfsserver.New(wfsserver.Options{Features: 2000, CountDefault: 100, ImplementsSorting: true, Seed: 1,
		Quota: &wfsserver.Quota{Limit: 10, Window: time.Second, Headers: "none", RetryAfter: true}})
	srv := httptest.NewServer(fx)
	t.Cleanup(srv.Close)
	return fx, srv.URL
}

func quotaFlow(url string) string {
	return `name: quota
defaults:
  retry: {max_attempts: 10, base_delay: 200ms}
tasks:
  parcels:
    type: wfs
    url: ` + url + `/wfs
    typename: gf:parcels
    bbox: [11.45, 48.05, 11.55, 48.15]
    target: {table: parcels}
`
}

// checkServed fails t unless hosts are the server's one host with the requests and the
// 429s it counted, exactly; and the 429s must be there for the check to mean something.
func checkServed(t *testing.T, hosts []store.HostCount, url string, served wfsserver.Stats) {
	t.Helper()
	if served.TooManyRequests == 0 {
		t.Errorf("the server answered no 429 of %d requests: the quota was never met", served.Requests)
	}
	if len(hosts) != 1 {
		t.Fatalf("hosts %+v, want the server's alone", hosts)
	}
	h := hosts[0]
	t.Logf("the server counted %d requests, %d answered 429; the run %d and %d, %d retries, %d ms waited",
		served.Requests, served.TooManyRequests, h.Requests, h.RateLimited, h.Retries, h.WaitedMS)
	if h.Host != url { // httptest's URL has its port: it is the host's key
		t.Errorf("host %q, want %s", h.Host, url)
	}
	if h.Requests != served.Requests || h.RateLimited != served.TooManyRequests {
		t.Errorf("the run counted %d requests and %d answered 429; the server counted %d and %d",
			h.Requests, h.RateLimited, served.Requests, served.TooManyRequests)
	}
	if h.Retries < h.RateLimited || h.WaitedMS < 1000 {
		t.Errorf("%d retries, %d ms waited: want a retry for each 429, and the waits Retry-After asked", h.Retries, h.WaitedMS)
	}
}

// TestDistributedRunHosts: a distributed run against a quota-limited host, on three
// workers each with a rate-limit handler of its own, as processes have: the run's figures,
// summed from its units and its task's own requests, are the requests and the 429s the
// server counted, exactly; the split by process names each worker and the process that
// planned the run; and the run read back later says the same.
func TestDistributedRunHosts(t *testing.T) {
	fx, url := quotaServer(t)
	reg := &tasks.Registry{}
	reg.Register(wfs.Kind())
	f := writeFlow(t, reg, quotaFlow(url))
	db := testdb.URL(t)
	st := openStore(t, db)
	_, stop := poolOf(t, db, 3, func(id string) *UnitWorker {
		return &UnitWorker{ID: id, Registry: reg, HTTP: retry.New(nil)}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Run(ctx, f, RunOptions{Store: storesOf(st), HTTP: retry.New(nil), Distributed: true, Process: "starter"})
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if res.Status != store.Done {
		t.Fatalf("run %s, want done", res.Status)
	}
	checkServed(t, res.Summary.Hosts.Hosts, url, fx.Stats())

	byName := map[string]store.WorkerHosts{}
	var units, requests int64
	for _, w := range res.Summary.Hosts.Workers {
		byName[w.Worker] = w
		units += w.Units
		for _, h := range w.Hosts {
			requests += h.Requests
		}
	}
	if len(byName) != 4 || byName["starter"].Units != 0 || len(byName["starter"].Hosts) != 1 {
		t.Errorf("processes %+v; want starter (its planning's requests, no unit) and w1, w2, w3", res.Summary.Hosts.Workers)
	}
	if units != res.Summary.UnitsTotal || requests != res.Summary.Hosts.Hosts[0].Requests {
		t.Errorf("the processes executed %d units and sent %d requests; the run had %d units and %d requests",
			units, requests, res.Summary.UnitsTotal, res.Summary.Hosts.Hosts[0].Requests)
	}
	got, err := st.GetRun(ctx, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.RunHosts, res.Summary.Hosts) {
		t.Errorf("GetRun's hosts %+v, the run's summary %+v", got.RunHosts, res.Summary.Hosts)
	}
}

// TestLocalRunHosts: a local run (into a GeoPackage) records the same figures, read the
// same way: the requests and 429s the server counted, all of one process.
func TestLocalRunHosts(t *testing.T) {
	fx, url := quotaServer(t)
	reg := &tasks.Registry{}
	reg.Register(wfs.Kind())
	f := writeFlow(t, reg, quotaFlow(url))
	st := openStore(t, t.TempDir()+"/quota.gpkg")
	res, err := Run(context.Background(), f, RunOptions{Store: storesOf(st), HTTP: retry.New(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != store.Done {
		t.Fatalf("run %s, want done", res.Status)
	}
	checkServed(t, res.Summary.Hosts.Hosts, url, fx.Stats())
	if ws := res.Summary.Hosts.Workers; len(ws) != 1 || ws[0].Worker != res.Process || ws[0].Units != res.Summary.UnitsTotal {
		t.Errorf("processes %+v; want this one (%s) alone, with the run's %d units", ws, res.Process, res.Summary.UnitsTotal)
	}
}

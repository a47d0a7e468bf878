package server_test

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoflow/geoflow/internal/testflow"

	"github.com/paulmach/orb"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/server"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/postgis"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/tiles"
	"github.com/geoflow/geoflow/tasks/wfs"
)

// harvestArea is the sample WFS's extent, which the test flow harvests.
var harvestArea = orb.Bound{Min: orb.Point{11.45, 48.05}, Max: orb.Point{11.55, 48.15}}

// ui is a geoflow UI over a real PostGIS, with a flows directory holding one flow,
// "parcels", that harvests a sample WFS into public.parcels.
type ui struct {
	t        *testing.T
	db       *postgis.Store
	dbURL    string
	srv      *httptest.Server
	fx       *wfsserver.Server
	launcher *server.Launcher
	// stopRuns cancels the launcher's context, as a signal does to geoflow ui's.
	stopRuns context.CancelFunc
	healed   atomic.Bool
	// slow delays every WFS request by that many milliseconds, from when it is set;
	// inflight counts the WFS requests being answered.
	slow     atomic.Int64
	inflight atomic.Int64
	// dir is the flows directory; secrets the set its flows' ${VAR} values go to.
	dir     string
	secrets *redact.Set
	// logs holds what the server logged (WARN and up), one record a line.
	logs lockedLog
}

// lockedLog keeps the lines a logger writes, for the test to read while the server
// writes more.
type lockedLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, strings.TrimSpace(string(p)))
	return len(p), nil
}

// matching is the lines logged so far that hold substr.
func (l *lockedLog) matching(substr string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return out
}

type uiOptions struct {
	token string
	// failAt makes the WFS fail for good every tile request (below the whole area)
	// holding one of these points, until healed: those units die.
	failAt []orb.Point
	// latency slows every WFS request, so that a run lasts long enough to be watched.
	latency time.Duration
	// tilesDir, when set, adds a tiles task "basemap" storing its tiles there.
	tilesDir string
	// readOnly serves as geoflow ui --read-only does: no launcher, and ReadOnly.
	readOnly bool
	// scheduled is what the scheduler lists (/api/flows); none by default.
	scheduled fakeFlows
	// session, cookieSecure, metricsPublic and now are server.Options.Session,
	// CookieSecure, MetricsPublic and Now.
	session       time.Duration
	cookieSecure  bool
	metricsPublic bool
	now           func() time.Time
	// target is the parcels task's target, as YAML; defaults to {table: public.parcels}.
	// changes is the WFS's change set between its revisions 0 and 1 (fx.SetRevision).
	target  string
	changes wfsserver.Changes
}

func newUI(t *testing.T, o uiOptions) *ui {
	t.Helper()
	ctx := context.Background()
	u := &ui{t: t, dbURL: testdb.URL(t)}
	db, err := postgis.Open(ctx, u.dbURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	u.db = db

	u.fx = wfsserver.New(wfsserver.Options{Features: 1500, CountDefault: 400, ImplementsSorting: true, Latency: o.latency, Changes: o.changes,
		Faults: wfsserver.Faults{FailForever: func(r *http.Request) bool {
			if u.healed.Load() || len(o.failAt) == 0 {
				return false
			}
			b, ok := wfsserver.RequestBBox(r)
			if !ok || b.Max[0]-b.Min[0] > 0.06 {
				return false
			}
			for _, p := range o.failAt {
				if b.Contains(p) {
					return true
				}
			}
			return false
		}}})
	wfsSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.inflight.Add(1)
		defer u.inflight.Add(-1)
		time.Sleep(time.Duration(u.slow.Load()) * time.Millisecond)
		u.fx.ServeHTTP(w, r)
	}))
	t.Cleanup(wfsSrv.Close)

	dir := t.TempDir()
	flow := `name: parcels
max_parallel_tasks: 2
defaults:
  retry: {max_attempts: 2, base_delay: 10ms, max_delay: 50ms}
  rate_limit: {concurrency: 4}
tasks:
  parcels:
    type: wfs
    url: ` + wfsSrv.URL + `/wfs
    typename: gf:parcels
    bbox: [11.45, 48.05, 11.55, 48.15]
    target: ` + cmp.Or(o.target, "{table: public.parcels}") + `
`
	if o.tilesDir != "" {
		flow += `  basemap:
    type: tiles
    url: http://127.0.0.1:1/{z}/{x}/{y}.png
    bbox: [11.45, 48.05, 11.55, 48.15]
    zoom: [3, 12]
    target: {dir: ` + o.tilesDir + `, table: public.basemap}
`
	}
	if err := os.WriteFile(filepath.Join(dir, "parcels.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := &tasks.Registry{}
	reg.Register(wfs.Kind())
	reg.Register(tiles.Kind())
	log := slog.New(slog.NewTextHandler(io.MultiWriter(testWriter{t}, &u.logs), &slog.HandlerOptions{Level: slog.LevelWarn}))
	u.dir, u.secrets = dir, &redact.Set{}
	catalog := &server.Catalog{Dir: dir, Options: flows.Options{Registry: reg, Secrets: u.secrets}}
	runCtx, cancel := context.WithCancel(context.Background())
	run := engine.RunOptions{Store: testflow.Stores(db), HTTP: retry.New(&retry.Options{Logger: log}), Logger: log, Grace: 5 * time.Second}
	u.launcher, err = server.NewLauncher(runCtx, catalog, run, engine.ReplayOptions{Store: testflow.Stores(db), HTTP: run.HTTP, Registry: reg, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	u.stopRuns = cancel
	t.Cleanup(func() {
		cancel()
		u.launcher.Close()
		if err := u.launcher.Wait(context.Background()); err != nil {
			t.Error(err)
		}
	})
	opts := server.Options{Store: db, Flows: append(fakeFlows{}, o.scheduled...), Registry: prometheus.NewRegistry(), Logger: log,
		Catalog: catalog, Launcher: u.launcher, Token: o.token, StoreName: "test PostGIS", Session: o.session, CookieSecure: o.cookieSecure,
		MetricsPublic: o.metricsPublic, Now: o.now}
	if o.readOnly {
		opts.Launcher, opts.ReadOnly = nil, true
	}
	h, err := server.Handler(opts)
	if err != nil {
		t.Fatal(err)
	}
	u.srv = httptest.NewServer(h)
	t.Cleanup(u.srv.Close)
	return u
}

// testWriter sends the server's log to the test's.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// waitRun waits for run id to end and returns it.
func (u *ui) waitRun(id int64) store.RunRecord {
	u.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r, err := u.db.GetRun(context.Background(), id)
		if err != nil {
			u.t.Fatal(err)
		}
		if r.Status != store.Running {
			return r
		}
		if time.Now().After(deadline) {
			u.t.Fatalf("run %d still running after 2 minutes", id)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// count runs a count(*) query against the test database.
func (u *ui) count(query string, args ...any) int64 {
	u.t.Helper()
	return testdb.Count(u.t, u.dbURL, query, args...)
}

// storedIn counts the features of public.parcels whose geometry intersects b.
func (u *ui) storedIn(b orb.Bound) int64 {
	return u.count(`SELECT count(*) FROM public.parcels WHERE ST_Intersects(geom, ST_MakeEnvelope($1, $2, $3, $4, 4326))`,
		b.Min[0], b.Min[1], b.Max[0], b.Max[1])
}

func flowsScope() flows.Scope { return flows.Scope{} }

func flowsArea(s string) (orb.Bound, error) {
	b, err := flows.ParseArea(s, "")
	if err != nil || b == nil {
		return orb.Bound{}, err
	}
	return *b, nil
}

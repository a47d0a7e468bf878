package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/schedule"
	"github.com/geoflow/geoflow/server"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/postgis"
)

func TestMain(m *testing.M) { testdb.Main(m) }

type fakeFlows []schedule.FlowInfo

func (f fakeFlows) Flows(n int) []schedule.FlowInfo { return f }

func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func TestEndpoints(t *testing.T) {
	ctx := context.Background()
	db, err := postgis.Open(ctx, testdb.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	reg := prometheus.NewRegistry()
	metrics, err := schedule.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	retry.New(&retry.Options{Registerer: reg})
	var ready atomic.Bool
	ready.Store(true)
	next := time.Date(2025, 6, 1, 2, 0, 0, 0, time.UTC)
	h, err := server.Handler(server.Options{Store: db, Registry: reg, Ready: &ready,
		Flows: fakeFlows{{Name: "parcels", Schedule: "0 2 * * *", Timezone: "UTC", NextFires: []time.Time{next}}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	// Before migrations, the database answers but is not ready for this binary.
	if code, body := get(t, srv, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "migrate up") {
		t.Errorf("/readyz before migrating: %d %s", code, body)
	}
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 6, 1, 2, 0, 0, 0, time.UTC)
	run, err := db.StartRun(ctx, store.RunStart{Flow: "parcels", Trigger: "schedule", ScheduledFor: &at})
	if err != nil {
		t.Fatal(err)
	}
	run.Close()
	sum, err := db.FinishRun(ctx, run.ID, store.Done, "")
	if err != nil {
		t.Fatal(err)
	}
	metrics.ObserveRun("parcels", &engine.Result{RunID: run.ID, Status: store.Done, Summary: sum, Elapsed: time.Second})
	if _, err := db.ClaimFire(ctx, "parcels", at, "a", false); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		path     string
		wantCode int
		want     []string
	}{
		{name: "healthz", path: "/healthz", wantCode: 200, want: []string{`"ok"`}},
		{name: "readyz", path: "/readyz", wantCode: 200, want: []string{`"ready"`}},
		{name: "flows", path: "/api/flows", wantCode: 200, want: []string{`"name": "parcels"`, `"next_fires": [`, `"2025-06-01T02:00:00Z"`}},
		{name: "runs", path: "/api/runs", wantCode: 200, want: []string{`"id": 1`, `"trigger": "schedule"`, `"scheduled_for": "2025-06-01T02:00:00Z"`, `"status": "done"`, `"finished_at": "`}},
		{name: "runs by flow, none", path: "/api/runs?flow=other", wantCode: 200, want: []string{"[]"}},
		{name: "runs, bad limit", path: "/api/runs?limit=x", wantCode: 400, want: []string{`"error": "limit`}},
		{name: "run", path: "/api/runs/1", wantCode: 200, want: []string{`"flow": "parcels"`, `"started_at"`}},
		{name: "run missing", path: "/api/runs/99", wantCode: 404, want: []string{`"error": "no run 99"`}},
		{name: "run id not a number", path: "/api/runs/abc", wantCode: 400},
		{name: "fires", path: "/api/fires?flow=parcels", wantCode: 200, want: []string{`"claimed_by": "a"`}},
		{name: "unknown", path: "/nope", wantCode: 404},
		{name: "metrics", path: "/metrics", wantCode: 200, want: []string{
			`geoflow_runs_total{flow="parcels",status="done"} 1`,
			`geoflow_run_duration_seconds_count{flow="parcels",status="done"} 1`,
			`geoflow_api_requests_total{code="200",route="GET /healthz"} 1`,
			`geoflow_api_requests_total{code="404",route="unmatched"} 1`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := get(t, srv, tt.path)
			if code != tt.wantCode {
				t.Errorf("%s: %d, want %d\n%s", tt.path, code, tt.wantCode, body)
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("%s lacks %q:\n%s", tt.path, w, body)
				}
			}
		})
	}

	// JSON entries have at least these fields.
	_, body := get(t, srv, "/api/runs")
	var runs []map[string]any
	if err := json.Unmarshal([]byte(body), &runs); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "flow", "status", "trigger", "scheduled_for", "started_at", "finished_at"} {
		if _, ok := runs[0][k]; !ok {
			t.Errorf("run JSON lacks %q: %v", k, runs[0])
		}
	}

	resp, err := http.Post(srv.URL+"/api/runs", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("POST /api/runs to a server without a launcher: %d", resp.StatusCode)
	}

	ready.Store(false)
	if code, body := get(t, srv, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "shutting down") {
		t.Errorf("/readyz while shutting down: %d %s", code, body)
	}
}

func TestHandlerNeedsItsParts(t *testing.T) {
	if _, err := server.Handler(server.Options{}); err == nil {
		t.Error("no error without store, flows and registry")
	}
}

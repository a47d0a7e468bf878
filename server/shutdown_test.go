package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"
)

// TestAPIShutdown: shutting down, the launcher refuses new runs and replays with a 503
// that says so while the server still answers, and Wait waits for a replay the API
// runs while its client waits ("wait": true) as for the others: when Wait returns,
// nothing is being fetched and nothing more is recorded, so the store may close.
func TestAPIShutdown(t *testing.T) {
	u := newUI(t, uiOptions{failAt: []orb.Point{{11.47, 48.07}}})
	if code, body, _ := u.do("POST", "/api/runs", `{"flow":"parcels"}`); code != http.StatusAccepted {
		t.Fatalf("POST /api/runs: %d %s", code, body)
	}
	if run := u.waitRun(1); run.UnitsDead == 0 {
		t.Fatalf("run 1 has no dead unit to replay: %+v", run)
	}
	u.healed.Store(true)
	u.slow.Store(1500)
	type answer struct {
		code int
		body string
	}
	replayed := make(chan answer, 1)
	go func() {
		code, body, _ := u.do("POST", "/api/dlq/replay", `{"all":true,"filter":{"run":1},"wait":true}`)
		replayed <- answer{code, body}
	}()
	for deadline := time.Now().Add(10 * time.Second); u.inflight.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the replay sent no request within 10s")
		}
	}

	// A signal: the runs' context ends, and the launcher is closed.
	u.stopRuns()
	u.launcher.Close()
	for _, tt := range []struct{ path, body string }{
		{"/api/runs", `{"flow":"parcels"}`},
		{"/api/dlq/replay", `{"all":true,"filter":{"run":1}}`},
		{"/api/dlq/replay", `{"all":true,"filter":{"run":1},"wait":true}`},
	} {
		code, body, _ := u.do("POST", tt.path, tt.body)
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "shutting down") {
			t.Errorf("POST %s %s while shutting down: %d %s; want 503 saying so", tt.path, tt.body, code, body)
		}
	}
	state := func() string {
		return itoa(u.count(`SELECT count(*) FROM geoflow_dlq WHERE status = 'open'`)) + " open, " +
			itoa(u.count(`SELECT count(*) FROM geoflow_units WHERE run_id = 1 AND state = 'done'`)) + " units done"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := u.launcher.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if n := u.inflight.Load(); n != 0 {
		t.Errorf("Wait returned with %d requests of the replay in flight", n)
	}
	atWait := state()
	select {
	case a := <-replayed:
		if a.code != http.StatusOK {
			t.Errorf("the waiting replay: %d %s", a.code, a.body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting replay did not answer")
	}
	if after := state(); after != atWait {
		t.Errorf("the replay recorded after Wait returned: %s at Wait, %s after", atWait, after)
	}
}

package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestAPIReadOnly: a server that only looks (geoflow ui --read-only) changes nothing:
// runs, replays and discards answer 503 and say why, the dead letter stays open, and
// the pages offer none of those actions.
func TestAPIReadOnly(t *testing.T) {
	u := newUI(t, uiOptions{readOnly: true})
	u.seedHostile()
	tests := []struct{ path, body, want string }{
		{"/api/dlq/discard", `{"ids":[1]}`, "does not discard dead letters: it only looks"},
		{"/api/dlq/discard", `{"all":true,"filter":{"run":1}}`, "does not discard dead letters"},
		{"/api/dlq/replay", `{"ids":[1]}`, "does not replay dead letters: it only looks"},
		{"/api/runs", `{"flow":"parcels"}`, "does not start runs: it only looks"},
	}
	for _, tt := range tests {
		code, body, _ := u.do("POST", tt.path, tt.body)
		if code != http.StatusServiceUnavailable || !strings.Contains(body, tt.want) {
			t.Errorf("POST %s %s: %d %s; want 503 with %q", tt.path, tt.body, code, body, tt.want)
		}
	}
	if n := u.count(`SELECT count(*) FROM geoflow_dlq WHERE status = 'open'`); n != 1 {
		t.Errorf("%d entries open after the refused discards, want 1", n)
	}
	if n := u.count(`SELECT count(*) FROM geoflow_runs`); n != 1 {
		t.Errorf("%d runs after the refused run, want the seeded one", n)
	}
	_, body, _ := u.do("GET", "/dlq", "")
	for _, bad := range []string{`id="discard-selected"`, `id="discard-view"`, `id="replay-selected"`, `id="replay-view"`, `class="pick"`, `class="draw"`} {
		if strings.Contains(body, bad) {
			t.Errorf("the read-only dead-letter page offers %s", bad)
		}
	}
	if !strings.Contains(body, `data-can-run="false" data-can-discard="false"`) {
		t.Errorf("the page does not tell app.js that it may do nothing:\n%s", body)
	}

	// The same server with a launcher, not read-only, offers them all.
	rw := newUI(t, uiOptions{})
	rw.seedHostile()
	_, body, _ = rw.do("GET", "/dlq", "")
	for _, want := range []string{`id="discard-selected"`, `id="discard-view"`, `id="replay-selected"`, `class="pick"`, `data-can-run="true" data-can-discard="true"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the dead-letter page lacks %s", want)
		}
	}
}

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

// TestPagesDeadLettersBadFilter: the dead-letter page refuses a filter the API refuses,
// with the API's words, and then lists nothing and offers no action: a bad run used to
// be dropped, listing every run's entries under "Discard all open in view".
func TestPagesDeadLettersBadFilter(t *testing.T) {
	u := newUI(t, uiOptions{})
	u.seedHostile()
	tests := []struct{ query, want string }{
		{"run=abc", "--run abc: want a run id (a positive number)"},
		{"run=-3", "--run -3: want a run id"},
		{"id=abc", "id abc: want a dead letter&#39;s id"},
		{"class=nope", "nope"},
	}
	for _, tt := range tests {
		code, body, _ := u.do("GET", "/dlq?"+tt.query, "")
		if code != http.StatusOK || !strings.Contains(body, `id="dlq-problem"`) || !strings.Contains(body, tt.want) {
			t.Errorf("GET /dlq?%s: %d; want the page with the problem %q:\n%s", tt.query, code, tt.want, body)
			continue
		}
		for _, bad := range []string{`id="discard-view"`, `id="replay-view"`, `id="dlq-map"`, `class="pick"`} {
			if strings.Contains(body, bad) {
				t.Errorf("GET /dlq?%s shows %s despite its problem", tt.query, bad)
			}
		}
		// The API refuses the same query with the same words.
		if code, api, _ := u.do("GET", "/api/dlq?"+tt.query, ""); code != http.StatusBadRequest {
			t.Errorf("GET /api/dlq?%s: %d %s", tt.query, code, api)
		}
	}
	if _, body, _ := u.do("GET", "/dlq?run=abc", ""); !strings.Contains(body, `name="run" value="abc"`) {
		t.Errorf("the run typed is not shown back in its field")
	}
	if _, body, _ := u.do("GET", "/dlq?run=1", ""); !strings.Contains(body, `id="discard-view"`) || strings.Contains(body, `id="dlq-problem"`) {
		t.Errorf("a good filter shows no actions, or a problem")
	}
}

// TestAPITriageStoreFailure: when the store fails, a replay or a discard answers 500
// (the server's fault, logged), not 400 as if the entries named were wrong; entries that
// are not open still answer 400.
func TestAPITriageStoreFailure(t *testing.T) {
	u := newUI(t, uiOptions{})
	u.seedHostile()
	if code, body, _ := u.do("POST", "/api/dlq/replay", `{"ids":[42]}`); code != http.StatusBadRequest || !strings.Contains(body, "no dead letter 42") {
		t.Errorf("replay of a missing entry: %d %s", code, body)
	}
	u.db.Close() // the store now fails every query
	tests := []struct{ path, body, want string }{
		{"/api/dlq/replay", `{"ids":[1]}`, "listing the dead letters: "},
		{"/api/dlq/replay", `{"all":true,"filter":{"run":1}}`, "listing the dead letters: "},
		{"/api/dlq/discard", `{"ids":[1]}`, "discarding 1 dead letters: "},
		{"/api/dlq/discard", `{"all":true,"filter":{"run":1}}`, "listing the dead letters: "},
	}
	for _, tt := range tests {
		code, body, _ := u.do("POST", tt.path, tt.body)
		if code != http.StatusInternalServerError || !strings.Contains(body, tt.want) {
			t.Errorf("POST %s %s with the store down: %d %s; want 500 with %q", tt.path, tt.body, code, body, tt.want)
		}
	}
}

package cli_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/geoflow/geoflow/cmd/geoflow/cli"
	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/gpkg"
	"github.com/geoflow/geoflow/store/postgis"
)

// hidingFixture is a sample WFS that hides some of its features, until fixed: its
// GetFeature results and the counts of tiles leave them out, consistently, but its count
// of the whole area (RESULTTYPE=hits over the task's bbox) still includes them, as a
// server whose listing is filtered by a view its count does not go through. It returns
// the number of features it holds and of those it hides.
func hidingFixture(t *testing.T, fixed *atomic.Bool) (string, int64, int64) {
	t.Helper()
	const hidden = 20
	opts := wfsserver.Options{Features: 1500, CountDefault: 400, ImplementsSorting: true, Changes: wfsserver.Changes{Deleted: hidden}}
	full := wfsserver.New(opts)
	hiding := wfsserver.New(opts)
	if err := hiding.SetRevision(1, opts.Changes); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		whole := false
		if b, ok := wfsserver.RequestBBox(r); ok && b.Max[0]-b.Min[0] > 0.09 {
			for k, v := range r.URL.Query() {
				whole = whole || (strings.EqualFold(k, "RESULTTYPE") && len(v) > 0 && strings.EqualFold(v[0], "hits"))
			}
		}
		if fixed.Load() || whole {
			full.ServeHTTP(w, r)
			return
		}
		hiding.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, int64(full.Len()), hidden
}

// recordIncomplete records the dead letter of class incomplete a run gives the unit it
// could not prove complete, directly in the store: here the task's root unit.
func recordIncomplete(t *testing.T, db string, runID int64, task, unit string) {
	t.Helper()
	ctx := t.Context()
	var st interface {
		RecordDeadLetter(ctx context.Context, ref store.UnitRef, e dlq.Entry) (int64, error)
		Close()
	}
	var err error
	if testdb.IsGeoPackage(db) {
		st, err = gpkg.Open(ctx, db, nil)
	} else {
		st, err = postgis.Open(ctx, db, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.RecordDeadLetter(ctx, store.UnitRef{RunID: runID, TaskID: task, Key: unit}, dlq.Entry{
		Flow: "dlqtest", Class: dlq.ClassIncomplete, Error: "incomplete: 20 features missing in the area", Attempts: 1,
	}); err != nil {
		t.Fatal(err)
	}
}

type runJSON struct {
	Status string `json:"status"`
	Tasks  []struct {
		Task  string `json:"task"`
		State string `json:"state"`
		Error string `json:"error"`
	} `json:"tasks"`
}

func showRun(t *testing.T, env map[string]string) runJSON {
	t.Helper()
	code, out, errs := geoflow(t, env, "runs", "show", "1", "--json")
	var r runJSON
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("runs show 1 --json: exit %d\n%s%s", code, out, errs)
	}
	return r
}

// TestIncompleteRun: a server that counts more features in the area than it serves makes
// the task and the run incomplete (exit 3), shown by runs show, --json and runs list
// --status incomplete; its dead letter of class incomplete is listed, and replayed
// against the server fixed it completes the task and the run.
func TestIncompleteRun(t *testing.T) { eachStore(t, testIncompleteRun) }

func testIncompleteRun(t *testing.T, db string) {
	var fixed atomic.Bool
	url, total, hidden := hidingFixture(t, &fixed)
	env := map[string]string{"GEOFLOW_DATABASE_URL": db}
	flow := dlqFlow(t, url)

	code, out, errs := geoflow(t, env, "run", flow, "--progress", "off")
	if code != cli.ExitIncomplete || !strings.Contains(out, "run 1 of dlqtest incomplete") || !strings.Contains(out, "parcels") ||
		!strings.Contains(errs, "un 1 is incomplete: task parcels stored fewer features than the server counted") {
		t.Fatalf("run: exit %d, want %d\nstdout: %s\nstderr: %s", code, cli.ExitIncomplete, out, errs)
	}
	if n := testdb.Count(t, db, "SELECT count(*) FROM parcels"); n != total-hidden {
		t.Errorf("%d rows stored, want the %d served", n, total-hidden)
	}
	r := showRun(t, env)
	if r.Status != "incomplete" || len(r.Tasks) != 1 || r.Tasks[0].State != "incomplete" ||
		!strings.Contains(r.Tasks[0].Error, "20 features missing") {
		t.Errorf("runs show --json = %+v, want the run and its task incomplete, 20 features missing", r)
	}
	code, out, _ = geoflow(t, env, "runs", "show", "1", "--wide")
	if code != 0 || !strings.Contains(out, "incomplete") || !strings.Contains(out, "geoflow dlq list --run 1 --class incomplete") {
		t.Errorf("runs show 1: exit %d\n%s", code, out)
	}
	code, out, _ = geoflow(t, env, "runs", "list", "--status", "incomplete")
	if code != 0 || !strings.Contains(out, "incomplete") {
		t.Errorf("runs list --status incomplete: exit %d\n%s", code, out)
	}

	recordIncomplete(t, db, 1, "parcels", "q")
	es := listJSON(t, env, "--class", "incomplete")
	if len(es) != 1 || es[0].ErrorClass != "incomplete" || es[0].Unit != "q" {
		t.Fatalf("dlq list --class incomplete = %+v, want the root unit's entry", es)
	}
	code, out, _ = geoflow(t, env, "dlq", "stats")
	if code != 0 || !strings.Contains(out, "incomplete") {
		t.Errorf("dlq stats: exit %d\n%s", code, out)
	}

	// Replayed while the server still hides them: the unit succeeds, the task's
	// evidence still does not add up, and the run stays incomplete.
	code, out, errs = geoflow(t, env, "dlq", "replay", "--class", "incomplete")
	if code != cli.ExitIncomplete || !strings.Contains(errs, "still incomplete") {
		t.Errorf("dlq replay against the server still hiding: exit %d, want %d\n%s%s", code, cli.ExitIncomplete, out, errs)
	}
	if r := showRun(t, env); r.Status != "incomplete" || r.Tasks[0].State != "incomplete" {
		t.Errorf("after a replay against the server still hiding: %+v, want the run and its task incomplete", r)
	}

	recordIncomplete(t, db, 1, "parcels", "q")
	fixed.Store(true)
	code, out, errs = geoflow(t, env, "dlq", "replay", "--class", "incomplete")
	if code != 0 {
		t.Fatalf("dlq replay --class incomplete: exit %d\n%s%s", code, out, errs)
	}
	if n := testdb.Count(t, db, "SELECT count(*) FROM parcels"); n != total {
		t.Errorf("%d rows after the replay, want all %d", n, total)
	}
	if r := showRun(t, env); r.Status != "done" || r.Tasks[0].State != "done" || r.Tasks[0].Error != "" {
		t.Errorf("after the replay: %+v, want the run and its task done", r)
	}
}

// TestIncompleteMirror: a mirror whose harvest the server's count says is short deletes
// nothing, not even what a complete earlier run stored and this one did not see, and ends
// incomplete (exit 3).
func TestIncompleteMirror(t *testing.T) { eachStore(t, testIncompleteMirror) }

func testIncompleteMirror(t *testing.T, db string) {
	var fixed atomic.Bool
	fixed.Store(true)
	url, total, hidden := hidingFixture(t, &fixed)
	env := map[string]string{"GEOFLOW_DATABASE_URL": db}
	flow := writeFlow(t, mirrorFlow("type: wfs\n    url: "+url+"/wfs\n    typename: gf:parcels\n    bbox: [11.45, 48.05, 11.55, 48.15]", "parcels", "mirror", false))
	if code, out, errs := geoflow(t, env, "run", flow, "--progress", "off"); code != 0 {
		t.Fatalf("first run against the whole server: exit %d\n%s%s", code, out, errs)
	}
	fixed.Store(false)
	code, out, errs := geoflow(t, env, "run", flow, "--progress", "off")
	if code != cli.ExitIncomplete || !strings.Contains(out, "incomplete") {
		t.Fatalf("run against the hiding server: exit %d, want %d\n%s%s", code, cli.ExitIncomplete, out, errs)
	}
	if n := testdb.Count(t, db, "SELECT count(*) FROM parcels"); n != total {
		t.Errorf("the mirror holds %d rows after the short run, want all %d (the %d hidden ones not deleted)", n, total, hidden)
	}
	code, out, _ = geoflow(t, env, "runs", "show", "2")
	if code != 0 || !strings.Contains(out, "deletions withheld") || !strings.Contains(out, "20 features missing") {
		t.Errorf("runs show 2: exit %d\n%s", code, out)
	}
}

package cli_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
)

// TestResumeEditedFlow: a run fails (the server is down while the task plans), the flow
// file is edited, and `run --resume` finishes the run with the flow it recorded, saying
// what changed; the file's new table stays empty. --use-current-flow is refused for
// nothing to resume once the run is done.
func TestResumeEditedFlow(t *testing.T) { eachStore(t, testResumeEditedFlow) }

func testResumeEditedFlow(t *testing.T, db string) {
	env := map[string]string{"GEOFLOW_DATABASE_URL": db}
	fx := wfsserver.New(wfsserver.Options{Features: 300})
	var up atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "maintenance", http.StatusServiceUnavailable)
			return
		}
		fx.ServeHTTP(w, r)
	}))
	defer srv.Close()
	src := `name: edited
defaults:
  retry: {max_attempts: 2, base_delay: 1ms, max_delay: 5ms}
tasks:
  parcels:
    type: wfs
    url: ` + srv.URL + `/wfs
    typename: gf:parcels
    target: {table: recorded_table}
`
	path := writeFlow(t, src)
	code, out, errs := geoflow(t, env, "run", path, "--progress", "off", "--log-level", "error")
	if code != 1 || !strings.Contains(errs, "planning") {
		t.Fatalf("run against a server that is down: exit %d\n%s%s", code, out, errs)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(src, "recorded_table", "edited_table", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	up.Store(true)
	code, out, errs = geoflow(t, env, "run", path, "--resume", "--progress", "off", "--log-level", "error")
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"the flow file changed since run 1 started; resumed with the flow run 1 recorded",
		"-target: {table: recorded_table} +target: {table: edited_table}", "run 1 of edited done", "300 inserted"} {
		if !strings.Contains(out, want) {
			t.Errorf("resume output lacks %q:\n%s", want, out)
		}
	}
	if n := testdb.Count(t, db, "SELECT count(DISTINCT gf_feature_id) FROM recorded_table"); n != 300 {
		t.Errorf("recorded_table holds %d features, want 300", n)
	}
	if tableExists(t, db, "edited_table") {
		t.Errorf("the edited flow's table was created")
	}
	if code, _, errs = geoflow(t, env, "run", path, "--resume", "--use-current-flow", "--progress", "off"); code != 1 || !strings.Contains(errs, "no unfinished run") {
		t.Errorf("resuming a finished run: exit %d, %s", code, errs)
	}
}

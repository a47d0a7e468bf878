package cli_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/geoflow/geoflow/internal/devserver/arcgisserver"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/internal/testflow"
)

// mirrorFlow is a flow mirroring a sample server into table, with history (oracle flows
// append the same layer into a table of their own, to compare with). source is the task
// type and its keys.
func mirrorFlow(source, table, mode string, history bool) string {
	return fmt.Sprintf(`name: %[2]s
defaults:
  retry: {max_attempts: 3, base_delay: 1ms, max_delay: 10ms}
  rate_limit: {requests_per_second: 1000, burst: 100, concurrency: 4}
tasks:
  parcels:
    %[1]s
    target: {table: %[2]s, mode: %[3]s, history: %[4]v}
`, source, table, mode, history)
}

// sampleServer is what the tests ask of a sample server whose data changes.
type sampleServer interface {
	SetRevision(rev int, c wfsserver.Changes) error
	SetEmpty(on bool)
	Count() int
}

// mirrorEnv is one sample server whose data changes between runs, a store, and the flows.
type mirrorEnv struct {
	t       *testing.T
	db      string
	src     sampleServer
	fx      *wfsserver.Server // the WFS, nil for another kind of server
	env     map[string]string
	source  string // the task's type and url, as YAML
	mirror  string // flow file
	changes wfsserver.Changes
}

// newMirrorEnv serves 1,200 parcels of which c change at revision 1, as kind (wfs,
// ogcapi_features or arcgis_features) serves them.
func newMirrorEnv(t *testing.T, db, kind string, c wfsserver.Changes) *mirrorEnv {
	e := &mirrorEnv{t: t, db: db, env: map[string]string{"GEOFLOW_DATABASE_URL": db}, changes: c}
	var h http.Handler
	if kind == "arcgis_features" {
		fx := arcgisserver.New(arcgisserver.Options{Features: 1200, MaxRecordCount: 200, Changes: c})
		e.src, h = fx, fx
	} else {
		e.fx = wfsserver.New(wfsserver.Options{Features: 1200, CountDefault: 200, ImplementsSorting: true, Changes: c})
		e.src, h = e.fx, e.fx
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	switch kind {
	case "wfs":
		e.source = fmt.Sprintf("type: wfs\n    url: %s/wfs\n    typename: gf:parcels", srv.URL)
	case "ogcapi_features":
		e.source = fmt.Sprintf("type: ogcapi_features\n    url: %s/ogcapi\n    collection: parcels", srv.URL)
	case "arcgis_features":
		e.source = fmt.Sprintf("type: arcgis_features\n    url: %s/arcgis/rest/services/Parcels/FeatureServer/0", srv.URL)
	}
	e.mirror = writeFlow(t, mirrorFlow(e.source, "mirror", "mirror", true))
	return e
}

func (m *mirrorEnv) geoflow(want int, args ...string) string {
	m.t.Helper()
	code, out, errs := geoflow(m.t, m.env, args...)
	if code != want {
		m.t.Fatalf("geoflow %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, testflow.Tail(errs))
	}
	return out + errs
}

// taskRecord is what `runs show --json` says of a task.
type taskRecord struct {
	Inserted int64  `json:"features_inserted"`
	Skipped  *int64 `json:"features_unchanged"`
	Updated  int64  `json:"features_updated"`
	Deleted  int64  `json:"features_deleted"`
	Closed   int64  `json:"versions_closed"`
	Note     string `json:"mirror_note"`
	State    string `json:"state"`
}

func (m *mirrorEnv) task(run int) taskRecord {
	m.t.Helper()
	code, out, errs := geoflow(m.t, m.env, "runs", "show", fmt.Sprint(run), "--json")
	if code != 0 {
		m.t.Fatalf("runs show %d: exit %d %s", run, code, errs)
	}
	var rec struct {
		Tasks []taskRecord `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(out), &rec); err != nil || len(rec.Tasks) != 1 {
		m.t.Fatalf("runs show %d --json: %v\n%s", run, err, out)
	}
	return rec.Tasks[0]
}

// count runs a count query against the store.
func (m *mirrorEnv) count(q string) int64 { m.t.Helper(); return testdb.Count(m.t, m.db, q) }

// checkEqualsSource harvests the server as it is now into a fresh append table and
// compares: the mirror's current rows are exactly those (id and payload hash), once each.
func (m *mirrorEnv) checkEqualsSource() {
	m.t.Helper()
	oracle := fmt.Sprintf("oracle_%d", m.count("SELECT count(*) FROM geoflow_runs"))
	m.geoflow(0, "run", writeFlow(m.t, mirrorFlow(m.source, oracle, "append", false)), "--progress", "off", "--log-level", "warn")
	cur := "(SELECT gf_feature_id, gf_payload_hash FROM mirror WHERE gf_valid_to IS NULL) AS c"
	if n := m.count("SELECT count(*) FROM mirror WHERE gf_valid_to IS NULL"); n != int64(m.src.Count()) {
		m.t.Errorf("the mirror holds %d current features, the server %d", n, m.src.Count())
	}
	for _, q := range []string{
		"SELECT count(*) FROM (SELECT gf_feature_id, gf_payload_hash FROM mirror WHERE gf_valid_to IS NULL EXCEPT SELECT gf_feature_id, gf_payload_hash FROM " + oracle + ") AS x",
		"SELECT count(*) FROM (SELECT gf_feature_id, gf_payload_hash FROM " + oracle + " EXCEPT SELECT gf_feature_id, gf_payload_hash FROM mirror WHERE gf_valid_to IS NULL) AS x",
	} {
		if n := m.count(q); n != 0 {
			m.t.Errorf("mirror and source differ: %d features\n%s", n, q)
		}
	}
	if n := m.count("SELECT count(*) - count(DISTINCT gf_feature_id) FROM " + cur); n != 0 {
		m.t.Errorf("%d features are current twice", n)
	}
}

// TestMirror is the must-show of mirror mode: n features edited, m deleted and k added on
// the server between two runs; the second run reports exactly n updated, m deleted, k
// inserted, history holds n + m closed versions, the mirror equals the source, and
// `geoflow changes` lists (and draws) exactly those features.
func TestMirror(t *testing.T) {
	for _, kind := range []string{"wfs", "ogcapi_features", "arcgis_features"} {
		t.Run(kind, func(t *testing.T) { eachStore(t, func(t *testing.T, db string) { testMirror(t, db, kind) }) })
	}
}

func testMirror(t *testing.T, db, kind string) {
	const n, m, k = 12, 7, 5
	e := newMirrorEnv(t, db, kind, wfsserver.Changes{Edited: n, Deleted: m, Added: k})
	e.geoflow(0, "run", e.mirror, "--progress", "off")
	first := e.src.Count()
	if got := e.task(1); got.Inserted != int64(first) || got.Updated != 0 || got.Deleted != 0 || !strings.HasPrefix(got.Note, "complete") {
		t.Fatalf("run 1: %+v, want %d inserted and a complete harvest", got, first)
	}
	if err := e.src.SetRevision(1, e.changes); err != nil {
		t.Fatal(err)
	}
	if out := e.geoflow(0, "run", e.mirror, "--progress", "off"); !strings.Contains(out, fmt.Sprintf(", %d deleted (gone upstream", m)) {
		t.Errorf("the run's summary does not say what it deleted:\n%s", testflow.Tail(out))
	}
	got := e.task(2)
	if got.Inserted != k || got.Updated != n || got.Deleted != m || got.Closed != n+m || got.Skipped == nil || *got.Skipped != int64(first-n-m) {
		t.Errorf("run 2: %+v; want %d inserted, %d updated, %d deleted, %d closed, %d unchanged", got, k, n, m, n+m, first-n-m)
	}
	if c := e.count("SELECT count(*) FROM mirror WHERE gf_valid_to IS NOT NULL"); c != n+m {
		t.Errorf("history holds %d closed versions, want %d", c, n+m)
	}
	if c := e.count("SELECT count(*) FROM mirror WHERE gf_closed_run = 2 AND gf_valid_to IS NOT NULL"); c != n+m {
		t.Errorf("%d versions closed by run 2, want %d", c, n+m)
	}
	if c := e.count("SELECT count(*) FROM mirror_current"); c != int64(e.src.Count()) {
		t.Errorf("the view mirror_current holds %d rows, want %d", c, e.src.Count())
	}
	e.checkEqualsSource()

	// The change list names exactly the features the server changed.
	out := e.geoflow(0, "changes", "2", "--json")
	if e.fx == nil {
		for kind, want := range map[string]int{`"change":"inserted"`: k, `"change":"updated"`: n, `"change":"deleted"`: m} {
			if got := strings.Count(out, kind); got != want {
				t.Errorf("changes 2 --json: %d %s, want %d", got, kind, want)
			}
		}
		return
	}
	kinds := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var c struct{ Key, Change, Task string }
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("changes --json line %q: %v", line, err)
		}
		kinds[c.Key] = c.Change
	}
	want := map[string]string{}
	for i := range 1200 {
		switch e.fx.ChangeOf(i) {
		case wfsserver.ChangeEdited:
			want[e.fx.Feature(i).ID] = "updated"
		case wfsserver.ChangeDeleted:
			want[e.fx.Feature(i).ID] = "deleted"
		case wfsserver.ChangeAdded:
			want[e.fx.Feature(i).ID] = "inserted"
		}
	}
	if len(kinds) != len(want) {
		t.Errorf("changes 2 lists %d features, want %d", len(kinds), len(want))
	}
	for id, w := range want {
		if kinds[id] != w {
			t.Errorf("changes 2: feature %s %q, want %q", id, kinds[id], w)
		}
	}
	var fc struct {
		Type     string `json:"type"`
		Features []struct {
			Geometry   json.RawMessage `json:"geometry"`
			Properties map[string]any  `json:"properties"`
		} `json:"features"`
	}
	if err := json.Unmarshal([]byte(e.geoflow(0, "changes", "2", "--geojson")), &fc); err != nil || fc.Type != "FeatureCollection" {
		t.Fatalf("changes --geojson: %v", err)
	}
	drawn := 0
	for _, f := range fc.Features {
		if len(f.Geometry) > 4 && f.Properties["parcel_id"] != nil {
			drawn++
		}
	}
	if len(fc.Features) != n+m+k || drawn != n+m+k {
		t.Errorf("changes --geojson: %d features, %d with geometry and properties; want %d", len(fc.Features), drawn, n+m+k)
	}
	table := e.geoflow(0, "runs", "show", "2", "--wide")
	if !strings.Contains(table, "DELETED") || !strings.Contains(table, "parcels: complete") {
		t.Errorf("runs show 2 does not show the deletions:\n%s", table)
	}
}

// TestMirrorWithholdsDeletions: a second run with one URL failing for good deletes
// nothing and says why; once the dead letter is replayed, the deletions are applied and
// the mirror equals the source.
func TestMirrorWithholdsDeletions(t *testing.T) { eachStore(t, testMirrorWithholdsDeletions) }

func testMirrorWithholdsDeletions(t *testing.T, db string) {
	const n, m, k = 10, 8, 6
	e := newMirrorEnv(t, db, "wfs", wfsserver.Changes{Edited: n, Deleted: m, Added: k})
	e.geoflow(0, "run", e.mirror, "--progress", "off")
	first := int64(e.src.Count())
	if err := e.src.SetRevision(1, e.changes); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var failing string
	seen := 0
	e.fx.SetFaults(wfsserver.Faults{FailForever: func(r *http.Request) bool {
		q := r.URL.Query()
		if !strings.EqualFold(param(q, "request"), "GetFeature") || strings.EqualFold(param(q, "resulttype"), "hits") {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		if failing == "" {
			if seen++; seen == 3 {
				failing = r.URL.RawQuery
			}
		}
		return r.URL.RawQuery == failing
	}})
	out := e.geoflow(2, "run", e.mirror, "--progress", "off")
	got := e.task(2)
	if got.Deleted != 0 || !strings.Contains(got.Note, "deletions withheld") || !strings.Contains(got.Note, "not done") {
		t.Errorf("run 2 with a dead letter: %+v; want nothing deleted and the reason recorded", got)
	}
	if c := e.count("SELECT count(*) FROM mirror WHERE gf_valid_to IS NULL"); c < first {
		t.Errorf("after the failed run the mirror holds %d current features, fewer than the %d it had: something was deleted\n%s", c, first, testflow.Tail(out))
	}
	e.fx.SetFaults(wfsserver.Faults{})
	out = e.geoflow(0, "dlq", "replay", "--all")
	got = e.task(2)
	if got.Deleted != m || !strings.HasPrefix(got.Note, "complete") || got.State != "done" {
		t.Errorf("run 2 after the replay: %+v; want %d deleted and a complete harvest\n%s", got, m, testflow.Tail(out))
	}
	if got.Inserted != k || got.Updated != n {
		t.Errorf("run 2 after the replay: %d inserted, %d updated; want %d, %d", got.Inserted, got.Updated, k, n)
	}
	e.checkEqualsSource()
}

// TestMirrorSafetyRail: a server that suddenly answers with an empty collection does not
// wipe the mirror: the run stops before deleting, fails saying why, and a resume with
// --allow-mass-delete applies the deletions.
func TestMirrorSafetyRail(t *testing.T) { eachStore(t, testMirrorSafetyRail) }

func testMirrorSafetyRail(t *testing.T, db string) {
	e := newMirrorEnv(t, db, "wfs", wfsserver.Changes{})
	e.geoflow(0, "run", e.mirror, "--progress", "off")
	first := int64(e.src.Count())
	e.src.SetEmpty(true)
	out := e.geoflow(1, "run", e.mirror, "--progress", "off")
	if !strings.Contains(out, "safety rail") || !strings.Contains(out, "--allow-mass-delete") {
		t.Errorf("the run stopped by the rail does not say why:\n%s", testflow.Tail(out))
	}
	if c := e.count("SELECT count(*) FROM mirror WHERE gf_valid_to IS NULL"); c != first {
		t.Fatalf("after an empty answer the mirror holds %d features, want all %d", c, first)
	}
	if got := e.task(2); got.Deleted != 0 || got.State != "failed" || !strings.Contains(got.Note, "deletions stopped") {
		t.Errorf("run 2: %+v; want failed, nothing deleted, the rail's reason recorded", got)
	}
	e.geoflow(0, "run", e.mirror, "--resume", "--allow-mass-delete", "--progress", "off")
	if c := e.count("SELECT count(*) FROM mirror WHERE gf_valid_to IS NULL"); c != 0 {
		t.Errorf("after --allow-mass-delete the mirror holds %d current features, want 0", c)
	}
	if got := e.task(2); got.Deleted != first || got.State != "done" {
		t.Errorf("run 2 resumed: %+v; want %d deleted, done", got, first)
	}
}

func param(q map[string][]string, name string) string {
	for k, v := range q {
		if strings.EqualFold(k, name) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// TestMirrorTableShared: a flow whose mirror shares its table with another task is refused
// before anything runs: each would delete the other's rows.
func TestMirrorTableShared(t *testing.T) {
	flow := writeFlow(t, `name: shared
tasks:
  north:
    type: wfs
    url: http://127.0.0.1:1/wfs
    typename: gf:north
    target: {table: public.parcels, mode: mirror}
  south:
    type: ogcapi_features
    url: http://127.0.0.1:1/ogcapi
    collection: south
    target: {table: parcels}
`)
	code, out, errs := geoflow(t, nil, "validate", flow)
	if code == 0 || !strings.Contains(out+errs, `task "south": target.table parcels is also written by task "north"`) {
		t.Errorf("validate: exit %d\n%s%s", code, out, errs)
	}
}

package cli_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/cmd/geoflow/cli"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
)

// harvestArea is the bbox of the test flow: the fixture's default extent.
var harvestArea = orb.Bound{Min: orb.Point{11.45, 48.05}, Max: orb.Point{11.55, 48.15}}

// dlqFlow is a WFS harvest with quick retries, so that a server failing for good turns
// units into dead letters within a test's patience. The URL carries an API key that must
// never reach the dead-letter table.
func dlqFlow(t *testing.T, serverURL string) string {
	return writeFlow(t, `
name: dlqtest
defaults:
  retry: {max_attempts: 2, base_delay: 5ms, max_delay: 20ms}
  rate_limit: {concurrency: 4}
tasks:
  parcels:
    type: wfs
    url: `+serverURL+`/wfs?apikey=SECRET
    typename: gf:parcels
    bbox: [11.45, 48.05, 11.55, 48.15]
    target: {table: public.parcels}
`)
}

// failingFixture is a sample WFS that answers 500 to every request for a tile smaller
// than the whole area that contains one of points, until healed: planning succeeds, and
// the quadrants holding the points become dead units.
func failingFixture(t *testing.T, healed *atomic.Bool, points ...orb.Point) (*wfsserver.Server, string) {
	t.Helper()
	fx := wfsserver.New(wfsserver.Options{Features: 1500, CountDefault: 400, ImplementsSorting: true,
		Faults: wfsserver.Faults{FailForever: func(r *http.Request) bool {
			if healed.Load() {
				return false
			}
			b, ok := wfsserver.RequestBBox(r)
			if !ok || b.Max[0]-b.Min[0] > 0.06 {
				return false
			}
			for _, p := range points {
				if b.Contains(p) {
					return true
				}
			}
			return false
		}}})
	srv := httptest.NewServer(fx)
	t.Cleanup(srv.Close)
	return fx, srv.URL
}

// featuresIn counts the fixture's features a BBOX request over b returns.
func featuresIn(fx *wfsserver.Server, b orb.Bound) int64 {
	var n int64
	for i := range fx.Len() {
		if fx.Feature(i).Geometry.Bound().Intersects(b) {
			n++
		}
	}
	return n
}

type jsonEntry struct {
	ID            int64      `json:"id"`
	Flow          string     `json:"flow"`
	Task          string     `json:"task"`
	RunID         int64      `json:"run_id"`
	Unit          string     `json:"unit"`
	BBox          []float64  `json:"bbox"`
	ErrorClass    string     `json:"error_class"`
	Error         string     `json:"error"`
	HTTPStatus    int        `json:"http_status"`
	Attempts      int        `json:"attempts"`
	Status        string     `json:"status"`
	FirstFailedAt *time.Time `json:"first_failed_at"`
	LastFailedAt  *time.Time `json:"last_failed_at"`
	Request       struct {
		Method, URL string
	} `json:"request"`
}

func listJSON(t *testing.T, env map[string]string, args ...string) []jsonEntry {
	t.Helper()
	code, out, errs := geoflow(t, env, append([]string{"dlq", "list", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("dlq list --json: exit %d\n%s%s", code, out, errs)
	}
	var es []jsonEntry
	if err := json.Unmarshal([]byte(out), &es); err != nil {
		t.Fatalf("dlq list --json printed %q: %v", out, err)
	}
	return es
}

// checkComplete asserts the table holds each of the fixture's features in the area once.
func checkComplete(t *testing.T, db string, want int64) {
	t.Helper()
	n := testdb.Count(t, db, "SELECT count(*) FROM parcels")
	distinct := testdb.Count(t, db, "SELECT count(DISTINCT gf_payload_hash) FROM parcels")
	if n != want || distinct != want {
		t.Errorf("parcels has %d rows (%d distinct payloads), want %d, each once", n, distinct, want)
	}
}

func noSecret(t *testing.T, db string, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if strings.Contains(s, "SECRET") {
			t.Errorf("output holds the API key: %s", s)
		}
	}
	if n := rowsHolding(t, db, "geoflow_dlq", "SECRET"); n != 0 {
		t.Errorf("%d dead letters hold the API key", n)
	}
	if n := rowsHolding(t, db, "geoflow_units", "SECRET"); n != 0 {
		t.Errorf("%d units hold the API key", n)
	}
}

// rowsHolding counts the rows of table with s in any column: in PostgreSQL, in the row's
// text; in a GeoPackage, which has no row-to-text cast, in each value read back.
func rowsHolding(t *testing.T, db, table, s string) int64 {
	t.Helper()
	if !testdb.IsGeoPackage(db) {
		return testdb.Count(t, db, "SELECT count(*) FROM "+table+" r WHERE strpos(r::text, $1) > 0", s)
	}
	var n int64
	for _, row := range testdb.Query(t, db, "SELECT * FROM "+table) {
		if slices.ContainsFunc(row, func(v any) bool {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			return strings.Contains(fmt.Sprint(v), s)
		}) {
			n++
		}
	}
	return n
}

// TestDeadLettersThenReplayAll is the scenario: a server that fails some tiles
// forever leaves dead letters and exit 2 while the rest is harvested; once it heals,
// `dlq replay --all` completes the harvest with nothing open and no duplicates.
func TestDeadLettersThenReplayAll(t *testing.T) { eachStore(t, testDeadLettersThenReplayAll) }

func testDeadLettersThenReplayAll(t *testing.T, db string) {
	env := map[string]string{"GEOFLOW_DATABASE_URL": db}
	var healed atomic.Bool
	fx, url := failingFixture(t, &healed, orb.Point{11.47, 48.07})
	flow := dlqFlow(t, url)

	code, out, errs := geoflow(t, env, "run", flow, "--progress", "off", "--log-level", "error")
	if code != cli.ExitDeadLetters {
		t.Fatalf("run against a failing server: exit %d, want 2\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, "1 dead letter (1 http_5xx): geoflow dlq list --run 1") {
		t.Errorf("summary does not give the dead letter by class and the command to list it:\n%s", out)
	}
	entries := listJSON(t, env, "--run", "1")
	if len(entries) != 1 {
		t.Fatalf("%d dead letters, want 1: %+v", len(entries), entries)
	}
	e := entries[0]
	if e.Flow != "dlqtest" || e.Task != "parcels" || e.ErrorClass != "http_5xx" || e.HTTPStatus != 500 || e.Status != "open" ||
		len(e.BBox) != 4 || e.Attempts < 2 || e.FirstFailedAt == nil || e.LastFailedAt == nil || e.Error == "" ||
		!strings.Contains(e.Request.URL, "apikey=REDACTED") {
		t.Errorf("dead letter %+v", e)
	}
	done := testdb.Count(t, db, "SELECT count(*) FROM parcels")
	if done == 0 || done >= featuresIn(fx, harvestArea) {
		t.Errorf("%d features stored around the dead tile, want some but not all", done)
	}
	noSecret(t, db, out, errs)

	// Still broken: the replay fails, updates the entry and exits 2.
	code, out, _ = geoflow(t, env, "dlq", "replay", "--all", "--log-level", "error")
	if code != cli.ExitDeadLetters || !strings.Contains(out, "0 of 1 dead letters replayed") {
		t.Errorf("replay against a still failing server: exit %d\n%s", code, out)
	}
	again := listJSON(t, env)
	if len(again) != 1 || again[0].ID != e.ID || again[0].Attempts <= e.Attempts {
		t.Errorf("after a failed replay: %+v, want the same entry with more attempts than %d", again, e.Attempts)
	}

	healed.Store(true)
	code, out, errs = geoflow(t, env, "dlq", "replay", "--all", "--log-level", "error")
	if code != 0 || !strings.Contains(out, "1 of 1 dead letters replayed") {
		t.Fatalf("replay after healing: exit %d\n%s%s", code, out, errs)
	}
	if open := listJSON(t, env); len(open) != 0 {
		t.Errorf("open after the replay: %+v", open)
	}
	checkComplete(t, db, featuresIn(fx, harvestArea))
	if st := testdb.Query(t, db, "SELECT status FROM geoflow_runs WHERE id = 1"); fmt.Sprint(st) != "[[done]]" {
		t.Errorf("run status after every dead letter was replayed: %v, want done", st)
	}
	noSecret(t, db)
}

// TestDLQCommands covers list, show, stats, discard, replay by id and purge.
func TestDLQCommands(t *testing.T) { eachStore(t, testDLQCommands) }

func testDLQCommands(t *testing.T, db string) {
	env := map[string]string{"GEOFLOW_DATABASE_URL": db}
	var healed atomic.Bool
	_, url := failingFixture(t, &healed, orb.Point{11.47, 48.07}, orb.Point{11.53, 48.13})
	flow := dlqFlow(t, url)
	if code, out, errs := geoflow(t, env, "run", flow, "--progress", "off", "--log-level", "error"); code != cli.ExitDeadLetters {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	entries := listJSON(t, env)
	if len(entries) != 2 {
		t.Fatalf("%d dead letters, want 2", len(entries))
	}
	// The two units fail concurrently, so either may be recorded first: order them by
	// place, the one holding the north-east failing point second.
	slices.SortFunc(entries, func(a, b jsonEntry) int { return int(a.ID - b.ID) })
	first, second := entries[0], entries[1]
	if len(first.BBox) == 4 && first.BBox[2] >= 11.53 && first.BBox[3] >= 48.13 {
		first, second = second, first
	}

	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string // substrings of stdout (or stderr when the exit is not 0)
	}{
		{name: "list table", args: []string{"dlq", "list"},
			want: []string{"ID", "CLASS", first.Unit, second.Unit, "http_5xx", "open"}},
		{name: "list filtered by bbox", args: []string{"dlq", "list", "--bbox", "11.52,48.12,11.54,48.14"},
			want: []string{second.Unit}},
		{name: "list filtered by class", args: []string{"dlq", "list", "--class", "parse"}, want: []string{"no dead letters"}},
		{name: "list since", args: []string{"dlq", "list", "--since", "1h", "--task", "parcels", "--flow", "dlqtest"},
			want: []string{first.Unit, second.Unit}},
		{name: "list bad class", args: []string{"dlq", "list", "--class", "boom"}, wantCode: cli.ExitError,
			want: []string{"--class \"boom\""}},
		{name: "show", args: []string{"dlq", "show", fmt.Sprint(first.ID)},
			want: []string{"unit:", first.Unit, "class:", "http_5xx", "request:", "GET http://", "apikey=REDACTED",
				"response snippet:", "error:", "attempts:"}},
		{name: "show json", args: []string{"dlq", "show", "--json", fmt.Sprint(first.ID)},
			want: []string{`"response_snippet"`, `"request"`, `"bbox"`}},
		{name: "show missing", args: []string{"dlq", "show", "9999"}, wantCode: cli.ExitError, want: []string{"not found"}},
		{name: "stats", args: []string{"dlq", "stats"},
			want: []string{"2 dead letters", "CLASS", "http_5xx", "TASK", "parcels", "HOST", "127.0.0.1:", "STATUS", "open"}},
		{name: "stats json", args: []string{"dlq", "stats", "--json"}, want: []string{`"by_host"`, `"total": 2`}},
		{name: "discard", args: []string{"dlq", "discard", fmt.Sprint(second.ID)}, want: []string{"discarded 1 dead letter"}},
		{name: "discard again", args: []string{"dlq", "discard", fmt.Sprint(second.ID)}, wantCode: cli.ExitError,
			want: []string{"not discarded"}},
		{name: "list hides discarded", args: []string{"dlq", "list", "--json"}, want: []string{first.Unit}},
		{name: "list all statuses", args: []string{"dlq", "list", "--status", "all"}, want: []string{first.Unit, second.Unit, "discarded"}},
		{name: "replay needs a selection", args: []string{"dlq", "replay"}, wantCode: cli.ExitError, want: []string{"name what to replay"}},
		{name: "replay discarded", args: []string{"dlq", "replay", fmt.Sprint(second.ID)}, wantCode: cli.ExitError,
			want: []string{"is discarded, not open"}},
		{name: "dry run", args: []string{"dlq", "replay", "--all", "--dry-run"}, want: []string{"would replay 1 dead letter", first.Unit}},
		{name: "purge needs an age", args: []string{"dlq", "purge"}, wantCode: cli.ExitError, want: []string{"--older-than"}},
		{name: "purge keeps recent", args: []string{"dlq", "purge", "--older-than", "30d"}, want: []string{"purged 0 dead letters"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := geoflow(t, env, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.wantCode, out, errs)
			}
			text := out
			if code != 0 {
				text = errs
			}
			for _, w := range tt.want {
				if !strings.Contains(strings.ToLower(text), strings.ToLower(w)) {
					t.Errorf("output lacks %q:\n%s", w, text)
				}
			}
			noSecret(t, db, out, errs)
		})
	}
	if es := listJSON(t, env); len(es) != 1 || es[0].ID != first.ID {
		t.Fatalf("open entries %+v, want only %d", es, first.ID)
	}

	healed.Store(true)
	code, out, errs := geoflow(t, env, "dlq", "replay", fmt.Sprint(first.ID), "--log-level", "error")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("replayed %d", first.ID)) {
		t.Fatalf("replay %d: exit %d\n%s%s", first.ID, code, out, errs)
	}
	code, out, _ = geoflow(t, env, "dlq", "show", fmt.Sprint(first.ID))
	if code != 0 || !slices.ContainsFunc(strings.Split(out, "\n"), func(l string) bool {
		return slices.Equal(strings.Fields(l), []string{"status:", "replayed"})
	}) || !strings.Contains(out, "replays:") {
		t.Errorf("show after replay:\n%s", out)
	}
	code, out, _ = geoflow(t, env, "dlq", "purge", "--older-than", "0d")
	if code != 0 || !strings.Contains(out, "purged 2 dead letters") {
		t.Errorf("purge: exit %d %s", code, out)
	}
	if es := listJSON(t, env, "--status", "all"); len(es) != 0 {
		t.Errorf("left after purge: %+v", es)
	}
}

// TestBBoxRerun: after an area's rows are lost, `geoflow run FLOW --bbox AREA` brings
// them back, and only that area is requested from the server.
func TestBBoxRerun(t *testing.T) { eachStore(t, testBBoxRerun) }

func testBBoxRerun(t *testing.T, db string) {
	env := map[string]string{"GEOFLOW_DATABASE_URL": db}
	var healed atomic.Bool
	healed.Store(true)
	fx, url := failingFixture(t, &healed)
	flow := dlqFlow(t, url)
	if code, out, errs := geoflow(t, env, "run", flow, "--progress", "off", "--log-level", "error"); code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	full := featuresIn(fx, harvestArea)
	checkComplete(t, db, full)

	area := orb.Bound{Min: orb.Point{11.46, 48.06}, Max: orb.Point{11.49, 48.09}}
	// Lose the area's rows: in a GeoPackage, those whose box the R-tree index says meets it.
	del := `DELETE FROM parcels WHERE ST_Intersects(geom, ST_MakeEnvelope($1, $2, $3, $4, 4326))`
	if testdb.IsGeoPackage(db) {
		del = `DELETE FROM parcels WHERE fid IN (SELECT id FROM rtree_parcels_geom
			WHERE maxx >= ? AND maxy >= ? AND minx <= ? AND miny <= ?)`
	}
	deleted := testdb.Exec(t, db, del, area.Min[0], area.Min[1], area.Max[0], area.Max[1])
	if deleted == 0 {
		t.Fatal("nothing deleted in the area")
	}
	fx.ResetStats()
	bbox := fmt.Sprintf("%g,%g,%g,%g", area.Min[0], area.Min[1], area.Max[0], area.Max[1])
	code, out, errs := geoflow(t, env, "run", flow, "--bbox", bbox, "--progress", "off", "--log-level", "error")
	if code != 0 {
		t.Fatalf("bbox rerun: exit %d\n%s%s", code, out, errs)
	}
	checkComplete(t, db, full)
	st := fx.Stats()
	if st.NoBBox != 0 || len(st.BBoxes) == 0 {
		t.Errorf("rerun made %d GetFeature requests without a BBOX and %d with one", st.NoBBox, len(st.BBoxes))
	}
	const eps = 1e-9
	for _, b := range st.BBoxes {
		if b.Min[0] < area.Min[0]-eps || b.Min[1] < area.Min[1]-eps || b.Max[0] > area.Max[0]+eps || b.Max[1] > area.Max[1]+eps {
			t.Errorf("rerun requested %v, outside the area %v", b, area)
		}
	}
	if st.FeaturesServed >= full {
		t.Errorf("rerun fetched %d features, want only the area's (the whole has %d)", st.FeaturesServed, full)
	}
	checkRunArea(t, env, area)
}

// checkRunArea: the history tells the --bbox rerun (run 2, over area) from the full run
// (run 1): runs show --json has its area and the full run's null, runs show says it,
// runs list marks it.
func checkRunArea(t *testing.T, env map[string]string, area orb.Bound) {
	t.Helper()
	for id, want := range map[string]*[4]float64{"1": nil, "2": {area.Min[0], area.Min[1], area.Max[0], area.Max[1]}} {
		_, out, _ := geoflow(t, env, "runs", "show", id, "--json")
		var rec struct {
			Area *[4]float64 `json:"area"`
		}
		if err := json.Unmarshal([]byte(out), &rec); err != nil || !strings.Contains(out, `"area"`) ||
			(rec.Area == nil) != (want == nil) || (want != nil && *rec.Area != *want) {
			t.Errorf("runs show %s --json: area %v (%v), want %v\n%s", id, rec.Area, err, want, out)
		}
	}
	bbox := fmt.Sprintf("%g,%g,%g,%g", area.Min[0], area.Min[1], area.Max[0], area.Max[1])
	if _, out, _ := geoflow(t, env, "runs", "show", "2"); !strings.Contains(out, "area           "+bbox) {
		t.Errorf("runs show 2 does not say its area %s:\n%s", bbox, out)
	}
	if _, out, _ := geoflow(t, env, "runs", "list"); !regexp.MustCompile(`(?m)^2 .* bbox$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^1 .* -$`).MatchString(out) {
		t.Errorf("runs list does not mark the rerun's area:\n%s", out)
	}
	if _, out, _ := geoflow(t, env, "runs", "list", "--wide"); !strings.Contains(out, bbox) {
		t.Errorf("runs list --wide does not show the rerun's area %s:\n%s", bbox, out)
	}
}

// buildGeoflow compiles the command into a temporary directory.
func buildGeoflow(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "geoflow")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	cmd := exec.Command("go", "build", "-o", bin, "github.com/geoflow/geoflow/cmd/geoflow")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// payloads returns the sorted payload hashes of the parcels table, in hex.
func payloads(t *testing.T, db string) []string {
	t.Helper()
	var out []string
	for _, r := range testdb.Query(t, db, "SELECT gf_payload_hash FROM parcels") {
		out = append(out, hex.EncodeToString(r[0].([]byte)))
	}
	slices.Sort(out)
	return out
}

// TestKillAndResume kills a run with SIGKILL mid-way, then resumes it: the table ends up
// exactly as an uninterrupted run's, and what was done is not fetched again.
func TestKillAndResume(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("SIGKILL")
	}
	bin := buildGeoflow(t)
	eachStore(t, func(t *testing.T, db string) { killAndResume(t, bin, db) })
}

func killAndResume(t *testing.T, bin, db string) {
	fx := wfsserver.New(wfsserver.Options{Features: 3000, CountDefault: 100, ImplementsSorting: true, Latency: 20 * time.Millisecond})
	srv := httptest.NewServer(fx)
	defer srv.Close()
	want := featuresIn(fx, harvestArea)

	// The reference: an uninterrupted run into a database of its own, of the same kind.
	ref := testdb.URL(t)
	if testdb.IsGeoPackage(db) {
		ref = filepath.Join(t.TempDir(), "ref.gpkg")
	}
	flow := dlqFlow(t, srv.URL)
	if code, out, errs := geoflow(t, map[string]string{"GEOFLOW_DATABASE_URL": ref}, "run", flow, "--progress", "off", "--log-level", "error"); code != 0 {
		t.Fatalf("reference run: exit %d\n%s%s", code, out, errs)
	}
	checkComplete(t, ref, want)
	refStats := fx.Stats()
	fx.ResetStats()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", flow, "--progress", "off", "--log-level", "error")
	cmd.Env = append(os.Environ(), "GEOFLOW_DATABASE_URL="+db)
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	doneUnits := func() int64 {
		if !tableExists(t, db, "parcels") {
			return 0
		}
		return testdb.Count(t, db, "SELECT count(*) FROM geoflow_units WHERE state = 'done' AND features_inserted > 0")
	}
	deadline := time.Now().Add(time.Minute)
	for doneUnits() < 3 {
		select {
		case err := <-exited:
			t.Fatalf("the run ended (%v) before it could be killed; slow the fixture down\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no unit done after a minute\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	before := testdb.Count(t, db, "SELECT count(*) FROM parcels")
	if before == 0 || before >= want {
		t.Fatalf("%d features stored when killed, want some but not all %d", before, want)
	}

	fx.ResetStats()
	env := map[string]string{"GEOFLOW_DATABASE_URL": db}
	code, out, errs := geoflow(t, env, "run", flow, "--resume", "--progress", "off", "--log-level", "error")
	if code != 0 || !strings.Contains(out, "run 1 ") {
		t.Fatalf("resume: exit %d\n%s%s", code, out, errs)
	}
	checkComplete(t, db, want)
	if got, wantP := payloads(t, db), payloads(t, ref); !slices.Equal(got, wantP) {
		t.Errorf("resumed table differs from the uninterrupted one: %d vs %d rows", len(got), len(wantP))
	}
	// Tiles overlap at their edges, so a harvest serves more features than it stores; the
	// resume must still serve fewer than a whole harvest does, by about what was stored.
	if st := fx.Stats(); st.FeaturesServed > refStats.FeaturesServed-before/2 || st.GetFeature >= refStats.GetFeature {
		t.Errorf("resume fetched %d features in %d requests; a whole harvest fetches %d in %d and %d were stored before the kill",
			st.FeaturesServed, st.GetFeature, refStats.FeaturesServed, refStats.GetFeature, before)
	}
}

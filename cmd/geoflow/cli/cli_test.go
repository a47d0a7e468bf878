package cli_test

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/cmd/geoflow/cli"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// geoflow runs the CLI in-process and returns its exit code, stdout and stderr.
func geoflow(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	var out, errb bytes.Buffer
	code := cli.Main(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func writeFlow(t *testing.T, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "flow.yaml")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestHelpListsCommands(t *testing.T) {
	code, out, _ := geoflow(t, nil, "--help")
	for _, c := range []string{"run", "validate", "migrate", "version", "dev"} {
		if !strings.Contains(out, "\n  "+c+" ") {
			t.Errorf("--help does not list %q:\n%s", c, out)
		}
	}
	if code != 0 {
		t.Errorf("exit %d", code)
	}
}

// TestNewcomerPapercuts: what a new user typed and got wrong answers to.
func TestNewcomerPapercuts(t *testing.T) {
	empty := t.TempDir()
	tests := []struct {
		name      string
		args      []string
		code      int
		out, errs string
	}{
		{name: "--version", args: []string{"--version"}, code: 0, out: "geoflow dev ("},
		{name: "a bad --log-format, even for a command that never logs", args: []string{"--log-format", "xml", "version"}, code: 1,
			errs: `--log-format "xml": use text or json`},
		{name: "a bad --log-level", args: []string{"--log-level", "loud", "validate", "x.yaml"}, code: 1, errs: `--log-level "loud"`},
		{name: "validate a directory", args: []string{"validate", "../../../flows"}, code: 0, out: "flows/parcels.yaml: ok"},
		{name: "validate a directory without flows", args: []string{"validate", empty}, code: 1, errs: "a directory without flow files"},
		{name: "--resume=ID that is not a number", args: []string{"run", "../../../flows/parcels.yaml", "--resume=last", "--database", filepath.Join(empty, "x.gpkg")}, code: 1,
			errs: "--resume=last: want a run id"},
		{name: "--resume=ID of no run", args: []string{"run", "../../../flows/parcels.yaml", "--resume=7", "--database", filepath.Join(empty, "y.gpkg")}, code: 1,
			errs: `un 7 of flow "parcels" cannot be resumed`},
		{name: "sample servers for every sample flow", args: []string{"dev", "--help"}, code: 0, out: "stac"},
		{name: "dev tiles", args: []string{"dev", "tiles", "--help"}, code: 0, out: "flows/basemap.yaml"},
		{name: "dev wms", args: []string{"dev", "wms", "--help"}, code: 0, out: "flows/imagery.yaml"},
		// y.gpkg is the store the row above made (geoflow run creates one; runs list does not).
		{name: "runs list --status crashed", args: []string{"runs", "list", "--status", "crashed", "--database", filepath.Join(empty, "y.gpkg")}, code: 0, out: "no runs"},
		{name: "runs list of no store", args: []string{"runs", "list", "--database", filepath.Join(empty, "z.gpkg")}, code: 1, errs: "o store at " + filepath.Join(empty, "z.gpkg")},
		{name: "runs list --status bogus", args: []string{"runs", "list", "--status", "bogus", "--database", filepath.Join(empty, "x.gpkg")}, code: 1,
			errs: `--status "bogus": use running, done, incomplete, failed, interrupted or crashed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := geoflow(t, nil, tt.args...)
			if code != tt.code || !strings.Contains(out, tt.out) || !strings.Contains(errs, tt.errs) {
				t.Errorf("geoflow %s: exit %d\nstdout: %s\nstderr: %s\nwant exit %d, stdout with %q, stderr with %q",
					strings.Join(tt.args, " "), code, out, errs, tt.code, tt.out, tt.errs)
			}
		})
	}
}

func TestExampleFlowsValidate(t *testing.T) {
	files, _ := filepath.Glob("../../../flows/*.yaml")
	if len(files) == 0 {
		t.Fatal("no example flows in flows/")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if code, out, errs := geoflow(t, nil, "validate", f); code != 0 {
				t.Errorf("validate %s: exit %d\n%s%s", f, code, out, errs)
			}
		})
	}
}

func TestValidateReportsProblems(t *testing.T) {
	tests := []struct {
		name, flow string
		want       []string
	}{
		{name: "misspelled key", flow: `name: p
tasks:
  parcels:
    type: wfs
    url: https://example.org/wfs
    typname: parcels
    target: {table: parcels}
`, want: []string{`:6:5: unknown key "typname" in task "parcels" (did you mean "typename"?)`}},
		{name: "cycle", flow: `name: c
tasks:
  a: {type: wfs, url: "http://x/wfs", typename: t, target: {table: a}, depends_on: [b]}
  b: {type: wfs, url: "http://x/wfs", typename: t, target: {table: b}, depends_on: [a]}
`, want: []string{"dependency cycle: a -> b -> a"}},
		{name: "bad bbox and table", flow: `name: b
tasks:
  a: {type: wfs, url: "ftp://x", typename: t, bbox: [10, 50, 9, 95], target: {table: "a;drop table x"}}
`, want: []string{`url: "ftp://x" is not an http(s) URL`, "bbox:", `target.table: "a;drop table x" is not a table name`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := geoflow(t, nil, "validate", writeFlow(t, tt.flow))
			if code != cli.ExitError {
				t.Errorf("exit %d, want %d", code, cli.ExitError)
			}
			for _, w := range tt.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errs)
				}
			}
		})
	}
}

// TestDefaultGeoPackage: with no --database and no GEOFLOW_DATABASE_URL, geoflow run
// harvests into ./geoflow.gpkg, saying so in one line on stderr.
func TestDefaultGeoPackage(t *testing.T) {
	flow, err := os.ReadFile("../../../flows/parcels.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fx := wfsserver.New(wfsserver.Options{Features: 500, CountDefault: 200, ImplementsSorting: true})
	srv := httptest.NewServer(fx)
	defer srv.Close()
	path := writeFlow(t, string(flow))
	dir := t.TempDir()
	t.Chdir(dir)
	env := map[string]string{"GEOFLOW_DATABASE_URL": "", "WFS_URL": srv.URL + "/wfs"}
	code, out, errs := geoflow(t, env, "run", path, "--progress", "off", "--log-level", "warn")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	gpkg := filepath.Join(dir, "geoflow.gpkg")
	if want := "geoflow: no --database or GEOFLOW_DATABASE_URL: using the GeoPackage " + gpkg + "\n"; errs != want {
		t.Errorf("stderr %q, want %q", errs, want)
	}
	if _, err := os.Stat(gpkg); err != nil {
		t.Fatalf("no GeoPackage in the working directory: %v", err)
	}
	if n := testdb.Count(t, gpkg, "SELECT count(DISTINCT gf_feature_id) FROM parcels"); n != 500 || !strings.Contains(out, "500 inserted") {
		t.Errorf("./geoflow.gpkg holds %d features, want 500; run output %q", n, out)
	}
}

// TestDatabaseUnreachable: a database that does not answer is one line of error, which
// never shows the password.
func TestDatabaseUnreachable(t *testing.T) {
	code, _, errs := geoflow(t, nil, "--database", "postgres://u:hunter2@127.0.0.1:1/x?connect_timeout=2", "migrate", "status")
	if code != cli.ExitError || strings.Contains(errs, "hunter2") || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
		t.Errorf("exit %d; want one line without the password, got %q", code, errs)
	}
}

// eachStore runs test once against each store implementation, as river runs its driver
// tests against each driver: in a subtest named after the store, with the location of a
// new, empty store of that kind, as --database and GEOFLOW_DATABASE_URL take it.
func eachStore(t *testing.T, test func(t *testing.T, db string)) {
	for _, b := range testdb.Backends() {
		t.Run(b.Name, func(t *testing.T) { test(t, b.New(t)) })
	}
}

// tableExists tells whether the store at db has a table of that name.
func tableExists(t *testing.T, db, table string) bool {
	t.Helper()
	if !testdb.IsGeoPackage(db) {
		return testdb.Count(t, db, "SELECT count(*) FROM pg_tables WHERE tablename = $1", table) > 0
	}
	if _, err := os.Stat(db); err != nil {
		return false // not created yet; opening it to ask would create it
	}
	return testdb.Count(t, db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", table) > 0
}

func TestMigrateAndRun(t *testing.T) { eachStore(t, testMigrateAndRun) }

func testMigrateAndRun(t *testing.T, db string) {
	env := map[string]string{"GEOFLOW_DATABASE_URL": db}
	first := "001_runs"
	if testdb.IsGeoPackage(db) {
		first = "001_geopackage"
	}
	code, out, errs := geoflow(t, env, "migrate", "up")
	if code != 0 || !strings.Contains(out, "applied "+first) {
		t.Fatalf("migrate up: exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ = geoflow(t, env, "migrate", "up"); code != 0 || !strings.Contains(out, "up to date") {
		t.Errorf("second migrate up: exit %d, %q", code, out)
	}
	if code, out, _ = geoflow(t, env, "migrate", "status"); code != 0 || !strings.Contains(out, "001") {
		t.Errorf("migrate status: exit %d\n%s", code, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		// The APPLIED column; River's migration names hold the word (004 pending_and_more).
		if f := strings.Fields(line); len(f) > 0 && f[len(f)-1] == "pending" {
			t.Errorf("migrate status lists a pending migration after migrate up: %s", line)
		}
	}
	if !testdb.IsGeoPackage(db) && !strings.Contains(out, "river 001") {
		t.Errorf("migrate status does not list River's migrations (the job queue of distributed runs):\n%s", out)
	}

	fx := wfsserver.New(wfsserver.Options{Features: 1500, CountDefault: 400, ImplementsSorting: true})
	srv := httptest.NewServer(fx)
	defer srv.Close()
	flow, err := os.ReadFile("../../../flows/parcels.yaml")
	if err != nil {
		t.Fatal(err)
	}
	env["WFS_URL"] = srv.URL + "/wfs"
	code, out, errs = geoflow(t, env, "run", writeFlow(t, string(flow)), "--progress", "off", "--log-level", "warn")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, "1500 inserted") || testdb.Count(t, db, "SELECT count(DISTINCT gf_feature_id) FROM parcels") != 1500 {
		t.Errorf("run output %q", out)
	}
}

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

func TestNoDatabase(t *testing.T) {
	code, _, errs := geoflow(t, map[string]string{"GEOFLOW_DATABASE_URL": ""}, "migrate", "status")
	if code != cli.ExitError || !strings.Contains(errs, "no database given") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	code, _, errs = geoflow(t, nil, "--database", "postgres://u:hunter2@127.0.0.1:1/x?connect_timeout=2", "migrate", "status")
	if code != cli.ExitError || strings.Contains(errs, "hunter2") || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
		t.Errorf("exit %d; want one line without the password, got %q", code, errs)
	}
}

func TestMigrateAndRun(t *testing.T) {
	db := testdb.URL(t)
	env := map[string]string{"GEOFLOW_DATABASE_URL": db}
	code, out, errs := geoflow(t, env, "migrate", "up")
	if code != 0 || !strings.Contains(out, "applied 001_runs") {
		t.Fatalf("migrate up: exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ = geoflow(t, env, "migrate", "up"); code != 0 || !strings.Contains(out, "up to date") {
		t.Errorf("second migrate up: exit %d, %q", code, out)
	}
	if code, out, _ = geoflow(t, env, "migrate", "status"); code != 0 || strings.Contains(out, "pending") || !strings.Contains(out, "001") {
		t.Errorf("migrate status: exit %d\n%s", code, out)
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
	if !strings.Contains(out, "1500 inserted") || testdb.Int64(t, db, "SELECT count(DISTINCT gf_feature_id) FROM parcels") != 1500 {
		t.Errorf("run output %q", out)
	}
}

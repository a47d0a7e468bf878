package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadOnlyCommandsCreateNoStore: the commands that read what runs left, given no
// store, say so and leave no geoflow.gpkg (nor a named GeoPackage) behind in the
// directory they were typed in; --schema is refused for a GeoPackage.
func TestReadOnlyCommandsCreateNoStore(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	env := map[string]string{"GEOFLOW_DATABASE_URL": ""}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"runs list", []string{"runs", "list"}, "no store at " + filepath.Join(dir, "geoflow.gpkg") + ": give --database"},
		{"runs show", []string{"runs", "show", "1"}, "no store at"},
		{"dlq list", []string{"dlq", "list"}, "no store at"},
		{"dlq stats", []string{"dlq", "stats"}, "no store at"},
		{"changes", []string{"changes", "1"}, "no store at"},
		{"export", []string{"export", "parcels", "out.fgb"}, "no store at"},
		{"migrate status", []string{"migrate", "status"}, "no store at"},
		{"a named GeoPackage", []string{"runs", "list", "--database", "other.gpkg"}, "no store at other.gpkg"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := geoflow(t, env, tc.args...)
			if code == 0 || !strings.Contains(strings.ToLower(errs), strings.ToLower(tc.want)) {
				t.Errorf("exit %d, stderr %q; want a failure saying %q (stdout %q)", code, errs, tc.want, out)
			}
			left, _ := os.ReadDir(dir)
			for _, e := range left {
				t.Errorf("%s left %s behind", tc.name, e.Name())
			}
		})
	}
	code, _, errs := geoflow(t, env, "runs", "list", "--database", "x.gpkg", "--schema", "meta")
	if code == 0 || !strings.Contains(errs, "only a PostgreSQL store has a bookkeeping schema") {
		t.Errorf("--schema with a GeoPackage: exit %d, %q", code, errs)
	}
}

package export

import (
	"path/filepath"
	"testing"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/wfs"
)

// TestPathFromFlow: a relative path is taken from the flow file's directory, as a SQL
// step's file is, whatever directory geoflow runs in; an absolute one is kept.
func TestPathFromFlow(t *testing.T) {
	var r tasks.Registry
	r.Register(wfs.Kind())
	r.Register(Kind())
	dir := t.TempDir()
	tests := []struct{ name, path, want string }{
		{name: "relative", path: "out/c.fgb", want: filepath.Join(dir, "out", "c.fgb")},
		{name: "up", path: "../c.fgb", want: filepath.Join(filepath.Dir(dir), "c.fgb")},
		{name: "absolute", path: "/srv/c.fgb", want: "/srv/c.fgb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "name: x\ntasks:\n" +
				"  parcels: {type: wfs, url: \"http://w/wfs\", typename: gf:parcels, target: {table: parcels, mode: mirror}}\n" +
				"  out: {type: export, changes: true, of: parcels, path: \"" + tt.path + "\", depends_on: [parcels]}\n"
			f, err := flows.Parse(filepath.Join(dir, "x.yaml"), []byte(src), flows.Options{Registry: &r})
			if err != nil {
				t.Fatal(err)
			}
			task, err := f.Task("out").Config.New("out")
			if err != nil {
				t.Fatal(err)
			}
			if got := task.(*Task).spec.Path; got != tt.want {
				t.Errorf("path %q is written to %s, want %s", tt.path, got, tt.want)
			}
		})
	}
}

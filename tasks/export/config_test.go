package export_test

import (
	"strings"
	"testing"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/export"
	"github.com/geoflow/geoflow/tasks/wfs"
)

func registry() *tasks.Registry {
	var r tasks.Registry
	r.Register(wfs.Kind())
	r.Register(export.Kind())
	return &r
}

// TestConfig: what a flow's export task may say, and the problems reported at their
// keys; an export depends on the task that writes its table, or the one whose changes
// it writes.
func TestConfig(t *testing.T) {
	const harvest = "  parcels: {type: wfs, url: \"http://w/wfs\", typename: gf:parcels, target: {table: parcels, mode: mirror}}\n"
	tests := []struct{ name, task, want string }{
		{"a table", "table: parcels, path: /tmp/p.fgb, depends_on: [parcels]", ""},
		{"a table of another flow", "table: elsewhere, path: /tmp/p.gpkg", ""},
		{"every key", "table: parcels, path: /tmp/p.x, format: geojsonseq, bbox: [11, 48, 12, 49], srs: 'EPSG:4326', columns: [a, b], where: \"a > 1\", depends_on: [parcels]", ""},
		{"changes", "changes: true, of: parcels, path: /tmp/c.geojsons, depends_on: [parcels]", ""},
		{"not after its table", "table: parcels, path: /tmp/p.fgb", `table parcels is written by task "parcels", which must run first: add it to depends_on`},
		{"not after its changes", "changes: true, of: parcels, path: /tmp/c.fgb", `of names "parcels", which must run first`},
		{"of an unknown task", "changes: true, of: parcel, path: /tmp/c.fgb", `no task "parcel" in this flow (did you mean "parcels"?)`},
		{"changes without of", "changes: true, path: /tmp/c.fgb", "changes: true needs of"},
		{"of without changes", "table: parcels, of: parcels, path: /tmp/c.fgb, depends_on: [parcels]", "add changes: true"},
		{"no table", "path: /tmp/c.fgb", "table (or changes: true with of, or query) is required"},
		{"no path", "table: parcels, depends_on: [parcels]", "path is required"},
		{"unknown extension", "table: parcels, path: /tmp/c.shp, depends_on: [parcels]", `no format for the extension ".shp"`},
		{"unknown format", "table: parcels, path: /tmp/c.fgb, format: kml, depends_on: [parcels]", `unknown format "kml"`},
		{"bad bbox", "table: parcels, path: /tmp/c.fgb, bbox: [48, 11, 49, 12, 3], depends_on: [parcels]", "bbox"},
		{"bad srs", "table: parcels, path: /tmp/c.fgb, srs: WGS84, depends_on: [parcels]", `srs "WGS84": want EPSG:n`},
		{"two statements", "table: parcels, path: /tmp/c.fgb, where: 'a = 1; drop table x', depends_on: [parcels]", "not one SQL expression"},
		{"a query", "query: 'select zone, geom from parcels', path: /tmp/q.fgb, depends_on: [parcels]", ""},
		{"a query of tables no task writes", "query: 'select * from zoning', path: /tmp/q.fgb, columns: [zone], srs: 'EPSG:3857'", ""},
		{"a query not after its table", "query: 'select * from \"Parcels\"', path: /tmp/q.fgb", `the query names parcels, the table task "parcels" writes, which must run first: add "parcels" to depends_on`},
		{"a query and a table", "query: 'select 1', table: parcels, path: /tmp/q.fgb, depends_on: [parcels]", "give one of table, changes and query"},
		{"a query and changes", "query: 'select 1', changes: true, of: parcels, path: /tmp/q.fgb, depends_on: [parcels]", "give one of table, changes and query"},
		{"a query and where", "query: 'select 1', where: 'a = 1', path: /tmp/q.fgb", "put the condition in the query"},
		{"a query and a bbox", "query: 'select 1', bbox: [11, 48, 12, 49], path: /tmp/q.fgb", "a bbox is not applied around a query"},
		{"two queries", "query: 'select 1; select 2', path: /tmp/q.fgb", "a second statement at line 1, column 11"},
		{"a write", "query: 'drop table parcels', path: /tmp/q.fgb", "DROP: a query reads"},
		{"an empty query", "query: ' ', path: /tmp/q.fgb", "query: empty"},
		{"where on changes", "changes: true, of: parcels, path: /tmp/c.fgb, where: 'a = 1', depends_on: [parcels]", "where selects rows of a table, not changes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "name: x\ntasks:\n" + harvest + "  out: {type: export, " + tt.task + "}\n"
			_, err := flows.Parse("x.yaml", []byte(src), flows.Options{Registry: registry()})
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("validation said %v; want %q", err, tt.want)
			}
		})
	}
}

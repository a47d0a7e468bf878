package cli_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/internal/devserver/stacserver"
	"github.com/geoflow/geoflow/internal/devserver/tileserver"
	"github.com/geoflow/geoflow/internal/devserver/wmsserver"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/imagery"
	"github.com/geoflow/geoflow/tasks/tiles"
)

// TestValidateOnline: validate --online asks each task's server and reports what does
// not fit at the key's line and column, exiting non-zero: a bbox with longitude and
// latitude swapped (naming the layer's extent), a misspelt layer (with the name meant),
// a server that cannot be reached (naming the task and the host). Without --online
// the same flows pass.
func TestValidateOnline(t *testing.T) {
	wms := httptest.NewServer(wmsserver.New(wmsserver.Options{}))
	defer wms.Close()
	down := httptest.NewServer(nil)
	down.Close()
	flow := func(url, layers, bbox string) string {
		return `name: ortho
tasks:
  ortho:
    type: imagery
    wms:
      url: ` + url + `/wms
      layers: ` + layers + `
      resolution: 10
    bbox: ` + bbox + `
    target:
      dir: ./imagery/ortho
      table: public.ortho_chips
`
	}
	tests := []struct {
		name, flow string
		code       int
		want       string
	}{
		{name: "fits", flow: flow(wms.URL, "ortho", "[11.57, 48.13, 11.58, 48.14]"), want: `ok (flow "ortho", 1 task)`},
		{name: "swapped bbox", flow: flow(wms.URL, "ortho", "[48.13, 11.57, 48.14, 11.58]"), code: 1,
			want: `flow.yaml:9:5: task "ortho": bbox: bbox 48.13,11.57,48.14,11.58 does not meet the extent of layer "ortho", 11.3,47.9,11.8,48.3 (longitude and latitude swapped?)`},
		{name: "misspelt layer", flow: flow(wms.URL, "orthp", "[11.57, 48.13, 11.58, 48.14]"), code: 1,
			want: `flow.yaml:7:7: task "ortho": wms.layers: the server has no layer "orthp" (did you mean "ortho"?)`},
		{name: "unreachable", flow: flow(down.URL, "ortho", "[11.57, 48.13, 11.58, 48.14]"), code: 1,
			want: `flow.yaml: task "ortho": asking ` + strings.TrimPrefix(down.URL, "http://") + `: `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFlow(t, tt.flow)
			code, out, errs := geoflow(t, nil, "validate", "--online", "--timeout", "3s", path)
			if code != tt.code || !strings.Contains(out+errs, tt.want) {
				t.Fatalf("exit %d, want %d and %q\n%s%s", code, tt.code, tt.want, out, errs)
			}
			if code, out, errs := geoflow(t, nil, "validate", path); code != 0 {
				t.Errorf("offline: exit %d\n%s%s", code, out, errs)
			}
		})
	}
}

var munich = orb.Bound{Min: orb.Point{11.45, 48.05}, Max: orb.Point{11.55, 48.15}}

// TestSnippetFlowsRun: what geoflow inspect --flow prints for a tile template, a WMTS
// layer, a WMS layer and a STAC collection is a flow that validate --online accepts and
// geoflow run runs unchanged, on either store.
func TestSnippetFlowsRun(t *testing.T) {
	eachStore(t, func(t *testing.T, db string) {
		tileSrv := httptest.NewServer(tileserver.New(tileserver.Options{Coverage: munich}))
		defer tileSrv.Close()
		wms := httptest.NewServer(wmsserver.New(wmsserver.Options{}))
		defer wms.Close()
		stac := httptest.NewServer(stacserver.New(stacserver.Options{Items: 4, AssetSize: 1000}))
		defer stac.Close()
		tests := []struct {
			name, url, layer string
			kind             tasks.Kind
		}{
			{name: "xyz", url: tileserver.TileURL(tileSrv.URL), layer: tiles.XYZLayer, kind: tiles.Kind()},
			{name: "wmts", url: tileserver.WMTSCapabilitiesURL(tileSrv.URL), layer: tileserver.WMTSLayer, kind: tiles.Kind()},
			{name: "wms", url: wms.URL + "/wms", layer: "ortho", kind: imagery.Kind()},
			{name: "stac", url: stac.URL, layer: "aerial", kind: imagery.Kind()},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				log := slog.New(slog.DiscardHandler)
				env := &tasks.Env{TaskID: "inspect", Logger: log, HTTP: retry.New(&retry.Options{Logger: log})}
				s, err := tt.kind.Inspect(context.Background(), env, tt.url)
				if err != nil {
					t.Fatal(err)
				}
				src, err := tt.kind.Snippet(s, tt.layer)
				if err != nil {
					t.Fatal(err)
				}
				dir := t.TempDir()
				t.Chdir(dir)
				if err := os.WriteFile(filepath.Join(dir, "flow.yaml"), []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
				if code, out, errs := geoflow(t, nil, "validate", "--online", "flow.yaml"); code != 0 {
					t.Fatalf("validate --online: exit %d\n%s%s\n%s", code, out, errs, src)
				}
				code, out, errs := geoflow(t, nil, "--database", db, "run", "flow.yaml", "--progress", "off", "--log-level", "warn")
				if code != 0 {
					t.Fatalf("run: exit %d\n%s%s\n%s", code, out, errs, src)
				}
			})
		}
	})
}

// TestInspectDetectsTilesAndImagery: geoflow inspect, told nothing but the URL, takes a
// tile template and a WMTS for tiles, a WMS and a STAC API (an OGC API too, by its
// conformance) for imagery, and describes each within 80 columns.
func TestInspectDetectsTilesAndImagery(t *testing.T) {
	tileSrv := httptest.NewServer(tileserver.New(tileserver.Options{Coverage: munich}))
	defer tileSrv.Close()
	wms := httptest.NewServer(wmsserver.New(wmsserver.Options{}))
	defer wms.Close()
	stac := httptest.NewServer(stacserver.New(stacserver.Options{Items: 4, AssetSize: 1000}))
	defer stac.Close()
	tests := []struct{ name, url, want, layer string }{
		{name: "xyz", url: tileserver.TileURL(tileSrv.URL), want: "XYZ tiles (type: tiles)", layer: "format png"},
		{name: "wmts", url: tileserver.WMTSCapabilitiesURL(tileSrv.URL), want: "WMTS 1.0.0 (type: tiles)", layer: "tiles  http"},
		{name: "wms", url: wms.URL + "/wms", want: "(type: imagery)", layer: "ortho"},
		{name: "stac", url: stac.URL, want: "STAC API", layer: "assets "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := geoflow(t, nil, "inspect", tt.url)
			if code != 0 || !strings.Contains(out, tt.want) || !strings.Contains(out, tt.layer) {
				t.Fatalf("exit %d; want %q and %q\n%s%s", code, tt.want, tt.layer, out, errs)
			}
			for _, line := range strings.Split(out, "\n") {
				if len([]rune(line)) > 80 {
					t.Errorf("line longer than 80 columns: %q", line)
				}
			}
		})
	}
}

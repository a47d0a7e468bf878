package imagery_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/internal/devserver/arcgisserver"
	"github.com/geoflow/geoflow/internal/devserver/stacserver"
	"github.com/geoflow/geoflow/internal/devserver/tileserver"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/devserver/wmsserver"
	"github.com/geoflow/geoflow/internal/testflow"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/imagery"
)

var bavaria = orb.Bound{Min: orb.Point{11.3, 47.9}, Max: orb.Point{11.8, 48.3}}

// probeEnv is the Env a caller (geoflow inspect, validate --online) gives: HTTP through
// the retry handler, no store.
func probeEnv() *tasks.Env {
	log := slog.New(slog.DiscardHandler)
	return &tasks.Env{Flow: "inspect", TaskID: "inspect", Logger: log, HTTP: retry.New(&retry.Options{Logger: log, Seed: 1}),
		Retry: retry.Policy{MaxAttempts: 2}}
}

// TestInspectWMS: a WMS's layers come with their title, CRSs, extent and formats, and
// MaxWidth/MaxHeight as the page limit, whether the URL is the service's base or its
// capabilities in 1.1.1.
func TestInspectWMS(t *testing.T) {
	srv := httptest.NewServer(wmsserver.New(wmsserver.Options{Layers: []string{"ortho", "dop20"}, GeoTIFF: true, MaxWidth: 1024, MaxHeight: 768}))
	defer srv.Close()
	tests := []struct {
		name, url, protocol string
		maxPage             int
	}{
		{name: "base URL, 1.3.0", url: srv.URL + "/wms", protocol: "WMS 1.3.0", maxPage: 1024 * 768},
		{name: "capabilities URL, 1.1.1", url: srv.URL + "/wms?SERVICE=WMS&REQUEST=GetCapabilities&VERSION=1.1.1", protocol: "WMS 1.1.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := imagery.Inspect(context.Background(), probeEnv(), tt.url)
			if err != nil {
				t.Fatal(err)
			}
			if s.Kind != "imagery" || s.Protocol != tt.protocol || s.MaxPage != tt.maxPage || len(s.Layers) != 2 {
				t.Fatalf("service = %+v", s)
			}
			l := s.Layers[0]
			if l.Name != "ortho" || l.Extent == nil || *l.Extent != bavaria || l.Count != -1 ||
				strings.Join(l.CRSs, " ") != "EPSG:3857 EPSG:4326" || strings.Join(l.Formats, " ") != "image/png image/jpeg image/geotiff" {
				t.Fatalf("layer = %+v (extent %v)", l, l.Extent)
			}
		})
	}
}

// TestInspectSTAC: a STAC API's collections come with their extent, item count (from
// numberMatched) and assets; paging, filters and sorting as its conformance declares.
func TestInspectSTAC(t *testing.T) {
	srv := httptest.NewServer(stacserver.New(stacserver.Options{Items: 12}))
	defer srv.Close()
	s, err := imagery.Inspect(context.Background(), probeEnv(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if s.Protocol != "STAC API 1.0.0" || s.Paging != "next links" || s.Sorting || strings.Join(s.Filters, ",") != "bbox,datetime" || len(s.Layers) != 1 {
		t.Fatalf("service = %+v", s)
	}
	l := s.Layers[0]
	if l.Name != "aerial" || l.Count != 12 || l.Extent == nil || *l.Extent != munich || len(l.Assets) != 2 || l.Assets[1].Name != "visual" {
		t.Fatalf("layer = %+v", l)
	}
}

// TestInspectNotThisKind: what is no WMS and no STAC API is left to the other kinds.
func TestInspectNotThisKind(t *testing.T) {
	tiles := httptest.NewServer(tileserver.New(tileserver.Options{}))
	defer tiles.Close()
	wfs := httptest.NewServer(wfsserver.New(wfsserver.Options{Features: 10}))
	defer wfs.Close()
	arcgis := httptest.NewServer(arcgisserver.New(arcgisserver.Options{Features: 10}))
	defer arcgis.Close()
	tests := []struct{ name, url string }{
		{name: "a WFS", url: wfs.URL + "/wfs"},
		{name: "an OGC API - Features", url: wfs.URL + "/ogcapi"},
		{name: "an ArcGIS feature layer", url: arcgis.URL + "/arcgis/rest/services/parcels/FeatureServer/0"},
		{name: "tile template", url: tiles.URL + "/{z}/{x}/{y}.png"},
		{name: "another OGC service", url: tiles.URL + "/wfs?SERVICE=WFS"},
		{name: "WMTS capabilities", url: tileserver.WMTSCapabilitiesURL(tiles.URL)},
		{name: "a tile server's root", url: tiles.URL + "/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := imagery.Inspect(context.Background(), probeEnv(), tt.url)
			if !errors.Is(err, tasks.ErrNotThisKind) {
				t.Fatalf("err = %v, want ErrNotThisKind", err)
			}
		})
	}
}

// TestSnippetRuns: the flow a snippet writes passes validation and runs, fetching
// something, for a WMS layer and a STAC collection.
func TestSnippetRuns(t *testing.T) {
	wms := httptest.NewServer(wmsserver.New(wmsserver.Options{}))
	defer wms.Close()
	stac := httptest.NewServer(stacserver.New(stacserver.Options{Items: 4, AssetSize: 1000}))
	defer stac.Close()
	tests := []struct{ name, url, layer string }{
		{name: "wms", url: wms.URL + "/wms", layer: "ortho"},
		{name: "stac", url: stac.URL, layer: "aerial"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := imagery.Inspect(context.Background(), probeEnv(), tt.url)
			if err != nil {
				t.Fatal(err)
			}
			src, err := imagery.Snippet(s, tt.layer)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			src = strings.ReplaceAll(src, "./imagery/", filepath.ToSlash(dir)+"/")
			h := newHarness(t, httptest.NewServer(nil))
			f, err := flows.Parse(filepath.Join(dir, "flow.yaml"), []byte(src), flows.Options{Registry: registry()})
			if err != nil {
				t.Fatalf("snippet does not validate: %v\n%s", err, src)
			}
			log := slog.New(slog.NewTextHandler(h.logs, nil))
			res, err := engine.Run(context.Background(), f, engine.RunOptions{Store: testflow.Stores(h.db), Logger: log,
				HTTP: retry.New(&retry.Options{Logger: log, Seed: 1})})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != store.Done || res.Summary.UnitsDone == 0 || res.Summary.Bytes == 0 {
				t.Fatalf("run = %s, %+v\n%s\n%s", res.Status, res.Summary, src, tail(h.logs.String()))
			}
		})
	}
}

// problems records what an online check reports, as "key: message".
type problems []string

func (p *problems) At(key, format string, args ...any) {
	*p = append(*p, key+": "+fmt.Sprintf(format, args...))
}

// TestCheckOnline: the layer, format, CRS, collection and assets a task asks for must be
// offered, and its bbox meet the advertised extent.
func TestCheckOnline(t *testing.T) {
	wms := httptest.NewServer(wmsserver.New(wmsserver.Options{}))
	defer wms.Close()
	stac := httptest.NewServer(stacserver.New(stacserver.Options{}))
	defer stac.Close()
	inside := &[4]float64{11.5, 48.1, 11.6, 48.2}
	tests := []struct {
		name string
		cfg  imagery.Config
		want []string // substrings of the problems, in order; none for a pass
	}{
		{name: "wms ok", cfg: imagery.Config{WMS: &imagery.WMS{URL: wms.URL, Layers: "ortho", Resolution: 1}, BBox: inside}},
		{name: "wms swapped bbox", cfg: imagery.Config{WMS: &imagery.WMS{URL: wms.URL, Layers: "ortho", Resolution: 1}, BBox: &[4]float64{48.1, 11.5, 48.2, 11.6}},
			want: []string{`bbox: bbox 48.1,11.5,48.2,11.6 does not meet the extent of layer "ortho", 11.3,47.9,11.8,48.3 (longitude and latitude swapped?)`}},
		{name: "wms misspelt layer", cfg: imagery.Config{WMS: &imagery.WMS{URL: wms.URL, Layers: "orthi", Resolution: 1}, BBox: inside},
			want: []string{`wms.layers: the server has no layer "orthi" (did you mean "ortho"?)`}},
		{name: "wms format not offered", cfg: imagery.Config{WMS: &imagery.WMS{URL: wms.URL, Layers: "ortho", Format: "image/webp", Resolution: 1}, BBox: inside},
			want: []string{`wms.format: wms.format "image/webp": the server offers image/png, image/jpeg`}},
		{name: "stac ok", cfg: imagery.Config{STAC: &imagery.STAC{URL: stac.URL, Collections: []string{"aerial"}}, BBox: inside}},
		{name: "stac misspelt collection", cfg: imagery.Config{STAC: &imagery.STAC{URL: stac.URL, Collections: []string{"aerail"}}, BBox: inside},
			want: []string{`stac.collections: the API has no collection "aerail" (did you mean "aerial"?)`}},
		{name: "stac asset and area", cfg: imagery.Config{STAC: &imagery.STAC{URL: stac.URL, Collections: []string{"aerial"}, Assets: []string{"visaul"}},
			BBox: &[4]float64{2, 48, 3, 49}},
			want: []string{`stac.assets: collection "aerial" has no asset "visaul" (did you mean "visual"?)`, `bbox: bbox 2,48,3,49 does not meet the extent of layer "aerial"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p problems
			if err := tt.cfg.CheckOnline(context.Background(), probeEnv(), &p); err != nil {
				t.Fatal(err)
			}
			if len(p) != len(tt.want) {
				t.Fatalf("problems = %q, want %q", p, tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(p[i], w) {
					t.Errorf("problem %d = %q, want %q", i, p[i], w)
				}
			}
		})
	}
}

// TestCheckOnlineUnreachable: a server that cannot be asked is an error, not a problem.
func TestCheckOnlineUnreachable(t *testing.T) {
	srv := httptest.NewServer(nil)
	srv.Close()
	cfg := imagery.Config{WMS: &imagery.WMS{URL: srv.URL, Layers: "ortho", Resolution: 1}}
	var p problems
	err := cfg.CheckOnline(context.Background(), probeEnv(), &p)
	if err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(srv.URL, "http://")) {
		t.Fatalf("err = %v, want one naming the host", err)
	}
}

// TestPlanRefusesAreaOutsideExtent: a task whose area misses its layer's (or its
// collection's) advertised extent fails at planning, naming both, and fetches nothing.
func TestPlanRefusesAreaOutsideExtent(t *testing.T) {
	tests := []struct {
		name string
		srv  *httptest.Server
		task string
	}{
		{name: "wms", srv: httptest.NewServer(wmsserver.New(wmsserver.Options{})), task: `
  ortho:
    type: imagery
    wms: {url: $URL/wms, layers: ortho, resolution: 10}
    bbox: [48.05, 11.45, 48.15, 11.55]
    target: {dir: $DIR/ortho, table: public.plan_extent_chips}
`},
		{name: "stac", srv: httptest.NewServer(stacserver.New(stacserver.Options{})), task: `
  ortho:
    type: imagery
    stac: {url: $URL, collections: [aerial]}
    bbox: [48.05, 11.45, 48.15, 11.55]
    target: {dir: $DIR/scenes, table: public.plan_extent_scenes}
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.srv)
			res := h.run(tt.task, engine.RunOptions{})
			msg := res.FailedTasks["ortho"]
			if res.Status != store.Failed || !strings.Contains(msg, "does not meet the extent") || !strings.Contains(msg, "swapped?") {
				t.Fatalf("run = %s, failed %q\n%s", res.Status, msg, tail(h.logs.String()))
			}
		})
	}
}

// TestServiceJSON logs each fixture's description and snippet, for the record (go test -v).
func TestServiceJSON(t *testing.T) {
	wms := httptest.NewServer(wmsserver.New(wmsserver.Options{GeoTIFF: true}))
	defer wms.Close()
	stac := httptest.NewServer(stacserver.New(stacserver.Options{}))
	defer stac.Close()
	for _, u := range []string{wms.URL + "/wms", stac.URL} {
		s, err := imagery.Inspect(context.Background(), probeEnv(), u)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.MarshalIndent(s, "", "  ")
		src, err := imagery.Snippet(s, s.Layers[0].Name)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s\n%s", b, src)
	}
}

package tiles_test

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
	"time"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/internal/devserver/stacserver"
	"github.com/geoflow/geoflow/internal/devserver/tileserver"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/devserver/wmsserver"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/tiles"
)

// probeEnv is the Env a caller (geoflow inspect, validate --online) gives: HTTP through
// the retry handler, no store.
func probeEnv() *tasks.Env {
	log := slog.New(slog.DiscardHandler)
	return &tasks.Env{Flow: "inspect", TaskID: "inspect", Logger: log, HTTP: retry.New(&retry.Options{Logger: log, Seed: 1}),
		Retry: retry.Policy{MaxAttempts: 2}}
}

// TestInspectXYZ: a template's tile 0/0/0 is fetched and described (format, size, cache
// headers), with the quota headers the server sent.
func TestInspectXYZ(t *testing.T) {
	srv := httptest.NewServer(tileserver.New(tileserver.Options{Quota: &tileserver.Quota{Limit: 100, Window: time.Minute, Headers: true}}))
	defer srv.Close()
	s, err := tiles.Inspect(context.Background(), probeEnv(), tileserver.TileURL(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	if s.Kind != "tiles" || s.Protocol != "XYZ tiles" || len(s.Layers) != 1 || s.Layers[0].Template != tileserver.TileURL(srv.URL) ||
		strings.Join(s.Layers[0].Formats, ",") != "png" {
		t.Fatalf("service = %+v", s)
	}
	if len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "tile 0/0/0: image/png") || !strings.Contains(s.Notes[0], "Cache-Control: max-age=86400") {
		t.Errorf("notes = %q", s.Notes)
	}
	var names []string
	for _, h := range s.RateLimit {
		names = append(names, h.Name)
	}
	if strings.Join(names, ",") != "X-Ratelimit-Limit,X-Ratelimit-Remaining,X-Ratelimit-Reset" {
		t.Errorf("rate limit headers = %+v", s.RateLimit)
	}
}

// TestInspectWMTS: a WMTS's layers come with title, formats, tile matrix sets, zooms,
// extent and a template, from the KVP and the RESTful capabilities alike.
func TestInspectWMTS(t *testing.T) {
	srv := httptest.NewServer(tileserver.New(tileserver.Options{Coverage: munich, MaxZoom: 18}))
	defer srv.Close()
	tests := []struct{ name, url, template string }{
		{name: "kvp", url: srv.URL + "/wmts", template: srv.URL + "/wmts/rest/basemap/default/GoogleMapsCompatible/{TileMatrix}/{TileRow}/{TileCol}.png"},
		{name: "restful", url: tileserver.WMTSCapabilitiesURL(srv.URL), template: srv.URL + "/wmts/rest/basemap/default/GoogleMapsCompatible/{TileMatrix}/{TileRow}/{TileCol}.png"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := tiles.Inspect(context.Background(), probeEnv(), tt.url)
			if err != nil {
				t.Fatal(err)
			}
			if s.Protocol != "WMTS 1.0.0" || s.Title != "fixture tiles" || len(s.Layers) != 1 {
				t.Fatalf("service = %+v", s)
			}
			l := s.Layers[0]
			if l.Name != "basemap" || l.Title != "Basemap" || l.Zooms != "0-18" || l.Extent == nil || *l.Extent != munich ||
				strings.Join(l.TileMatrixSets, ",") != "GoogleMapsCompatible" || strings.Join(l.Formats, ",") != "image/png" || l.Template != tt.template {
				t.Fatalf("layer = %+v", l)
			}
		})
	}
}

// TestInspectNotThisKind: what is no tile template and no WMTS (a WMS, a WFS, an OGC API,
// a STAC API) is left to other kinds.
func TestInspectNotThisKind(t *testing.T) {
	wms := httptest.NewServer(wmsserver.New(wmsserver.Options{}))
	defer wms.Close()
	wfs := httptest.NewServer(wfsserver.New(wfsserver.Options{Features: 10}))
	defer wfs.Close()
	stac := httptest.NewServer(stacserver.New(stacserver.Options{}))
	defer stac.Close()
	tests := []struct{ name, url string }{
		{name: "a WMS", url: wms.URL + "/wms"},
		{name: "WMS capabilities", url: wms.URL + "/wms?SERVICE=WMS&REQUEST=GetCapabilities"},
		{name: "a template without z/x/y", url: wms.URL + "/{a}/{b}"},
		{name: "a WFS", url: wfs.URL + "/wfs"},
		{name: "an OGC API - Features", url: wfs.URL + "/ogcapi"},
		{name: "a STAC API", url: stac.URL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tiles.Inspect(context.Background(), probeEnv(), tt.url); !errors.Is(err, tasks.ErrNotThisKind) {
				t.Fatalf("err = %v, want ErrNotThisKind", err)
			}
		})
	}
}

// TestSnippetRuns: a snippet's flow validates and mirrors tiles, for an XYZ template and
// a WMTS layer (RESTful template).
func TestSnippetRuns(t *testing.T) {
	tests := []struct{ name, path, layer string }{
		{name: "xyz", path: "/{z}/{x}/{y}.png", layer: tiles.XYZLayer},
		{name: "wmts", path: "/wmts", layer: "basemap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tileserver.Options{Coverage: munich})
			s, err := tiles.Inspect(context.Background(), probeEnv(), h.srv.URL+tt.path)
			if err != nil {
				t.Fatal(err)
			}
			src, err := tiles.Snippet(s, tt.layer)
			if err != nil {
				t.Fatal(err)
			}
			src = strings.ReplaceAll(src, "./tiles/", filepath.ToSlash(h.dir)+"/")
			f, err := flows.Parse(filepath.Join(h.dir, "flow.yaml"), []byte(src), flows.Options{Registry: registry()})
			if err != nil {
				t.Fatalf("snippet does not validate: %v\n%s", err, src)
			}
			res := h.run(f, engine.RunOptions{})
			if res.Status != store.Done || h.fx.Stats().OK == 0 {
				t.Fatalf("run = %s, %+v\n%s\n%s", res.Status, res.Summary, src, h.logs.String())
			}
		})
	}
}

// problems records what an online check reports, as "key: message".
type problems []string

func (p *problems) At(key, format string, args ...any) {
	*p = append(*p, key+": "+fmt.Sprintf(format, args...))
}

// TestCheckOnline: a WMTS KVP template's layer, format and tile matrix set must be in the
// capabilities and its bbox meet the layer's extent; another template's first tile at
// the centre of the bbox must be an image, or missing with missing_ok.
func TestCheckOnline(t *testing.T) {
	srv := httptest.NewServer(tileserver.New(tileserver.Options{Coverage: munich}))
	defer srv.Close()
	kvp := srv.URL + "/wmts?SERVICE=WMTS&REQUEST=GetTile&LAYER=%s&STYLE=default&TILEMATRIXSET=GoogleMapsCompatible&FORMAT=image/png&TILEMATRIX={TileMatrix}&TILEROW={TileRow}&TILECOL={TileCol}"
	inside, swapped, sea := &[4]float64{11.46, 48.06, 11.5, 48.1}, &[4]float64{48.06, 11.46, 48.1, 11.5}, &[4]float64{-30, 30, -29, 31}
	tests := []struct {
		name      string
		url       string
		bbox      *[4]float64
		missingOK bool
		want      []string
	}{
		{name: "wmts ok", url: fmt.Sprintf(kvp, "basemap"), bbox: inside},
		{name: "wmts misspelt layer", url: fmt.Sprintf(kvp, "basemep"), bbox: inside, want: []string{`url: LAYER=basemep: the WMTS has no such layer (did you mean "basemap"?)`}},
		{name: "wmts swapped bbox", url: fmt.Sprintf(kvp, "basemap"), bbox: swapped, want: []string{`bbox: bbox 48.06,11.46,48.1,11.5 does not meet the extent of layer "basemap", 11.45,48.05,11.55,48.15 (longitude and latitude swapped?)`}},
		{name: "wmts format", url: strings.Replace(fmt.Sprintf(kvp, "basemap"), "image/png", "image/webp", 1), bbox: inside, want: []string{`url: FORMAT=image/webp: layer "basemap" is served as image/png`}},
		{name: "xyz ok", url: tileserver.TileURL(srv.URL), bbox: inside},
		{name: "xyz outside, missing_ok", url: tileserver.TileURL(srv.URL), bbox: sea, missingOK: true},
		{name: "xyz outside", url: tileserver.TileURL(srv.URL), bbox: sea, want: []string{"url: tile 10/428/420 (the first zoom level, at the centre of bbox): the server answered 404"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tiles.NewConfig()
			cfg.URL, cfg.BBox, cfg.Zoom, cfg.MissingOK = tt.url, tt.bbox, []int{10, 12}, tt.missingOK
			var p problems
			if err := cfg.CheckOnline(context.Background(), probeEnv(), &p); err != nil {
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

// TestPlanRefusesAreaOutsideExtent: a WMTS KVP task whose area misses the layer's
// extent fails at planning, naming both, and fetches no tile.
func TestPlanRefusesAreaOutsideExtent(t *testing.T) {
	h := newHarness(t, tileserver.Options{Coverage: munich})
	f := h.flow(`  basemap:
    type: tiles
    url: "$URL/wmts?SERVICE=WMTS&REQUEST=GetTile&LAYER=basemap&TILEMATRIXSET=GoogleMapsCompatible&FORMAT=image/png&TILEMATRIX={TileMatrix}&TILEROW={TileRow}&TILECOL={TileCol}"
    bbox: [48.05, 11.45, 48.15, 11.55]
    zoom: [10, 12]
    target: {dir: $DIR/tiles, table: public.plan_extent_tiles}
`)
	res := h.run(f, engine.RunOptions{})
	msg := res.FailedTasks["basemap"]
	if res.Status != store.Failed || !strings.Contains(msg, "does not meet the extent") || h.fx.Stats().OK != 0 {
		t.Fatalf("run = %s, failed %q, tiles served %d\n%s", res.Status, msg, h.fx.Stats().OK, h.logs.String())
	}
}

// TestServiceJSON logs each fixture's description and snippet, for the record (go test -v).
func TestServiceJSON(t *testing.T) {
	srv := httptest.NewServer(tileserver.New(tileserver.Options{Coverage: munich, MaxZoom: 18,
		Quota: &tileserver.Quota{Limit: 100, Window: time.Minute, Headers: true}}))
	defer srv.Close()
	for _, u := range []string{tileserver.TileURL(srv.URL), tileserver.WMTSCapabilitiesURL(srv.URL)} {
		s, err := tiles.Inspect(context.Background(), probeEnv(), u)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.MarshalIndent(s, "", "  ")
		src, err := tiles.Snippet(s, s.Layers[0].Name)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s\n%s", b, src)
	}
}

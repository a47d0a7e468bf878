package arcgis_test

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/internal/devserver/arcgisserver"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/arcgis"
)

// inspectEnv is what geoflow inspect and validate --online give a kind: the rate-limit
// handler, no store.
func inspectEnv() *tasks.Env {
	log := slog.New(slog.DiscardHandler)
	return &tasks.Env{Logger: log, HTTP: retry.New(&retry.Options{Logger: log}), Retry: retry.Policy{MaxAttempts: 2}}
}

// TestInspect: the ArcGIS emulator is described from its service and layer documents and
// a count, whether the service's URL or its layer's is given.
func TestInspect(t *testing.T) {
	fx := arcgisserver.New(arcgisserver.Options{Features: 300, MaxRecordCount: 200})
	srv := httptest.NewServer(fx)
	defer srv.Close()
	svc := srv.URL + "/arcgis/rest/services/Parcels/FeatureServer"
	for _, u := range []string{svc, svc + "/", svc + "/0?f=pjson", svc + "/0/query"} {
		t.Run(u, func(t *testing.T) {
			s, err := arcgis.Inspect(t.Context(), inspectEnv(), u)
			if err != nil {
				t.Fatal(err)
			}
			if s.Kind != "arcgis_features" || s.URL != svc || s.MaxPage != 200 || !s.Sorting || len(s.Layers) != 1 ||
				!strings.HasPrefix(s.Protocol, "ArcGIS FeatureServer 11") {
				t.Fatalf("got %+v", s)
			}
			l := s.Layers[0]
			if l.Name != "0" || l.Title != "Parcels" || l.Count != 300 || l.Extent == nil || l.Geometry != "Polygon" ||
				!slices.ContainsFunc(l.Fields, func(f tasks.Field) bool { return f.Name == "parcel_id" }) {
				t.Errorf("layer %+v", l)
			}
		})
	}
}

// TestInspectBadAnswers: a URL that names no service, or answers what no ArcGIS server
// would, lets the next kind try; a token refused is the service's answer.
func TestInspectBadAnswers(t *testing.T) {
	fx := arcgisserver.New(arcgisserver.Options{Features: 10, Token: "sesame"})
	srv := httptest.NewServer(fx)
	defer srv.Close()
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html>Sign in</html>")
	}))
	defer html.Close()
	tests := []struct {
		name    string
		url     string
		notThis bool
		want    string
	}{
		{name: "no service path", url: srv.URL + "/wfs", notThis: true, want: "names no .../FeatureServer"},
		{name: "HTML page", url: html.URL + "/arcgis/rest/services/P/MapServer", notThis: true, want: "not JSON"},
		{name: "token required", url: srv.URL + "/arcgis/rest/services/Parcels/FeatureServer", want: "Token Required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := arcgis.Inspect(t.Context(), inspectEnv(), tt.url)
			if err == nil || errors.Is(err, tasks.ErrNotThisKind) != tt.notThis || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v; want not this kind %v, saying %q", err, tt.notThis, tt.want)
			}
		})
	}
}

// problems collects what a check reports, by key.
type problems map[string][]string

func (p problems) At(key, format string, args ...any) {
	p[key] = append(p[key], fmt.Sprintf(format, args...))
}

// TestCheckOnline: an arcgis_features task resolved against the emulator's layer
// document, no feature fetched.
func TestCheckOnline(t *testing.T) {
	fx := arcgisserver.New(arcgisserver.Options{Features: 50})
	srv := httptest.NewServer(fx)
	defer srv.Close()
	layer := srv.URL + "/arcgis/rest/services/Parcels/FeatureServer/0"
	tests := []struct {
		name string
		edit func(c *arcgis.Config)
		key  string
		want string
	}{
		{name: "ok", edit: func(c *arcgis.Config) {}},
		{name: "no such layer", edit: func(c *arcgis.Config) { c.URL = strings.TrimSuffix(layer, "0") + "3" }, key: "url", want: "no layer 3 (it has 0 (Parcels))"},
		{name: "bbox swapped", edit: func(c *arcgis.Config) { c.BBox = &[4]float64{48.06, 11.46, 48.10, 11.5} }, key: "bbox", want: "longitude and latitude swapped?"},
		{name: "out_fields typo", edit: func(c *arcgis.Config) { c.OutFields = []string{"parcel_id", "landuse"} }, key: "out_fields", want: `did you mean "land_use"?`},
		{name: "transform names a missing field", edit: func(c *arcgis.Config) { c.Transform.Where = "nosuch = 1" }, key: "transform", want: "nosuch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := arcgis.NewConfig()
			c.URL, c.Target.Table = layer, "p"
			c.BBox = &[4]float64{11.46, 48.06, 11.5, 48.1}
			tt.edit(c)
			before := fx.Stats().Queries
			p := problems{}
			if err := c.CheckOnline(t.Context(), inspectEnv(), p); err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.key == "" && len(p) > 0:
				t.Errorf("problems %v", p)
			case tt.key != "" && !slices.ContainsFunc(p[tt.key], func(m string) bool { return strings.Contains(m, tt.want) }):
				t.Errorf("problems %v; want %q at %s", p, tt.want, tt.key)
			}
			if n := fx.Stats().Queries - before; n != 0 {
				t.Errorf("%d queries", n)
			}
		})
	}
}

// TestPlanRefusesAreaOutsideExtent: a bbox that does not meet the layer's extent fails
// the plan, naming the extent, before any query.
func TestPlanRefusesAreaOutsideExtent(t *testing.T) {
	fx := arcgisserver.New(arcgisserver.Options{Features: 50})
	srv := httptest.NewServer(fx)
	defer srv.Close()
	c := arcgis.NewConfig()
	c.URL, c.Target.Table = srv.URL+"/arcgis/rest/services/Parcels/FeatureServer/0", "p"
	c.BBox = &[4]float64{48.06, 11.46, 48.10, 11.5}
	task, err := c.New("parcels")
	if err != nil {
		t.Fatal(err)
	}
	_, err = task.Plan(t.Context(), inspectEnv())
	if !tasks.IsExtentError(err) || !strings.Contains(err.Error(), "longitude and latitude swapped?") || !strings.Contains(err.Error(), `layer "Parcels", 11.4`) {
		t.Fatalf("Plan: %v; want an extent error naming the extent", err)
	}
	if n := fx.Stats().Queries; n != 0 {
		t.Errorf("%d queries", n)
	}
}

package ogcapi_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/ogcapi"
)

// inspectEnv is what geoflow inspect and validate --online give a kind: the rate-limit
// handler, no store.
func inspectEnv() *tasks.Env {
	return &tasks.Env{Logger: discard(), HTTP: retry.New(&retry.Options{Logger: discard()}), Retry: retry.Policy{MaxAttempts: 2}}
}

// TestInspect: the sample OGC API is described from its landing page, conformance,
// collections, OpenAPI document and a one-feature page, whichever URL of it is given.
func TestInspect(t *testing.T) {
	fx := wfsserver.New(wfsserver.Options{Features: 300, CountDefault: 250})
	srv := httptest.NewServer(fx)
	defer srv.Close()
	for _, u := range []string{"/ogcapi", "/ogcapi/?f=json", "/ogcapi/collections/parcels/items"} {
		t.Run(u, func(t *testing.T) {
			s, err := ogcapi.Inspect(t.Context(), inspectEnv(), srv.URL+u)
			if err != nil {
				t.Fatal(err)
			}
			if s.Kind != "ogcapi_features" || s.URL != srv.URL+"/ogcapi" || s.MaxPage != 250 || len(s.Layers) != 1 || !strings.HasPrefix(s.Paging, "next links") {
				t.Fatalf("got %+v", s)
			}
			l := s.Layers[0]
			if l.Name != "parcels" || l.Count != 300 || l.Extent == nil || l.Geometry != "Polygon" ||
				!slices.ContainsFunc(l.Fields, func(f tasks.Field) bool { return f.Name == "parcel_id" }) {
				t.Errorf("layer %+v", l)
			}
		})
	}
}

// TestInspectBadAnswers: what is not an OGC API lets the next kind try, saying what came
// back; a refusal is the service's answer.
func TestInspectBadAnswers(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		ctype   string
		body    string
		notThis bool
		want    string
	}{
		{name: "HTML page", status: 200, ctype: "text/html", body: "<html>hello</html>", notThis: true, want: "(html)"},
		{name: "XML", status: 200, ctype: "application/xml", body: "<WFS_Capabilities/>", notThis: true, want: "not the JSON document expected"},
		{name: "JSON without links", status: 200, ctype: "application/json", body: `{"currentVersion": 11.1}`, notThis: true, want: "not an OGC API landing page"},
		{name: "404", status: 404, ctype: "text/plain", body: "no", notThis: true, want: "404"},
		{name: "401", status: 401, ctype: "application/json", body: `{"code":"Unauthorized","description":"an API key is required"}`, want: "an API key is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.ctype)
				w.WriteHeader(tt.status)
				fmt.Fprint(w, tt.body)
			}))
			defer srv.Close()
			_, err := ogcapi.Inspect(t.Context(), inspectEnv(), srv.URL+"/api?apikey=hunter2")
			if err == nil || errors.Is(err, tasks.ErrNotThisKind) != tt.notThis || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v; want not this kind %v, saying %q", err, tt.notThis, tt.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the key leaks: %v", err)
			}
		})
	}
}

// problems collects what a check reports, by key.
type problems map[string][]string

func (p problems) At(key, format string, args ...any) {
	p[key] = append(p[key], fmt.Sprintf(format, args...))
}

// TestCheckOnline: an ogcapi_features task resolved against the sample OGC API without a
// page of features beyond one.
func TestCheckOnline(t *testing.T) {
	fx := wfsserver.New(wfsserver.Options{Features: 50})
	srv := httptest.NewServer(fx)
	defer srv.Close()
	tests := []struct {
		name string
		edit func(c *ogcapi.Config)
		key  string
		want string
	}{
		{name: "ok", edit: func(c *ogcapi.Config) {}},
		{name: "collection typo", edit: func(c *ogcapi.Config) { c.Collection = "parcel" }, key: "collection", want: `did you mean "parcels"?`},
		{name: "bbox swapped", edit: func(c *ogcapi.Config) { c.BBox = &[4]float64{48.06, 11.46, 48.10, 11.5} }, key: "bbox", want: "longitude and latitude swapped?"},
		{name: "crs not offered", edit: func(c *ogcapi.Config) { c.CRS = "EPSG:3857" }, key: "crs", want: "Part 2"},
		{name: "filter without CQL2", edit: func(c *ogcapi.Config) { c.Filter = "zone = 'R1'" }, key: "filter", want: "CQL2"},
		{name: "transform names a missing property", edit: func(c *ogcapi.Config) { c.Transform.Where = "nosuch = 1" }, key: "transform", want: "nosuch"},
		{name: "property missing", edit: func(c *ogcapi.Config) { c.Properties = []string{"parcel_id", "zones"} }, key: "properties", want: `did you mean "zone"?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ogcapi.NewConfig()
			c.URL, c.Collection, c.Target.Table = srv.URL+"/ogcapi", "parcels", "p"
			c.BBox = &[4]float64{11.46, 48.06, 11.5, 48.1}
			tt.edit(c)
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
		})
	}
}

// TestPlanRefusesAreaOutsideExtent: a bbox that does not meet the collection's extent
// fails the plan, naming the extent.
func TestPlanRefusesAreaOutsideExtent(t *testing.T) {
	fx := wfsserver.New(wfsserver.Options{Features: 50})
	srv := httptest.NewServer(fx)
	defer srv.Close()
	c := ogcapi.NewConfig()
	c.URL, c.Collection, c.Target.Table = srv.URL+"/ogcapi", "parcels", "p"
	c.BBox = &[4]float64{48.06, 11.46, 48.10, 11.5}
	task, err := c.New("parcels")
	if err != nil {
		t.Fatal(err)
	}
	_, err = task.Plan(t.Context(), inspectEnv())
	if !tasks.IsExtentError(err) || !strings.Contains(err.Error(), "longitude and latitude swapped?") || !strings.Contains(err.Error(), "11.45,48.05,11.55,48.15") {
		t.Fatalf("Plan: %v; want an extent error naming the extent", err)
	}
}

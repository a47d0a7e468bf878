package wfs_test

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/wfs"
)

// inspectEnv is what geoflow inspect and validate --online give a kind: the rate-limit
// handler, no store.
func inspectEnv() *tasks.Env {
	log := slog.New(slog.DiscardHandler)
	return &tasks.Env{Logger: log, HTTP: retry.New(&retry.Options{Logger: log}), Retry: retry.Policy{MaxAttempts: 2}}
}

// TestInspect: every flavor of the sample WFS is described as its capabilities,
// DescribeFeatureType and a count say.
func TestInspect(t *testing.T) {
	for _, flavor := range []string{"geoserver", "mapserver", "deegree", "qgis"} {
		t.Run(flavor, func(t *testing.T) {
			fx := wfsserver.New(wfsserver.Options{Features: 300, CountDefault: 100, ImplementsSorting: true, Flavor: flavor})
			srv := httptest.NewServer(fx)
			defer srv.Close()
			s, err := wfs.Inspect(t.Context(), inspectEnv(), srv.URL+"/wfs?SERVICE=WFS&REQUEST=GetCapabilities")
			if err != nil {
				t.Fatal(err)
			}
			if s.Kind != "wfs" || !strings.HasPrefix(s.Protocol, "WFS ") || s.URL != srv.URL+"/wfs" || len(s.Layers) != 1 {
				t.Fatalf("got %+v", s)
			}
			l := s.Layers[0]
			if l.Name != fx.TypeName() || l.Count != 300 || l.Extent == nil || l.Geometry == "" {
				t.Errorf("layer %+v; want %s with 300 features, an extent and a geometry type", l, fx.TypeName())
			}
			if !slices.ContainsFunc(l.Fields, func(f tasks.Field) bool { return f.Name == "parcel_id" }) {
				t.Errorf("fields %v lack parcel_id", l.Fields)
			}
			t.Logf("%s: %s, paging %q, page %d, filters %v, sorting %v, notes %v", flavor, s.Protocol, s.Paging, s.MaxPage, s.Filters, s.Sorting, s.Notes)
		})
	}
}

// TestInspectBadAnswers: what is not a WFS lets the next kind try, saying what came back;
// a refusal is the service's answer.
func TestInspectBadAnswers(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		ctype   string
		body    string
		notThis bool
		want    string
	}{
		{name: "HTML page", status: 200, ctype: "text/html", body: "<html><body>Welcome to nginx</body></html>", notThis: true, want: "HTML"},
		{name: "exception report", status: 400, ctype: "application/xml", notThis: true, want: "msWFSDispatch",
			body: `<ows:ExceptionReport xmlns:ows="http://www.opengis.net/ows/1.1" version="2.0.0"><ows:Exception exceptionCode="InvalidParameterValue"><ows:ExceptionText>msWFSDispatch(): WFS server error. Invalid service</ows:ExceptionText></ows:Exception></ows:ExceptionReport>`},
		{name: "another capabilities", status: 200, ctype: "application/xml", notThis: true, want: "WMS_Capabilities",
			body: `<WMS_Capabilities version="1.3.0"><Service><Title>x</Title></Service></WMS_Capabilities>`},
		{name: "403", status: 403, ctype: "text/plain", body: "forbidden", want: "403"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.ctype)
				w.WriteHeader(tt.status)
				fmt.Fprint(w, tt.body)
			}))
			defer srv.Close()
			_, err := wfs.Inspect(t.Context(), inspectEnv(), srv.URL+"/wfs?key=hunter2")
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

// TestCheckOnline: a wfs task resolved against the sample WFS without a feature fetched.
func TestCheckOnline(t *testing.T) {
	fx := wfsserver.New(wfsserver.Options{Features: 50})
	srv := httptest.NewServer(fx)
	defer srv.Close()
	tests := []struct {
		name string
		yaml func(c *wfs.Config)
		key  string
		want string
	}{
		{name: "ok", yaml: func(c *wfs.Config) {}},
		{name: "typename typo", yaml: func(c *wfs.Config) { c.TypeName = "gf:parcel" }, key: "typename", want: `did you mean "gf:parcels"?`},
		{name: "bbox swapped", yaml: func(c *wfs.Config) { c.BBox = &[4]float64{48.06, 11.46, 48.10, 11.5} },
			key: "bbox", want: "longitude and latitude swapped?"},
		{name: "bbox elsewhere", yaml: func(c *wfs.Config) { c.BBox = &[4]float64{2.2, 48.8, 2.4, 48.9} }, key: "bbox", want: "does not meet the extent"},
		{name: "srs refused", yaml: func(c *wfs.Config) { c.SRS = "EPSG:25832" }, key: "srs", want: "Unsupported srsName"},
		{name: "filter the server cannot evaluate", yaml: func(c *wfs.Config) { c.Filter = "<fes:Filter/>" }, key: "filter", want: "ImplementsMinStandardFilter"},
		{name: "transform names a missing property", yaml: func(c *wfs.Config) { c.Transform.Where = "nosuch = 1" }, key: "transform", want: "nosuch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := wfs.NewConfig()
			c.URL, c.TypeName, c.Target.Table = srv.URL+"/wfs", "gf:parcels", "p"
			c.BBox = &[4]float64{11.46, 48.06, 11.5, 48.1}
			tt.yaml(c)
			before := fx.Stats().GetFeature
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
			if n := fx.Stats().GetFeature - before; n != 0 {
				t.Errorf("%d features requests", n)
			}
		})
	}
}

// TestPlanRefusesAreaOutsideExtent: a bbox that does not meet the feature type's
// advertised extent fails the plan, naming the extent, before any count or feature.
func TestPlanRefusesAreaOutsideExtent(t *testing.T) {
	fx := wfsserver.New(wfsserver.Options{Features: 50})
	srv := httptest.NewServer(fx)
	defer srv.Close()
	c := wfs.NewConfig()
	c.URL, c.TypeName, c.Target.Table = srv.URL+"/wfs", "gf:parcels", "p"
	c.BBox = &[4]float64{48.06, 11.46, 48.10, 11.5}
	task, err := c.New("parcels")
	if err != nil {
		t.Fatal(err)
	}
	_, err = task.Plan(t.Context(), inspectEnv())
	if !tasks.IsExtentError(err) || !strings.Contains(err.Error(), "longitude and latitude swapped?") || !strings.Contains(err.Error(), "11.4") {
		t.Fatalf("Plan: %v; want an extent error naming the extent", err)
	}
	if st := fx.Stats(); st.GetFeature+st.Hits != 0 {
		t.Errorf("%d feature and %d count requests", st.GetFeature, st.Hits)
	}
}

package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/tasks"
)

// TestInspectOrder: the kinds a URL's form names come first, then the cheap JSON probes,
// then GetCapabilities, then kinds this package knows nothing of, by name.
func TestInspectOrder(t *testing.T) {
	all := []string{"arcgis_features", "imagery", "ogcapi_features", "stac", "tiles", "wfs"}
	tests := []struct {
		name string
		url  string
		want []string
	}{
		{name: "no hint", url: "http://h/x",
			want: []string{"ogcapi_features", "arcgis_features", "wfs", "imagery", "stac", "tiles"}},
		{name: "service=WFS, any case", url: "http://h/mapserv?map=M&Service=wfs",
			want: []string{"wfs", "ogcapi_features", "arcgis_features", "imagery", "stac", "tiles"}},
		{name: "FeatureServer layer", url: "https://h/arcgis/rest/services/P/FeatureServer/3",
			want: []string{"arcgis_features", "ogcapi_features", "wfs", "imagery", "stac", "tiles"}},
		{name: "collections", url: "https://h/api/collections/roads",
			want: []string{"ogcapi_features", "arcgis_features", "wfs", "imagery", "stac", "tiles"}},
		{name: "service=WMS names kinds that may not be registered", url: "http://h/wms?SERVICE=WMS",
			want: []string{"imagery", "tiles", "ogcapi_features", "arcgis_features", "wfs", "stac"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tasks.InspectOrder(tt.url, all); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	if got := tasks.InspectOrder("http://h/x?service=WFS", []string{"tiles"}); !slices.Equal(got, []string{"tiles"}) {
		t.Errorf("a hinted kind not registered is tried: %v", got)
	}
}

// TestProbeError: what the server says of the client (401, 403, 429, no answer) ends the
// search; anything else lets the next kind try.
func TestProbeError(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		notThis bool
	}{
		{name: "404", err: &retry.Error{Class: dlq.ClassHTTP4xx, Status: 404}, notThis: true},
		{name: "HTML page", err: fmt.Errorf("reading: %w", &retry.Error{Class: dlq.ClassParse, Status: 200}), notThis: true},
		{name: "500", err: &retry.Error{Class: dlq.ClassHTTP5xx, Status: 500}, notThis: true},
		{name: "401", err: &retry.Error{Class: dlq.ClassHTTP4xx, Status: 401}},
		{name: "403", err: &retry.Error{Class: dlq.ClassHTTP4xx, Status: 403}},
		{name: "429", err: &retry.Error{Class: dlq.ClassRateLimited, Status: 429}},
		{name: "unreachable", err: &retry.Error{Class: dlq.ClassNetwork}},
		{name: "canceled", err: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tasks.ProbeError(tt.err)
			if errors.Is(got, tasks.ErrNotThisKind) != tt.notThis {
				t.Errorf("ProbeError(%v) = %v; not this kind: want %v", tt.err, got, tt.notThis)
			}
			if !errors.Is(got, tt.err) && !strings.Contains(got.Error(), tt.err.Error()) {
				t.Errorf("%v does not say what came back (%v)", got, tt.err)
			}
		})
	}
}

// TestQuotaHeaders: the quota headers of every convention, and nothing else.
func TestQuotaHeaders(t *testing.T) {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Retry-After", "3")
	h.Set("X-RateLimit-Limit", "100")
	h.Set("x-ratelimit-reset-after", "6m0s")
	h.Set("RateLimit", `"burst";r=50;t=30`)
	h.Set("RateLimit-Policy", `"burst";q=100;w=60`)
	h.Set("X-Request-Id", "abc")
	got := tasks.QuotaHeaders(h)
	want := []tasks.Header{{"RateLimit", `"burst";r=50;t=30`}, {"RateLimit-Policy", `"burst";q=100;w=60`}, {"Retry-After", "3"},
		{"X-RateLimit-Limit", "100"}, {"X-RateLimit-Reset-After", "6m0s"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := tasks.QuotaHeaders(http.Header{"Server": {"x"}}); got != nil {
		t.Errorf("no quota headers: got %v", got)
	}
}

// TestInspectTriesKinds: a kind that is not the URL's protocol passes to the next; a
// kind's other error ends the search; no kind at all says what each found.
func TestInspectTriesKinds(t *testing.T) {
	notMine := func(what string) func(context.Context, *tasks.Env, string) (*tasks.Service, error) {
		return func(context.Context, *tasks.Env, string) (*tasks.Service, error) {
			return nil, fmt.Errorf("%w: %s", tasks.ErrNotThisKind, what)
		}
	}
	reg := &tasks.Registry{}
	reg.Register(tasks.Kind{Name: "ogcapi_features", Inspect: notMine("an HTML page")})
	reg.Register(tasks.Kind{Name: "sql"})
	reg.Register(tasks.Kind{Name: "wfs", Inspect: func(context.Context, *tasks.Env, string) (*tasks.Service, error) {
		return &tasks.Service{Protocol: "WFS 2.0.0"}, nil
	}})
	s, err := tasks.Inspect(t.Context(), &tasks.Env{}, reg, "http://h/wfs")
	if err != nil || s.Kind != "wfs" {
		t.Fatalf("got %+v, %v; want the wfs kind's service", s, err)
	}

	refused := &tasks.Registry{}
	refused.Register(tasks.Kind{Name: "ogcapi_features", Inspect: func(context.Context, *tasks.Env, string) (*tasks.Service, error) {
		return nil, errors.New("HTTP 403 Forbidden")
	}})
	refused.Register(tasks.Kind{Name: "wfs", Inspect: notMine("never asked")})
	if _, err := tasks.Inspect(t.Context(), &tasks.Env{}, refused, "http://h/x?key=secret"); err == nil ||
		!strings.Contains(err.Error(), "403") || strings.Contains(err.Error(), "secret") {
		t.Errorf("a 403 must end the search, naming the URL redacted: %v", err)
	}

	none := &tasks.Registry{}
	none.Register(tasks.Kind{Name: "ogcapi_features", Inspect: notMine("an HTML page")})
	none.Register(tasks.Kind{Name: "wfs", Inspect: notMine("an exception report")})
	_, err = tasks.Inspect(t.Context(), &tasks.Env{}, none, "http://h/x")
	if err == nil || !strings.Contains(err.Error(), "an HTML page") || !strings.Contains(err.Error(), "an exception report") {
		t.Errorf("want what each kind found, got %v", err)
	}
}

// TestSnippetName: a layer's name as a task id and table.
func TestSnippetName(t *testing.T) {
	tests := []struct{ name, layer, want string }{
		{name: "prefixed", layer: "gf:parcels", want: "parcels"},
		{name: "spaces and case", layer: "Public Parcels (2024)", want: "public_parcels__2024"},
		{name: "digits first", layer: "0", want: "layer_0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tasks.SnippetName(tt.layer); got != tt.want {
				t.Errorf("SnippetName(%q) = %q, want %q", tt.layer, got, tt.want)
			}
		})
	}
}

// TestSnippetBBox: an extent is widened outwards, never cut.
func TestSnippetBBox(t *testing.T) {
	got := tasks.SnippetBBox(orb.Bound{Min: orb.Point{11.4498781, -48.0499181}, Max: orb.Point{11.5501219, 48.1500819}})
	if want := "[11.449878, -48.049919, 11.550122, 48.150082]"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestFindLayer: by name, or by title, and an unknown one names the nearest.
func TestFindLayer(t *testing.T) {
	s := &tasks.Service{Layers: []tasks.Layer{{Name: "0", Title: "Parcels"}, {Name: "ns:roads"}}}
	for _, name := range []string{"0", "Parcels", "ns:roads"} {
		if _, err := s.FindLayer(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := s.FindLayer("ns:road"); err == nil || !strings.Contains(err.Error(), `did you mean "ns:roads"?`) {
		t.Errorf("want a did-you-mean, got %v", err)
	}
}

// TestDescribe: every layer of a small service is described whole, none of a large one,
// and only the one asked for when one is.
func TestDescribe(t *testing.T) {
	asked := tasks.WithInspectLayer(t.Context(), "b")
	tests := []struct {
		name  string
		ctx   context.Context
		layer string
		n     int
		want  bool
	}{
		{name: "small", ctx: t.Context(), layer: "a", n: tasks.MaxDescribed, want: true},
		{name: "large", ctx: t.Context(), layer: "a", n: tasks.MaxDescribed + 1, want: false},
		{name: "asked for", ctx: asked, layer: "b", n: 500, want: true},
		{name: "another asked for", ctx: asked, layer: "a", n: 2, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tasks.Describe(tt.ctx, tt.layer, tt.n); got != tt.want {
				t.Errorf("Describe = %v, want %v", got, tt.want)
			}
		})
	}
}

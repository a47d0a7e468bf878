package tasks

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/internal/didyoumean"
	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/retry"
)

// MaxDescribed is how many layers of a service inspect describes whole (fields and
// count, a request or two each): a service with more has only its layers' names, titles
// and extents described, unless one layer is asked for (WithInspectLayer).
const MaxDescribed = 20

// urlHints are the kinds a URL names by its form, tried before the others: an OGC
// service parameter, an ArcGIS REST path, an OGC API path. A kind not registered with an
// Inspect is skipped.
var urlHints = []struct {
	match func(u *url.URL) bool
	kinds []string
}{
	{func(u *url.URL) bool { return service(u) == "WFS" }, []string{"wfs"}},
	{func(u *url.URL) bool { return service(u) == "WMS" }, []string{"imagery", "tiles"}},
	{func(u *url.URL) bool { return service(u) == "WMTS" }, []string{"tiles"}},
	{func(u *url.URL) bool {
		return strings.Contains(u.Path, "/FeatureServer") || strings.Contains(u.Path, "/MapServer")
	}, []string{"arcgis_features"}},
	{func(u *url.URL) bool {
		return strings.Contains(u.Path, "/collections") || strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/ogcapi")
	}, []string{"ogcapi_features"}},
	{func(u *url.URL) bool { return strings.Contains(u.Path, "{z}") || strings.Contains(u.Path, "%7Bz%7D") }, []string{"tiles"}},
}

// probeOrder is the order of the kinds no hint names: the cheap JSON probes first, then
// GetCapabilities; kinds not listed follow in name order.
var probeOrder = []string{"ogcapi_features", "arcgis_features", "wfs"}

func service(u *url.URL) string {
	for k, v := range u.Query() {
		if strings.EqualFold(k, "service") && len(v) > 0 {
			return strings.ToUpper(v[0])
		}
	}
	return ""
}

// InspectOrder decides the order in which the kinds named in names are tried on rawURL:
// those the URL's form hints at first, then probeOrder, then the rest by name.
func InspectOrder(rawURL string, names []string) []string {
	var out []string
	add := func(n string) {
		if slices.Contains(names, n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if u, err := url.Parse(rawURL); err == nil {
		for _, h := range urlHints {
			if h.match(u) {
				for _, k := range h.kinds {
					add(k)
				}
			}
		}
	}
	for _, n := range probeOrder {
		add(n)
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	for _, n := range sorted {
		add(n)
	}
	return out
}

// Inspect describes the service at rawURL with the first registered kind that speaks
// its protocol, trying them in InspectOrder. A kind whose Inspect fails other than with
// ErrNotThisKind ends the search with its error (a 403, a server that does not answer);
// when no kind speaks the URL's protocol, the error says what each found there.
func Inspect(ctx context.Context, env *Env, reg *Registry, rawURL string) (*Service, error) {
	var names []string
	for _, n := range reg.Names() {
		if k, _ := reg.Lookup(n); k.Inspect != nil {
			names = append(names, n)
		}
	}
	var tried []string
	for _, name := range InspectOrder(rawURL, names) {
		k, _ := reg.Lookup(name)
		s, err := k.Inspect(ctx, env, rawURL)
		switch {
		case err == nil:
			if s.Kind == "" {
				s.Kind = name
			}
			return s, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case !errors.Is(err, ErrNotThisKind):
			return nil, fmt.Errorf("inspecting %s as %s: %w", redact.URL(rawURL), name, err)
		}
		tried = append(tried, fmt.Sprintf("%s: %v", name, err))
	}
	return nil, fmt.Errorf("%s speaks none of the protocols geoflow harvests:\n  %s", redact.URL(rawURL), strings.Join(tried, "\n  "))
}

// ProbeError decides what a failed request of a kind's Inspect means: the server
// refused the client (401, 403), asked it to slow down (429), or could not be reached,
// and then err is returned as it is, the service's answer; any other failure (a 404, a
// 5xx, an HTML page, an exception report, a document of another protocol) wraps
// ErrNotThisKind, so that the next kind may be tried.
func ProbeError(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var re *retry.Error
	if errors.As(err, &re) {
		switch {
		case re.Status == http.StatusUnauthorized, re.Status == http.StatusForbidden,
			re.Class == dlq.ClassRateLimited, re.Class == dlq.ClassNetwork, re.Class == dlq.ClassTimeout,
			re.Class == dlq.ClassCircuitOpen, re.Class == dlq.ClassCanceled:
			return err
		}
	}
	return fmt.Errorf("%w (%v)", ErrNotThisKind, err)
}

// quotaHeaders are the response headers that state a quota, by their canonical name or
// its prefix (X-RateLimit-*).
var quotaHeaders = []string{"Retry-After", "Ratelimit", "Ratelimit-Policy", "Ratelimit-Limit", "Ratelimit-Remaining", "Ratelimit-Reset", "X-Ratelimit-"}

// QuotaHeaders picks from h the headers that state a quota (Retry-After, X-RateLimit-*,
// RateLimit, RateLimit-Policy and the like), named as the conventions write them
// (X-RateLimit-Limit), sorted by name; nil when there are none.
func QuotaHeaders(h http.Header) []Header {
	var out []Header
	for name, vals := range h {
		c := http.CanonicalHeaderKey(name)
		quota := slices.ContainsFunc(quotaHeaders, func(q string) bool {
			return c == q || strings.HasSuffix(q, "-") && strings.HasPrefix(c, q)
		})
		if quota && len(vals) > 0 {
			// Written as the conventions write them, not as Go canonicalises them.
			out = append(out, Header{Name: strings.Replace(c, "Ratelimit", "RateLimit", 1), Value: strings.Join(vals, ", ")})
		}
	}
	slices.SortFunc(out, func(a, b Header) int { return strings.Compare(a.Name, b.Name) })
	return out
}

type inspectLayerKey struct{}

// WithInspectLayer returns a context under which a kind's Inspect describes the layer
// named name whole (fields and count) whatever the number of layers, and no other
// layer beyond what its capabilities say.
func WithInspectLayer(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, inspectLayerKey{}, name)
}

// InspectLayer is the layer WithInspectLayer named, "" for none.
func InspectLayer(ctx context.Context) string {
	s, _ := ctx.Value(inspectLayerKey{}).(string)
	return s
}

// Describe decides whether a kind's Inspect describes layer whole, of n layers: the one
// asked for (InspectLayer), or every one when there are at most MaxDescribed.
func Describe(ctx context.Context, layer string, n int) bool {
	if want := InspectLayer(ctx); want != "" {
		return want == layer
	}
	return n <= MaxDescribed
}

// NotDescribedNote is the note a Service carries when its layers were too many to be
// described whole.
func NotDescribedNote(n int) string {
	return fmt.Sprintf("%d layers: fields and counts are left out beyond %d layers; name one with --layer NAME", n, MaxDescribed)
}

// SnippetName is a task id and table name for a layer: its local name (after a
// namespace prefix), in lower case, with anything but letters, digits and _ as _.
func SnippetName(layer string) string {
	if i := strings.LastIndexByte(layer, ':'); i >= 0 {
		layer = layer[i+1:]
	}
	var b strings.Builder
	for _, r := range strings.ToLower(layer) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := strings.Trim(b.String(), "_")
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		s = "layer_" + s
	}
	return s
}

// SnippetBBox writes an extent as a flow's bbox value, widened outwards to 6 decimals
// (about 0.1 m) so that rounding never cuts a feature off.
func SnippetBBox(b orb.Bound) string {
	down := func(x float64) float64 { return math.Floor(x*1e6) / 1e6 }
	up := func(x float64) float64 { return math.Ceil(x*1e6) / 1e6 }
	return fmt.Sprintf("[%g, %g, %g, %g]", down(b.Min[0]), down(b.Min[1]), up(b.Max[0]), up(b.Max[1]))
}

// FindLayer returns the layer of s named name, or else the one layer titled so (an
// ArcGIS layer is named by its id); an unknown name is an error naming the nearest.
func (s *Service) FindLayer(name string) (*Layer, error) {
	names := make([]string, len(s.Layers))
	var titled []*Layer
	for i := range s.Layers {
		l := &s.Layers[i]
		if l.Name == name {
			return l, nil
		}
		if strings.EqualFold(l.Title, name) {
			titled = append(titled, l)
		}
		names[i] = l.Name
	}
	if len(titled) == 1 {
		return titled[0], nil
	}
	hint := ""
	if n := didyoumean.Nearest(name, names); n != "" {
		hint = fmt.Sprintf("; did you mean %q?", n)
	}
	return nil, fmt.Errorf("the service has no layer %q (it has %s)%s", name, strings.Join(names, ", "), hint)
}

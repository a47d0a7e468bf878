package tiles

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/internal/ows"
	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/internal/files"
	"github.com/geoflow/geoflow/tasks/internal/probe"
)

// XYZLayer names the one layer of an XYZ tile template.
const XYZLayer = "tiles"

// Inspect implements tasks.Kind.Inspect for tile services: an XYZ (or TMS, or Bing
// quadkey) URL template, whose tile 0/0/0 it fetches, or a WMTS, whose capabilities it
// reads (KVP GetCapabilities, or a RESTful WMTSCapabilities.xml).
func Inspect(ctx context.Context, env *tasks.Env, u string) (*tasks.Service, error) {
	if strings.Contains(u, "{") {
		tpl, err := ParseTemplate(u, false)
		if err != nil {
			return nil, probe.NotThisKind("not a tile URL template: %v", err)
		}
		return inspectXYZ(ctx, env, u, tpl)
	}
	return inspectWMTS(ctx, env, u)
}

// inspectXYZ fetches tile 0/0/0 of a template and says what came back.
func inspectXYZ(ctx context.Context, env *tasks.Env, u string, tpl *Template) (*tasks.Service, error) {
	tile := tpl.Expand(0, 0, 0)
	r, err := probe.Get(ctx, env, "inspect", tile, "image/*", nil)
	if err != nil {
		return nil, fmt.Errorf("fetching tile 0/0/0 of %s: %w", redact.URL(u), err)
	}
	l := tasks.Layer{Name: XYZLayer, Count: -1, Template: redactTemplate(u)}
	s := &tasks.Service{Kind: "tiles", Protocol: "XYZ tiles", URL: redactTemplate(u), RateLimit: probe.RateLimit(r.Header)}
	s.Notes = append(s.Notes, tileNote(r))
	if format, err := files.CheckImage(r.Header.Get("Content-Type"), r.Body); r.OK() && err == nil {
		l.Formats = []string{format}
	}
	s.Layers = []tasks.Layer{l}
	return s, nil
}

// tileNote says what a tile request came back with: status, format, size, and the
// headers that decide revalidation.
func tileNote(r *probe.Response) string {
	if !r.OK() {
		return fmt.Sprintf("tile 0/0/0: HTTP %d (the server may have no tiles at zoom 0, or outside a small area)", r.Status)
	}
	parts := []string{r.Header.Get("Content-Type"), fmt.Sprintf("%d bytes", len(r.Body))}
	if _, err := files.CheckImage(r.Header.Get("Content-Type"), r.Body); err != nil {
		parts = append(parts, "not an image: "+err.Error())
	}
	for _, h := range []string{"Cache-Control", "Expires", "ETag", "Last-Modified"} {
		if v := r.Header.Get(h); v != "" {
			parts = append(parts, h+": "+v)
		}
	}
	if r.Header.Get("ETag") == "" && r.Header.Get("Last-Modified") == "" {
		parts = append(parts, "no ETag or Last-Modified: every rerun fetches every tile again")
	}
	return "tile 0/0/0: " + strings.Join(parts, ", ")
}

// inspectWMTS reads a WMTS's capabilities and lists its layers.
func inspectWMTS(ctx context.Context, env *tasks.Env, u string) (*tasks.Service, error) {
	capsURL := u
	if !strings.HasSuffix(strings.ToLower(mustPath(u)), ".xml") {
		if svc := param(u, "SERVICE"); svc != "" && !strings.EqualFold(svc, "WMTS") {
			return nil, probe.NotThisKind("the URL asks for a %s", svc)
		}
		capsURL = ows.URL(u, [][2]string{{"SERVICE", "WMTS"}, {"REQUEST", "GetCapabilities"}, {"VERSION", "1.0.0"}})
	}
	r, err := probe.Get(ctx, env, "inspect", capsURL, "application/xml, text/xml", nil)
	if err != nil {
		return nil, fmt.Errorf("asking %s for WMTS capabilities: %w", redact.URL(u), err)
	}
	c, ok, err := parseWMTS(r.Body)
	if !r.OK() || !ok {
		return nil, probe.NotThisKind("no WMTS capabilities")
	}
	if err != nil {
		return nil, fmt.Errorf("reading the capabilities of %s: %w", redact.URL(u), err)
	}
	s := &tasks.Service{Kind: "tiles", Protocol: strings.TrimSpace("WMTS " + c.Version), URL: redact.URL(capsURL), Title: c.Title,
		RateLimit: probe.RateLimit(r.Header), Layers: []tasks.Layer{}}
	for i := range c.Layers {
		l, note := describeWMTSLayer(c, &c.Layers[i], capsURL)
		s.Layers = append(s.Layers, l)
		if note != "" {
			s.Notes = append(s.Notes, note)
		}
	}
	return s, nil
}

// describeWMTSLayer is a WMTS layer as a tiles task sees it: its template is in the
// first Web Mercator tile matrix set it links to; note says why it has none.
func describeWMTSLayer(c *wmtsCaps, wl *wmtsLayer, capsURL string) (tasks.Layer, string) {
	l := tasks.Layer{Name: wl.Identifier, Title: wl.Title, Count: -1, Extent: wl.extent(), Formats: wl.Formats}
	crss := map[string]bool{}
	for _, link := range wl.Links {
		l.TileMatrixSets = append(l.TileMatrixSets, link.Set)
		set, ok := c.set(link.Set)
		if !ok {
			continue
		}
		crss[set.CRS] = true
		prefix, zmin, zmax, ok := mercatorLevels(set, link.Limits)
		if !ok || l.Template != "" {
			continue
		}
		l.Zooms = fmt.Sprintf("%d-%d", zmin, zmax)
		format := ""
		if len(wl.Formats) > 0 {
			format = preferredFormat(wl.Formats)
		}
		l.Template = redactTemplate(wmtsTemplate(c, wl, link.Set, prefix, format, capsURL))
	}
	l.CRSs = sortedKeys(crss)
	if l.Template == "" {
		return l, fmt.Sprintf("layer %q: no Web Mercator tile matrix set a tiles task can fetch (it has %s)", l.Name, strings.Join(l.TileMatrixSets, ", "))
	}
	return l, ""
}

// preferredFormat is PNG when offered, else JPEG, else the first.
func preferredFormat(fs []string) string {
	for _, want := range []string{"image/png", "image/jpeg"} {
		for _, f := range fs {
			if strings.EqualFold(f, want) {
				return f
			}
		}
	}
	return fs[0]
}

func mustPath(u string) string {
	pu, err := url.Parse(u)
	if err != nil {
		return u
	}
	return pu.Path
}

// param is the value of a query parameter of u, whatever its case.
func param(u, name string) string {
	pu, err := url.Parse(u)
	if err != nil {
		return ""
	}
	for k, v := range pu.Query() {
		if strings.EqualFold(k, name) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// snippetTiles bounds the tiles of a snippet's first run: its zoom range stops before it.
const snippetTiles = 1000

var world = orb.Bound{Min: orb.Point{-180, -85}, Max: orb.Point{180, 85}}

// Snippet implements tasks.Kind.Snippet: a flow with one tiles task mirroring layer of s
// over its advertised extent (the world when it advertises none), from its first zoom
// level down as far as about snippetTiles tiles go.
func Snippet(s *tasks.Service, layer string) (string, error) {
	l, err := s.FindLayer(layer)
	if err != nil {
		return "", err
	}
	if l.Template == "" {
		return "", fmt.Errorf("layer %q has no tile URL template a tiles task can fetch", layer)
	}
	ext := world
	if l.Extent != nil {
		ext = *l.Extent
	}
	lo, hi := 0, MaxZoom
	fmt.Sscanf(l.Zooms, "%d-%d", &lo, &hi)
	top := snippetZoom(ext, lo, hi)
	id := snippetID(layer, s)
	var b strings.Builder
	fmt.Fprintf(&b, "# Layer %s of %s, as geoflow inspect described it. Raise the zoom's maximum for\n", jsonQuote(layer), s.URL)
	fmt.Fprintf(&b, "# detail: each level holds about four times the tiles of the one above (%d tiles now).\n", CountTiles(ext, lo, top))
	fmt.Fprintf(&b, "name: %s\ntasks:\n  %s:\n    type: tiles\n    url: %s\n", id, id, jsonQuote(l.Template))
	fmt.Fprintf(&b, "    bbox: [%g, %g, %g, %g]\n    zoom: [%d, %d]\n    missing_ok: true\n", ext.Min[0], ext.Min[1], ext.Max[0], ext.Max[1], lo, top)
	fmt.Fprintf(&b, "    target:\n      dir: ./tiles/%s\n      table: public.%s_tiles\n", id, id)
	return b.String(), nil
}

// snippetZoom is the deepest level from lo (at most hi) at which ext holds at most
// snippetTiles tiles from lo down; lo itself whatever it holds.
func snippetZoom(ext orb.Bound, lo, hi int) int {
	top := lo
	for z := lo + 1; z <= hi && CountTiles(ext, lo, z) <= snippetTiles; z++ {
		top = z
	}
	return top
}

var notID = regexp.MustCompile(`[^a-z0-9_]+`)

// snippetID makes a flow and task id ([a-z0-9_]+) of a layer name, or for an XYZ
// template's one layer, of its host.
func snippetID(layer string, s *tasks.Service) string {
	name := layer
	if layer == XYZLayer {
		if pu, err := url.Parse(strings.ReplaceAll(s.URL, "{", "")); err == nil && pu.Hostname() != "" {
			name = pu.Hostname()
		}
	}
	id := strings.Trim(notID.ReplaceAllString(strings.ToLower(name), "_"), "_")
	if id == "" || id[0] < 'a' || id[0] > 'z' {
		id = strings.TrimSuffix("tiles_"+id, "_") // table names start with a letter
	}
	return id
}

// redactTemplate is a URL template with its secrets redacted and its placeholders kept.
func redactTemplate(u string) string {
	r := redact.URL(u)
	for _, kv := range [][2]string{{"%7B", "{"}, {"%7b", "{"}, {"%7D", "}"}, {"%7d", "}"}} {
		r = strings.ReplaceAll(r, kv[0], kv[1])
	}
	return r
}

func jsonQuote(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

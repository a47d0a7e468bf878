package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/tasks"
)

// inspectFlags are geoflow inspect's options.
type inspectFlags struct {
	json  bool
	flow  string
	layer string
	kind  string
}

func newInspectCmd(g *globals) *cobra.Command {
	var f inspectFlags
	cmd := &cobra.Command{
		Use:   "inspect URL",
		Short: "Describe a WFS, OGC API - Features or ArcGIS service: its layers, fields, counts, extents, paging and quota",
		Long: "Describe the service at URL before writing a flow for it: what it speaks (tried in turn: the URL's form\n" +
			"first, service=WFS, .../FeatureServer, .../collections), its title, how it pages and its largest page,\n" +
			"the filters and sorting it supports, its CRSs, the rate-limit headers it sent, and per layer its name,\n" +
			"title, extent (lon/lat), and, for up to 20 layers or the one named with --layer, its geometry type,\n" +
			"fields and feature count. No feature is fetched beyond a count or a one-feature page.\n\n" +
			"--flow LAYER prints a flow harvesting that layer over its advertised extent, which geoflow run runs as it is:\n" +
			"  geoflow inspect --flow gf:parcels http://127.0.0.1:8090/wfs > parcels.yaml",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("log-level") {
				// A probe's retries (an HTML page where JSON was hoped for) are no news.
				quiet := *g
				quiet.logLevel = "warn"
				g = &quiet
			}
			return runInspect(cmd.Context(), g, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.json, "json", false, "print the whole description as JSON")
	fl.StringVar(&f.flow, "flow", "", "print a flow harvesting this layer (its name, or an ArcGIS layer's id)")
	fl.StringVar(&f.layer, "layer", "", "describe this layer whole (fields, count), and list its fields")
	fl.StringVar(&f.kind, "type", "", "the task type to inspect the URL as (wfs, ogcapi_features, arcgis_features), instead of trying each")
	return cmd
}

func runInspect(ctx context.Context, g *globals, rawURL string, f inspectFlags) error {
	log, err := g.logger()
	if err != nil {
		return err
	}
	rec := &quotaRecorder{base: http.DefaultTransport}
	env := &tasks.Env{
		Logger: log,
		HTTP:   retry.New(&retry.Options{Logger: log, Client: &http.Client{Transport: rec}}),
		Retry:  retry.Policy{MaxAttempts: 3, BaseDelay: 200 * time.Millisecond, MaxDelay: 5 * time.Second},
	}
	if name := cmpOr(f.flow, f.layer); name != "" {
		ctx = tasks.WithInspectLayer(ctx, name)
	}
	reg := registry()
	var s *tasks.Service
	if f.kind != "" {
		k, ok := reg.Lookup(f.kind)
		if !ok || k.Inspect == nil {
			return fmt.Errorf("--type %s: not a task type geoflow inspects", f.kind)
		}
		s, err = k.Inspect(ctx, env, rawURL)
	} else {
		s, err = tasks.Inspect(ctx, env, reg, rawURL)
	}
	if err != nil {
		return err
	}
	s.RateLimit = rec.headers()
	switch {
	case f.flow != "":
		return writeFlowSnippet(g.stdout, reg, s, f.flow, rawURL)
	case f.json:
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	writeService(g.stdout, s, f.layer)
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// quotaRecorder keeps the quota headers of every response that passes, the latest value
// of each, in the order first received. It is safe for concurrent use.
type quotaRecorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	seen []tasks.Header
}

func (q *quotaRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := q.base.RoundTrip(req)
	if resp != nil {
		q.mu.Lock()
		for _, h := range tasks.QuotaHeaders(resp.Header) {
			i := 0
			for i < len(q.seen) && q.seen[i].Name != h.Name {
				i++
			}
			if i == len(q.seen) {
				q.seen = append(q.seen, h)
			} else {
				q.seen[i] = h
			}
		}
		q.mu.Unlock()
	}
	return resp, err
}

func (q *quotaRecorder) headers() []tasks.Header {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]tasks.Header(nil), q.seen...)
}

// writeFlowSnippet writes a flow harvesting layer of s: the kind's task (Snippet) in a
// flow of its own, named after the layer. A Snippet that is a whole flow is written as
// it is.
func writeFlowSnippet(w io.Writer, reg *tasks.Registry, s *tasks.Service, layer, rawURL string) error {
	k, ok := reg.Lookup(s.Kind)
	if !ok || k.Snippet == nil {
		return fmt.Errorf("%s services have no flow snippet", s.Kind)
	}
	l, err := s.FindLayer(layer)
	if err != nil {
		return err
	}
	task, err := k.Snippet(s, l.Name)
	if err != nil {
		return err
	}
	if strings.HasPrefix(task, "name:") || strings.Contains(task, "\ntasks:") {
		_, err = io.WriteString(w, task)
		return err
	}
	name := tasks.SnippetName(cmpOr(l.Title, l.Name))
	if s.Kind != "arcgis_features" {
		name = tasks.SnippetName(l.Name)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by geoflow inspect --flow %s %s\n", layer, s.URL)
	if l.Count >= 0 {
		fmt.Fprintf(&b, "# The server counted %d features in the layer.\n", l.Count)
	}
	fmt.Fprintf(&b, "name: %s\n# schedule: \"0 2 * * *\"   # uncomment to harvest nightly under geoflow serve\ntasks:\n  %s:\n", name, name)
	for _, line := range strings.Split(strings.TrimRight(task, "\n"), "\n") {
		b.WriteString("    " + line + "\n")
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// inspectWidth is the width text output fits.
const inspectWidth = 80

// writeService writes s for a terminal, every line within inspectWidth: the service's
// properties, a table of its layers, the fields of the layer asked for (or of the only
// one), and the notes.
func writeService(w io.Writer, s *tasks.Service, layer string) {
	var b strings.Builder
	prop := func(key, val string) { wrapInto(&b, fmt.Sprintf("%-9s ", key), val) }
	prop("service", s.Protocol+" (type: "+s.Kind+")")
	prop("url", s.URL)
	if s.Title != "" {
		prop("title", s.Title)
	}
	paging := cmpOr(s.Paging, "none")
	if s.MaxPage > 0 {
		paging += ", at most " + strconv.Itoa(s.MaxPage) + " a page"
	}
	prop("paging", paging)
	prop("filters", cmpOr(strings.Join(s.Filters, ", "), "none"))
	prop("sorting", map[bool]string{true: "yes", false: "no"}[s.Sorting])
	if len(s.CRSs) > 0 {
		prop("CRS", strings.Join(s.CRSs, ", "))
	}
	quota := "none sent"
	if len(s.RateLimit) > 0 {
		var hs []string
		for _, h := range s.RateLimit {
			hs = append(hs, h.Name+": "+h.Value)
		}
		quota = strings.Join(hs, "; ")
	}
	prop("quota", quota)
	b.WriteString("\n")
	writeLayerTable(&b, s.Layers)
	for i := range s.Layers {
		if l := &s.Layers[i]; l.Name == layer || len(s.Layers) == 1 {
			writeFields(&b, l)
		}
	}
	if len(s.Notes) > 0 {
		b.WriteString("\nnotes:\n")
		for _, n := range s.Notes {
			wrapInto(&b, "  - ", n)
		}
	}
	io.WriteString(w, b.String())
}

// writeLayerTable writes the layers as a table: name, features counted, extent and as
// much of the title as fits.
func writeLayerTable(b *strings.Builder, layers []tasks.Layer) {
	nameW, countW := len("NAME"), len(" FEATURES")
	for _, l := range layers {
		nameW = max(nameW, min(len([]rune(l.Name)), 24))
		countW = max(countW, len(strconv.FormatInt(l.Count, 10)))
	}
	const extW = 31 // -179.123,-89.500,179.988,89.500
	titleW := max(inspectWidth-nameW-countW-extW-6, 0)
	fmt.Fprintf(b, "%-*s %*s  %-*s  %s\n", nameW, "NAME", countW, "FEATURES", extW, "EXTENT (lon/lat)", "TITLE")
	for _, l := range layers {
		count := "?"
		if l.Count >= 0 {
			count = strconv.FormatInt(l.Count, 10)
		}
		ext := "-"
		if e := l.Extent; e != nil {
			ext = fmt.Sprintf("%.3f,%.3f,%.3f,%.3f", e.Min[0], e.Min[1], e.Max[0], e.Max[1])
		}
		line := fmt.Sprintf("%-*s %*s  %-*s  %s", nameW, cut(l.Name, nameW), countW, count, extW, cut(ext, extW), cut(l.Title, titleW))
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
}

// writeFields writes a layer's geometry type, CRSs and fields.
func writeFields(b *strings.Builder, l *tasks.Layer) {
	fmt.Fprintf(b, "\n")
	if len(l.Fields) == 0 && l.Geometry == "" { // a tile or imagery layer
		wrapInto(b, "", fmt.Sprintf("layer %s:", l.Name))
	} else {
		wrapInto(b, "", fmt.Sprintf("layer %s: %d fields, geometry %s", l.Name, len(l.Fields), cmpOr(l.Geometry, "unknown")))
	}
	if len(l.CRSs) > 0 {
		wrapInto(b, "  CRS    ", strings.Join(l.CRSs, ", "))
	}
	if e := l.Extent; e != nil {
		wrapInto(b, "  extent ", fmt.Sprintf("%s,%s,%s,%s (lon/lat)", coord(e.Min[0]), coord(e.Min[1]), coord(e.Max[0]), coord(e.Max[1])))
	}
	if l.Zooms != "" {
		wrapInto(b, "  zooms  ", l.Zooms)
	}
	if len(l.Formats) > 0 {
		wrapInto(b, "  format ", strings.Join(l.Formats, ", "))
	}
	if len(l.TileMatrixSets) > 0 {
		wrapInto(b, "  matrix ", strings.Join(l.TileMatrixSets, ", "))
	}
	if l.Template != "" {
		wrapInto(b, "  tiles  ", l.Template)
	}
	if len(l.Assets) > 0 {
		assets := make([]string, len(l.Assets))
		for i, a := range l.Assets {
			assets[i] = a.Name + " (" + cmpOr(a.Type, "type not stated") + ")"
		}
		wrapInto(b, "  assets ", strings.Join(assets, ", "))
	}
	nameW := 4
	for _, f := range l.Fields {
		nameW = max(nameW, min(len(f.Name), 40))
	}
	for _, f := range l.Fields {
		b.WriteString(strings.TrimRight(fmt.Sprintf("  %-*s  %s", nameW, cut(f.Name, nameW), cut(f.Type, inspectWidth-nameW-4)), " ") + "\n")
	}
}

// coord writes a longitude or latitude to 6 decimals (about 0.1 m), without trailing zeros.
func coord(x float64) string {
	return strings.TrimRight(strings.TrimRight(strconv.FormatFloat(x, 'f', 6, 64), "0"), ".")
}

// wrapInto writes text after prefix, wrapped at word boundaries to inspectWidth (wrap),
// the following lines indented as deep as the prefix.
func wrapInto(b *strings.Builder, prefix, text string) {
	indent := strings.Repeat(" ", len(prefix))
	for i, l := range wrap(strings.Join(strings.Fields(text), " "), inspectWidth-len(prefix)) {
		if i > 0 {
			prefix = indent
		}
		b.WriteString(strings.TrimRight(prefix+l, " ") + "\n")
	}
}

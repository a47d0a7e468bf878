package ogcapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/geojson"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/internal/harvest"
)

// checkOffsets asks for the second feature of the area twice, as the second of a page of
// two and as the first of a page of one at offset 1. A server that answers the first
// feature to the second question ignores offsets (MapServer 8.0.0 on a PostGIS layer):
// paging is then not used at all, and a tile that cannot be split fails saying so. A
// server that answers a third feature pages without a stable order: paging may overlap or
// miss, which the log says.
func (t *Task) checkOffsets(ctx context.Context, env *tasks.Env, p *prepared, area orb.Bound) {
	ids := func(q harvest.Query, off int64) ([]string, error) {
		u := t.itemsURL(p, q)
		if off > 0 {
			pu, _ := url.Parse(u)
			v := pu.Query()
			v.Set(p.offsetParam, strconv.FormatInt(off, 10))
			pu.RawQuery = v.Encode()
			u = pu.String()
		}
		var out []string
		err := env.HTTP.Do(ctx, t.request(env, "paging", u, acceptFeatures), func(resp *http.Response) error {
			out = out[:0]
			if err := tasks.RefuseHTML(resp); err != nil {
				return err
			}
			body, done := env.Meter(resp.Body)
			defer done()
			r := geojson.NewReader(body, geojson.Options{Limits: t.cfg.Limits.Spatial()})
			if err := spatial.Walk(r, func(f *spatial.Feature) error { out = append(out, f.ID); return nil }); err != nil {
				return classify(err)
			}
			return nil
		})
		return out, err
	}
	two, err := ids(harvest.Query{Box: area, Count: 2}, 0)
	if err != nil || len(two) < 2 {
		return
	}
	second, err := ids(harvest.Query{Box: area, Count: 1}, 1)
	if err != nil || len(second) != 1 {
		return
	}
	switch second[0] {
	case two[1]:
	case two[0]:
		env.Logger.Warn("the server ignores offset: a page at offset 1 starts with the first feature again, and its next links would repeat one page to the end; paging is off, tiles are split until each fits one page",
			"collection", t.cfg.Collection, "parameter", p.offsetParam)
		p.offsetParam = ""
	default:
		env.Logger.Warn("the server pages without a stable order (offset 1 did not give the second feature): pages of a tile that cannot be split may overlap or miss features",
			"collection", t.cfg.Collection)
	}
}

// pagingParam is the query parameter a next link pages with (offset, startIndex,
// startindex, start), "" when it has none of them.
func pagingParam(next string) string {
	u, err := url.Parse(next)
	if err != nil {
		return ""
	}
	for k := range u.Query() {
		switch strings.ToLower(k) {
		case "offset", "startindex", "start":
			return k
		}
	}
	return ""
}

const acceptFeatures = "application/geo+json, application/json;q=0.9"

// itemsURL is the items request for q, with the task's own parameters.
func (t *Task) itemsURL(p *prepared, q harvest.Query) string {
	u, err := url.Parse(p.items)
	if err != nil {
		return p.items
	}
	v := u.Query()
	if !v.Has("f") {
		v.Set("f", "json")
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	v.Set("bbox", strings.Join([]string{f(q.Box.Min[0]), f(q.Box.Min[1]), f(q.Box.Max[0]), f(q.Box.Max[1])}, ","))
	v.Set("limit", strconv.FormatInt(max(q.Count, 1), 10))
	if q.Start > 0 && p.offsetParam != "" {
		v.Set(p.offsetParam, strconv.FormatInt(q.Start, 10))
	}
	if t.cfg.Datetime != "" {
		v.Set("datetime", t.cfg.Datetime)
	}
	if f := filter(t.cfg.Filter, p.pushdown); f != "" {
		v.Set("filter", f)
		v.Set("filter-lang", "cql2-text")
	}
	if len(t.cfg.Properties) > 0 {
		v.Set("properties", strings.Join(t.cfg.Properties, ","))
	}
	if p.crsParam != "" {
		v.Set("crs", p.crsParam)
	}
	u.RawQuery = v.Encode()
	return u.String()
}

// protocol is OGC API - Features items requests for the harvest engine.
type protocol struct {
	t *Task
	p *prepared
}

// Count implements harvest.Protocol: numberMatched of a one-feature page.
func (w *protocol) Count(ctx context.Context, env *tasks.Env, unit string, box orb.Bound) (int64, error) {
	n := int64(-1)
	err := env.HTTP.Do(ctx, w.t.request(env, unit, w.t.itemsURL(w.p, harvest.Query{Box: box, Count: 1}), acceptFeatures), func(resp *http.Response) error {
		if err := tasks.RefuseHTML(resp); err != nil {
			return err
		}
		body, done := env.Meter(resp.Body)
		defer done()
		r := geojson.NewReader(body, geojson.Options{Limits: w.t.cfg.Limits.Spatial()})
		if err := spatial.Walk(r, nil); err != nil {
			return classify(err)
		}
		n = r.Meta().NumberMatched
		return nil
	})
	if err != nil {
		return -1, fmt.Errorf("counting features in %s: %w", harvest.FormatBound(box), err)
	}
	return n, nil
}

// Request implements harvest.Protocol.
func (w *protocol) Request(env *tasks.Env, unit string, q harvest.Query) retry.Request {
	return w.t.request(env, unit, w.t.itemsURL(w.p, q), acceptFeatures)
}

// CheckResponse implements harvest.Protocol.
func (w *protocol) CheckResponse(resp *http.Response) error { return tasks.RefuseHTML(resp) }

// Decode implements harvest.Protocol: GeoJSON, swapped to x/y where the CRS asked for is
// latitude first.
func (w *protocol) Decode(env *tasks.Env, body io.Reader) harvest.Decoder {
	return &unknownProps{Reader: geojson.NewReader(body, geojson.Options{SwapXY: w.p.latFirst, Limits: w.t.cfg.Limits.Spatial()}), p: w.p, t: w.t, env: env}
}

// Classify implements harvest.Protocol.
func (w *protocol) Classify(err error) error { return classify(err) }

// withF asks for JSON with f=json as well as the Accept header: MapServer and pygeoapi
// answer HTML to a browser-like request without it.
func withF(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Query().Has("f") {
		return u
	}
	v := p.Query()
	v.Set("f", "json")
	p.RawQuery = v.Encode()
	return p.String()
}

// keepQuery adds to u the query parameters of the configured URL that u lacks: an API
// key in the landing page's URL must reach every request, and the links a server writes
// into its documents carry no key of the caller's.
func (t *Task) keepQuery(u string) string {
	if u == "" {
		return ""
	}
	base, err := url.Parse(t.cfg.URL)
	if err != nil || base.RawQuery == "" {
		return u
	}
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	v := p.Query()
	for k, x := range base.Query() {
		if !v.Has(k) {
			v[k] = x
		}
	}
	p.RawQuery = v.Encode()
	return p.String()
}

// join appends a path segment to u's path (escaped as needed), keeping its query.
func join(u, seg string) string {
	p, err := url.Parse(u)
	if err != nil {
		return strings.TrimSuffix(u, "/") + "/" + url.PathEscape(seg)
	}
	return p.JoinPath(seg).String()
}

package wfs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/internal/ows"
	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/internal/harvest"
)

// prepare negotiates with the server once: version and formats from GetCapabilities,
// properties from DescribeFeatureType, then the target table. A failure is not cached,
// so a later unit (or a replay) tries again.
func (t *Task) prepare(ctx context.Context, env *tasks.Env) (*prepared, error) {
	t.prepMu.Lock()
	defer t.prepMu.Unlock()
	if t.p != nil {
		return t.p, nil
	}
	caps, err := t.capabilities(ctx, env)
	if err != nil {
		return nil, err
	}
	ft, err := caps.findType(t.cfg.TypeName)
	if err != nil {
		return nil, err
	}
	p, _, err := t.resolve(caps, ft)
	if err != nil {
		return nil, err
	}
	if err := checkExtent(t.cfg.BBox, p.area, ft); err != nil {
		return nil, err // the runner names the task
	}
	if t.cfg.BBox == nil {
		env.Logger.Info("no bbox given: harvesting the feature type's advertised extent", "bbox", harvest.FormatBound(p.area))
	}
	if err := t.checkSRS(ctx, env, p, ft); err != nil {
		return nil, err
	}
	if err := checkFilter(t.cfg.Filter, caps); err != nil {
		return nil, err
	}
	schema, err := t.describe(ctx, env, p)
	if err != nil {
		return nil, err
	}
	p.table = &store.FeatureTable{Schema: t.schema, Name: t.table, SRID: p.srid, Mode: t.cfg.Target.Mode, Key: t.cfg.Target.Key, History: t.cfg.Target.History}
	t.cfg.Target.Reproject(p.table)
	if p.table.Columns, p.transform, err = t.cfg.Transform.Plan(ft.Name, properties(schema.Properties)); err != nil {
		return nil, err
	}
	if err := tasks.CheckKey(p.table, ft.Name); err != nil {
		return nil, err
	}
	p.sortBy = sortProperty(t.cfg.SortBy, t.cfg.Target.Key, p.table.Columns, schema.Properties)
	if err := env.Features.EnsureFeatureTable(ctx, p.table); err != nil {
		return nil, err
	}
	ps := pageSize(caps.CountDefault, t.cfg.PageSize)
	p.eng = harvest.New(harvest.Config{
		Protocol: &protocol{t: t, p: p},
		Caps: harvest.Caps{Counts: caps.Hits, MatchedInResponse: p.version == "2.0.0",
			Sorts: caps.ImplementsSorting && p.sortBy != "", Pages: true},
		Table: p.table, Area: p.area, PageSize: ps, Geographic: p.latLonCRS, Budget: t.cfg.Limits.Budget(),
		MaxDeleteFraction: t.cfg.Target.DeleteFraction(), Lookup: t.lookup(p), DeleteAfter: t.cfg.Target.AbsentRuns(),
		Transform: p.transform,
	})
	env.Logger.Info("wfs negotiated", "version", p.version, "typename", p.typeName, "format", firstNonEmpty(p.format, "GML (server default)"),
		"page_size", ps, "hits", caps.Hits, "sorting", caps.ImplementsSorting, "table", p.table.Schema+"."+p.table.Name, "srid", p.srid)
	t.p = p
	return p, nil
}

// checkSRS makes sure, before any feature is asked for, that the server serves the type
// in the srs the task asked for. A CRS the capabilities list for the type is taken; one
// they do not list is tried with one count request, since many servers reproject to more
// CRSs than they list: a refusal fails the task at once, quoting the server. WFS 1.0 has no
// SRSNAME: the type comes in its one SRS, so any other srs would be stored mislabelled.
func (t *Task) checkSRS(ctx context.Context, env *tasks.Env, p *prepared, ft *FeatureType) error {
	offered := append([]string{ft.DefaultCRS}, ft.OtherCRS...)
	var names []string
	for _, c := range offered {
		if c == "" {
			continue
		}
		names = append(names, c)
		if srid, err := spatial.SRID(c); err == nil && srid == p.srid {
			return nil
		}
	}
	if len(names) == 0 {
		return nil // the server lists none: nothing to check against
	}
	if p.version == "1.0.0" {
		return fmt.Errorf("srs %s: a WFS 1.0 server sends %s in its own SRS only (%s); set srs: to it", t.cfg.SRS, ft.Name, strings.Join(names, ", "))
	}
	if !p.caps.Hits {
		env.Logger.Warn("the server does not list this srs for the type and cannot count to try it; going on", "srs", t.cfg.SRS, "listed", strings.Join(names, ", "))
		return nil
	}
	_, err := t.hits(ctx, env, p, "srs", p.area)
	var rerr *retry.Error
	if errors.As(err, &rerr) && (rerr.Class == dlq.ClassExceptionReport || rerr.Class == dlq.ClassHTTP4xx) {
		return fmt.Errorf("srs %s: the server refuses it for %s (it lists %s): %s", t.cfg.SRS, ft.Name, strings.Join(names, ", "), rerr.Message)
	}
	if err != nil {
		env.Logger.Warn("could not try the srs the server does not list; going on", "srs", t.cfg.SRS, "listed", strings.Join(names, ", "), "err", err)
		return nil
	}
	env.Logger.Info("the server does not list this srs for the type but accepts it", "srs", t.cfg.SRS, "listed", strings.Join(names, ", "))
	return nil
}

func urnCRS(srid int) string { return fmt.Sprintf("urn:ogc:def:crs:EPSG::%d", srid) }

func (p *prepared) chooseFormat(want string) error {
	isJSON := func(f string) bool { return strings.Contains(strings.ToLower(f), "json") }
	switch strings.ToLower(want) {
	case "auto", "":
		for _, f := range p.caps.OutputFormats {
			if isJSON(f) {
				p.format, p.geoJSON = f, true
				return nil
			}
		}
		p.format = p.gmlFormat()
	case "geojson", "json":
		for _, f := range p.caps.OutputFormats {
			if isJSON(f) {
				p.format, p.geoJSON = f, true
				return nil
			}
		}
		return fmt.Errorf("output_format geojson: the server offers only %s", strings.Join(p.caps.OutputFormats, ", "))
	case "gml":
		p.format = p.gmlFormat()
	default:
		p.format, p.geoJSON = want, isJSON(want)
	}
	return nil
}

// gmlFormat prefers GML 3.2 in WFS 2.0 when offered; elsewhere the server's default.
func (p *prepared) gmlFormat() string {
	if p.version == "2.0.0" {
		for _, f := range p.caps.OutputFormats {
			if strings.Contains(f, "3.2") {
				return f
			}
		}
	}
	return ""
}

func (t *Task) capabilities(ctx context.Context, env *tasks.Env) (*Capabilities, error) {
	params := [][2]string{{"SERVICE", "WFS"}, {"REQUEST", "GetCapabilities"}}
	if t.cfg.Version == "auto" || t.cfg.Version == "" {
		params = append(params, [2]string{"ACCEPTVERSIONS", "2.0.0,1.1.0,1.0.0"})
	} else {
		params = append(params, [2]string{"VERSION", t.cfg.Version}, [2]string{"ACCEPTVERSIONS", t.cfg.Version})
	}
	var caps *Capabilities
	err := env.HTTP.Do(ctx, t.plainRequest(env, "capabilities", ows.URL(t.cfg.URL, params)), func(resp *http.Response) error {
		root, err := parseDOM(resp.Body)
		if err != nil {
			return classify(err)
		}
		caps, err = parseCapabilities(root)
		if err != nil {
			return retry.Permanent(dlq.ClassParse, err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the capabilities of %s: %w", redact.URL(t.cfg.URL), err)
	}
	return caps, nil
}

func (t *Task) describe(ctx context.Context, env *tasks.Env, p *prepared) (*Schema, error) {
	tn := "TYPENAMES"
	if p.version != "2.0.0" {
		tn = "TYPENAME"
	}
	u := ows.URL(t.cfg.URL, [][2]string{{"SERVICE", "WFS"}, {"VERSION", p.version}, {"REQUEST", "DescribeFeatureType"}, {tn, p.typeName}})
	var s *Schema
	err := env.HTTP.Do(ctx, t.plainRequest(env, "describe", u), func(resp *http.Response) error {
		root, err := parseDOM(resp.Body)
		if err != nil {
			return classify(err)
		}
		if s, err = parseSchema(root, p.typeName); err != nil {
			return retry.Permanent(dlq.ClassParse, err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("describing feature type %q: %w", p.typeName, err)
	}
	return s, nil
}

// getFeature builds a GetFeature URL for one box.
func (t *Task) getFeature(p *prepared, bbox orb.Bound, start, count int64, hits, sorted bool) string {
	v2 := p.version == "2.0.0"
	params := [][2]string{{"SERVICE", "WFS"}, {"VERSION", p.version}, {"REQUEST", "GetFeature"}}
	if v2 {
		params = append(params, [2]string{"TYPENAMES", p.typeName})
	} else {
		params = append(params, [2]string{"TYPENAME", p.typeName})
	}
	if p.version != "1.0.0" {
		params = append(params, [2]string{"SRSNAME", p.srsParam})
	}
	if hits {
		params = append(params, [2]string{"RESULTTYPE", "hits"})
	} else {
		if p.format != "" {
			params = append(params, [2]string{"OUTPUTFORMAT", p.format})
		}
		if v2 {
			params = append(params, [2]string{"COUNT", strconv.FormatInt(count, 10)})
		} else {
			params = append(params, [2]string{"MAXFEATURES", strconv.FormatInt(count, 10)})
		}
		if start > 0 {
			params = append(params, [2]string{"STARTINDEX", strconv.FormatInt(start, 10)})
		}
		if sorted && p.caps.ImplementsSorting && p.sortBy != "" {
			dir := " ASC"
			if p.version == "1.1.0" {
				dir = " A"
			}
			params = append(params, [2]string{"SORTBY", p.sortBy + dir})
		}
	}
	box := bboxParam(p.version, bbox)
	if t.cfg.Filter != "" {
		params = append(params, [2]string{"FILTER", combineFilter(t.cfg.Filter, p.version, bbox)})
	} else {
		params = append(params, [2]string{"BBOX", box})
	}
	return ows.URL(t.cfg.URL, params)
}

// bboxParam writes a lon/lat box as the version expects: latitude first with the URN CRS
// in 1.1/2.0, which every server reads the same way, and plain lon/lat in 1.0.
func bboxParam(version string, b orb.Bound) string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	if version == "1.0.0" {
		return strings.Join([]string{f(b.Min[0]), f(b.Min[1]), f(b.Max[0]), f(b.Max[1])}, ",")
	}
	return strings.Join([]string{f(b.Min[1]), f(b.Min[0]), f(b.Max[1]), f(b.Max[0]), urnCRS(4326)}, ",")
}

// combineFilter ANDs the user's filter with the tile's box, since KVP BBOX and FILTER
// are mutually exclusive.
func combineFilter(user, version string, b orb.Bound) string {
	inner := strings.TrimSpace(user)
	if i := strings.Index(inner, ">"); strings.Contains(inner[:max(i, 0)], "Filter") && i >= 0 {
		if j := strings.LastIndex(inner, "</"); j > i {
			inner = inner[i+1 : j]
		}
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	if version == "2.0.0" {
		return `<fes:Filter xmlns:fes="http://www.opengis.net/fes/2.0" xmlns:gml="http://www.opengis.net/gml/3.2"><fes:And>` + inner +
			`<fes:BBOX><gml:Envelope srsName="` + urnCRS(4326) + `"><gml:lowerCorner>` + f(b.Min[1]) + " " + f(b.Min[0]) +
			`</gml:lowerCorner><gml:upperCorner>` + f(b.Max[1]) + " " + f(b.Max[0]) + `</gml:upperCorner></gml:Envelope></fes:BBOX></fes:And></fes:Filter>`
	}
	return `<ogc:Filter xmlns:ogc="http://www.opengis.net/ogc" xmlns:gml="http://www.opengis.net/gml"><ogc:And>` + inner +
		`<ogc:BBOX><gml:Envelope srsName="EPSG:4326"><gml:lowerCorner>` + f(b.Min[0]) + " " + f(b.Min[1]) +
		`</gml:lowerCorner><gml:upperCorner>` + f(b.Max[0]) + " " + f(b.Max[1]) + `</gml:upperCorner></gml:Envelope></ogc:BBOX></ogc:And></ogc:Filter>`
}

func (t *Task) plainRequest(env *tasks.Env, unit, u string) retry.Request {
	return retry.Request{
		Unit: unit, Policy: env.Retry, RateLimit: env.RateLimit, Redirects: env.Redirects, Classify: classifyException,
		New: func(ctx context.Context) (*http.Request, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				return nil, err
			}
			for k, v := range t.cfg.Headers {
				req.Header.Set(k, v)
			}
			req.Header.Set("User-Agent", "geoflow")
			return req, nil
		},
	}
}

func (t *Task) request(env *tasks.Env, p *prepared, unit, u string) retry.Request {
	r := t.plainRequest(env, unit, u)
	if p.geoJSON {
		r.New = wrapAccept(r.New, "application/json, application/geo+json;q=0.9, */*;q=0.1")
	}
	return r
}

func wrapAccept(next func(context.Context) (*http.Request, error), accept string) func(context.Context) (*http.Request, error) {
	return func(ctx context.Context) (*http.Request, error) {
		req, err := next(ctx)
		if err == nil {
			req.Header.Set("Accept", accept)
		}
		return req, err
	}
}

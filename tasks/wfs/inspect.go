package wfs

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/tasks"
)

var _ tasks.Online = (*Config)(nil)

// owsParams are the request parameters a user may have pasted with a WFS URL; the
// service's base URL is the URL without them.
var owsParams = []string{"service", "request", "version", "acceptversions", "typename", "typenames", "outputformat"}

// baseURL is raw without the OWS request parameters, keeping the server's own (?map=).
func baseURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	q := u.Query()
	for k := range q {
		if slices.Contains(owsParams, strings.ToLower(k)) {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Inspect describes the WFS at rawURL (geoflow inspect): GetCapabilities for the
// service and every feature type's name, title and extent, then DescribeFeatureType and
// a RESULTTYPE=hits count for the types described whole (tasks.Describe).
func Inspect(ctx context.Context, env *tasks.Env, rawURL string) (*tasks.Service, error) {
	base := baseURL(rawURL)
	t := &Task{cfg: *NewConfig()}
	t.cfg.URL = base
	caps, err := t.capabilities(ctx, env)
	if err != nil {
		return nil, tasks.ProbeError(err)
	}
	s := &tasks.Service{Kind: "wfs", Protocol: "WFS " + caps.Version, URL: redact.URL(base), Title: caps.Title,
		MaxPage: caps.CountDefault, Sorting: caps.ImplementsSorting, Filters: wfsFilters(caps)}
	if caps.Paging {
		s.Paging = "STARTINDEX and COUNT"
		if caps.Version != "2.0.0" {
			s.Paging = "STARTINDEX and MAXFEATURES (a vendor extension in " + caps.Version + ")"
		}
	}
	described := 0
	for _, ft := range caps.FeatureTypes {
		l := tasks.Layer{Name: ft.Name, Title: ft.Title, Extent: ft.WGS84, Count: -1, Formats: caps.OutputFormats}
		for _, c := range append([]string{ft.DefaultCRS}, ft.OtherCRS...) {
			if c != "" && !slices.Contains(l.CRSs, c) {
				l.CRSs = append(l.CRSs, c)
			}
			if c != "" && !slices.Contains(s.CRSs, c) {
				s.CRSs = append(s.CRSs, c)
			}
		}
		if ft.WGS84 == nil {
			s.Notes = append(s.Notes, fmt.Sprintf("%s advertises no WGS84 extent", ft.Name))
		}
		if tasks.Describe(ctx, ft.Name, len(caps.FeatureTypes)) {
			described++
			s.Notes = append(s.Notes, t.describeLayer(ctx, env, caps, &l)...)
		}
		s.Layers = append(s.Layers, l)
	}
	if described < len(caps.FeatureTypes) && tasks.InspectLayer(ctx) == "" {
		s.Notes = append(s.Notes, tasks.NotDescribedNote(len(caps.FeatureTypes)))
	}
	return s, nil
}

// wfsFilters are the filter languages the capabilities declare.
func wfsFilters(caps *Capabilities) []string {
	f := []string{"BBOX"}
	if !caps.NoStandardFilter {
		switch caps.Version {
		case "2.0.0":
			f = append(f, "FES 2.0")
		default:
			f = append(f, "OGC Filter "+strings.TrimSuffix(caps.Version, ".0"))
		}
	}
	return f
}

// describeLayer fills l's geometry type and fields (DescribeFeatureType) and its count
// (RESULTTYPE=hits over its extent), and returns notes on what the server would not say.
func (t *Task) describeLayer(ctx context.Context, env *tasks.Env, caps *Capabilities, l *tasks.Layer) []string {
	p := &prepared{caps: caps, version: caps.Version, typeName: l.Name, srid: 4326}
	p.srsParam = srsName("EPSG:4326", 4326, p.version, false)
	var notes []string
	if schema, err := t.describe(ctx, env, p); err != nil {
		notes = append(notes, fmt.Sprintf("%s: no fields: %v", l.Name, err))
	} else {
		l.Geometry = schema.GeometryType
		for _, pr := range schema.Properties {
			l.Fields = append(l.Fields, tasks.Field{Name: pr.Name, Type: pr.XSDType})
		}
	}
	if !caps.Hits {
		return append(notes, fmt.Sprintf("%s: the server does not count (no RESULTTYPE=hits)", l.Name))
	}
	area := orb.Bound{Min: orb.Point{-180, -90}, Max: orb.Point{180, 90}}
	if l.Extent != nil {
		area = *l.Extent
	}
	n, err := t.hits(ctx, env, p, "count", area)
	switch {
	case err != nil:
		notes = append(notes, fmt.Sprintf("%s: no count: %v", l.Name, err))
	case n >= 0:
		l.Count = n
		if caps.CountDefault > 0 && n == int64(caps.CountDefault) {
			notes = append(notes, fmt.Sprintf("%s: the count is exactly the largest page (CountDefault %d): some servers (MapServer with wfs_maxfeatures) cap RESULTTYPE=hits there, so there may be more", l.Name, n))
		}
	}
	return notes
}

// Snippet is a wfs task harvesting layer of s, as flow YAML (geoflow inspect --flow).
func Snippet(s *tasks.Service, layer string) (string, error) {
	l, err := s.FindLayer(layer)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "type: wfs\nurl: %s\ntypename: %s\n", s.URL, l.Name)
	if l.Extent != nil {
		fmt.Fprintf(&b, "# the layer's advertised extent, lon/lat: narrow it to harvest less\nbbox: %s\n", tasks.SnippetBBox(*l.Extent))
	}
	if srs := snippetSRS(l.CRSs); srs != "" {
		fmt.Fprintf(&b, "# the layer's CRS: it does not list EPSG:4326\nsrs: %s\n", srs)
	}
	fmt.Fprintf(&b, "target:\n  table: %s\n", tasks.SnippetName(l.Name))
	return b.String(), nil
}

// snippetSRS is the srs a snippet asks for: "" (EPSG:4326, the default) when the layer
// lists it or lists nothing, else the layer's default CRS.
func snippetSRS(crss []string) string {
	for _, c := range crss {
		if srid, err := spatial.SRID(c); err == nil && srid == 4326 {
			return ""
		}
	}
	for _, c := range crss {
		if srid, err := spatial.SRID(c); err == nil {
			return fmt.Sprintf("EPSG:%d", srid)
		}
	}
	return ""
}

// CheckOnline implements tasks.Online: the task's feature type, srs, filter, the
// properties its transform names and its bbox, against the server's capabilities and
// DescribeFeatureType. No feature is fetched; an srs the server does not list is tried
// with one count, as a run tries it.
func (c *Config) CheckOnline(ctx context.Context, env *tasks.Env, p tasks.Problems) error {
	t := &Task{cfg: *c}
	caps, err := t.capabilities(ctx, env)
	if err != nil {
		return err
	}
	ft, err := caps.findType(c.TypeName)
	if err != nil {
		p.At("typename", "%v", err)
		return nil
	}
	pr, key, err := t.resolve(caps, ft)
	if err != nil {
		p.At(key, "%v", err)
		return nil
	}
	if err := checkFilter(c.Filter, caps); err != nil {
		p.At("filter", "%v", err)
	}
	if err := checkExtent(c.BBox, pr.area, ft); err != nil {
		p.At("bbox", "%v", err)
	}
	if err := t.checkSRS(ctx, env, pr, ft); err != nil {
		p.At("srs", "%v", err)
	}
	schema, err := t.describe(ctx, env, pr)
	if err != nil {
		return err
	}
	if _, _, err := c.Transform.Plan(ft.Name, properties(schema.Properties)); err != nil {
		p.At("transform", "%v", err)
	}
	return nil
}

// resolve decides what a task asks of the feature type ft: version, format, srs and
// area, as prepare does before its first request for features; on failure key is the
// configuration key at fault.
func (t *Task) resolve(caps *Capabilities, ft *FeatureType) (p *prepared, key string, err error) {
	p = &prepared{caps: caps, version: chooseVersion(t.cfg.Version, caps.Version), typeName: ft.Name}
	if err := p.chooseFormat(t.cfg.OutputFormat); err != nil {
		return nil, "output_format", err
	}
	if p.srid, err = spatial.SRID(t.cfg.SRS); err != nil {
		return nil, "srs", fmt.Errorf("srs %q: %w", t.cfg.SRS, err)
	}
	p.latLonCRS = spatial.LatLonOrder(urnCRS(p.srid), "2.0.0")
	p.srsParam = srsName(t.cfg.SRS, p.srid, p.version, p.geoJSON)
	if p.area, _, err = harvestArea(t.cfg.BBox, t.cfg.BBoxCRS, ft); err != nil {
		return nil, "bbox", err
	}
	return p, "", nil
}

// checkExtent decides whether a configured bbox (area, lon/lat) may hold any of the
// feature type's features, from its advertised extent: an *tasks.ExtentError when it
// cannot. Without a configured bbox, or an advertised extent, there is nothing to check.
func checkExtent(bbox *[4]float64, area orb.Bound, ft *FeatureType) error {
	if bbox == nil || ft.WGS84 == nil {
		return nil
	}
	return tasks.CheckExtent(ft.Name, area, *ft.WGS84)
}

package ogcapi

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/internal/didyoumean"
	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/geojson"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

var _ tasks.Online = (*Config)(nil)

const (
	confCore     = "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core"
	confCQL2JSON = "http://www.opengis.net/spec/cql2/1.0/conf/cql2-json"
)

// landingURL splits a URL a user pasted into the API's landing page and the collection
// it names (.../collections/{id}[/items]), "" for none; an f parameter is dropped.
func landingURL(raw string) (landing, coll string) {
	u, err := url.Parse(raw)
	if err != nil {
		return raw, ""
	}
	q := u.Query()
	q.Del("f")
	u.RawQuery = q.Encode()
	if i := strings.Index(u.Path, "/collections"); i >= 0 {
		rest := strings.Split(strings.Trim(u.Path[i+len("/collections"):], "/"), "/")
		coll = rest[0]
		u.Path = u.Path[:i]
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return u.String(), coll
}

// collections is the /collections document.
type collections struct {
	Collections []collection `json:"collections"`
}

// Inspect describes the OGC API - Features service at rawURL (geoflow inspect): the
// landing page, conformance, the collections with their extents, the OpenAPI document's
// maximum of limit, and for the collections described whole (tasks.Describe) their
// queryables and a one-feature page: its numberMatched, its first feature's properties
// where there are no queryables, and its next link.
func Inspect(ctx context.Context, env *tasks.Env, rawURL string) (*tasks.Service, error) {
	base, only := landingURL(rawURL)
	if only != "" && tasks.InspectLayer(ctx) == "" {
		ctx = tasks.WithInspectLayer(ctx, only)
	}
	t := &Task{cfg: *NewConfig()}
	t.cfg.URL = base
	var land landing
	if err := t.getJSON(ctx, env, "landing", withF(base), "landing page", &land); err != nil {
		return nil, tasks.ProbeError(err)
	}
	if len(land.Links) == 0 {
		return nil, fmt.Errorf("%w: %s answers JSON without links, not an OGC API landing page", tasks.ErrNotThisKind, redact.URL(base))
	}
	p := &prepared{}
	confURL := t.keepQuery(cmp.Or(find(land.Links, "conformance", base), join(base, "conformance")))
	var conf struct {
		ConformsTo []string `json:"conformsTo"`
	}
	if err := t.getJSON(ctx, env, "conformance", withF(confURL), "conformance declaration", &conf); err != nil {
		return nil, tasks.ProbeError(err)
	}
	p.conformance = conf.ConformsTo
	if land.STACVersion != "" || slices.ContainsFunc(p.conformance, func(c string) bool { return strings.Contains(c, "api.stacspec.org") }) {
		return nil, fmt.Errorf("%w: %s is a STAC API, whose items are imagery (type: imagery)", tasks.ErrNotThisKind, redact.URL(base))
	}
	if !t.conforms(p, confCore) {
		return nil, fmt.Errorf("%w: %s does not declare OGC API - Features core (%s)", tasks.ErrNotThisKind, redact.URL(base), confCore)
	}
	data := t.keepQuery(cmp.Or(find(land.Links, "data", base), join(base, "collections")))
	var cs collections
	if err := t.getJSON(ctx, env, "collections", withF(data), "collections", &cs); err != nil {
		return nil, err
	}
	s := &tasks.Service{Kind: "ogcapi_features", Protocol: "OGC API - Features", URL: redact.URL(base), Title: land.Title,
		Filters: ogcFilters(t, p)}
	t.openAPI(ctx, env, &land, cs.Collections, s)
	s.Sorting = s.Sorting || slices.ContainsFunc(p.conformance, func(c string) bool { return strings.Contains(c, "/conf/sorting") })
	features := slices.DeleteFunc(slices.Clone(cs.Collections), func(c collection) bool { return c.ItemType != "" && c.ItemType != "feature" })
	for i := range features {
		c := &features[i]
		l := tasks.Layer{Name: c.ID, Title: c.Title, Count: -1, CRSs: c.CRS, Extent: collExtent(c)}
		if l.Extent == nil {
			s.Notes = append(s.Notes, fmt.Sprintf("%s states no CRS84 extent", c.ID))
		}
		if tasks.Describe(ctx, c.ID, len(features)) {
			s.Notes = append(s.Notes, t.describeListed(ctx, env, data, c, &l, s)...)
		}
		s.Layers = append(s.Layers, l)
	}
	if len(features) > tasks.MaxDescribed && tasks.InspectLayer(ctx) == "" {
		s.Notes = append(s.Notes, tasks.NotDescribedNote(len(features)))
	}
	return s, nil
}

// describeListed describes a collection of the list from its own document, the one a
// harvest reads, and follows that document's links as the harvest does.
func (t *Task) describeListed(ctx context.Context, env *tasks.Env, data string, c *collection, l *tasks.Layer, s *tasks.Service) []string {
	collURL := t.keepQuery(join(data, c.ID))
	var own collection
	if err := t.getJSON(ctx, env, "collection", withF(collURL), "collection "+c.ID, &own); err != nil {
		return []string{fmt.Sprintf("%s: %v", c.ID, err)}
	}
	items := t.keepQuery(cmp.Or(find(own.Links, "items", collURL), join(collURL, "items")))
	return t.describeCollection(ctx, env, items, collURL, &own, l, s)
}

// ogcFilters are the filter languages the conformance declares.
func ogcFilters(t *Task, p *prepared) []string {
	f := []string{"bbox"}
	if t.conforms(p, confFilter) && t.conforms(p, confCQL2Text) {
		f = append(f, "CQL2 text")
	}
	if t.conforms(p, confFilter) && t.conforms(p, confCQL2JSON) {
		f = append(f, "CQL2 JSON")
	}
	return f
}

// openAPI reads the OpenAPI document the landing page links, for limit's maximum and a
// sortby parameter; a document that cannot be read leaves them unknown, with a note.
func (t *Task) openAPI(ctx context.Context, env *tasks.Env, land *landing, cs []collection, s *tasks.Service) {
	desc := t.keepQuery(find(land.Links, "service-desc", t.cfg.URL))
	if desc == "" {
		return
	}
	var doc openAPI
	if err := t.getJSON(ctx, env, "openapi", desc, "OpenAPI document", &doc); err != nil {
		s.Notes = append(s.Notes, fmt.Sprintf("the OpenAPI document could not be read: %v", err))
		return
	}
	for _, c := range cs {
		if m := doc.limitMax(c.ID); m > 0 && (s.MaxPage == 0 || int(m) < s.MaxPage) {
			s.MaxPage = int(m)
		}
	}
	if len(cs) == 0 {
		s.MaxPage = int(doc.limitMax(""))
	}
	s.Sorting = doc.hasParam("sortby")
}

// hasParam tells whether an items path of the document takes the query parameter name.
func (d *openAPI) hasParam(name string) bool {
	for path, ops := range d.Paths {
		if !strings.HasSuffix(path, "/items") {
			continue
		}
		for _, p := range ops["get"].Parameters {
			if p.Ref != "" {
				p = d.Components.Parameters[p.Ref[strings.LastIndex(p.Ref, "/")+1:]]
			}
			if p.Name == name {
				return true
			}
		}
	}
	return false
}

// collExtent is a collection's first spatial extent in lon/lat, nil when it states none
// or states it in another CRS.
func collExtent(c *collection) *orb.Bound {
	sp := c.Extent.Spatial
	if len(sp.BBox) == 0 || len(sp.BBox[0]) < 4 || sp.CRS != "" && !strings.HasSuffix(strings.ToUpper(sp.CRS), "CRS84") {
		return nil
	}
	e := sp.BBox[0]
	if len(e) == 6 {
		e = []float64{e[0], e[1], e[3], e[4]}
	}
	return &orb.Bound{Min: orb.Point{e[0], e[1]}, Max: orb.Point{e[2], e[3]}}
}

// describeCollection fills l's fields (queryables, else the first feature's properties),
// geometry type and count (numberMatched of a one-feature page), and s's paging (the
// page's next link).
// Relative links of c resolve against linkBase.
func (t *Task) describeCollection(ctx context.Context, env *tasks.Env, items, linkBase string, c *collection, l *tasks.Layer, s *tasks.Service) []string {
	var notes []string
	if q := t.keepQuery(find(c.Links, relQueryables, linkBase)); q != "" {
		var qs queryables
		if err := t.getJSON(ctx, env, "queryables", withF(q), "queryables", &qs); err != nil {
			notes = append(notes, fmt.Sprintf("%s: the queryables could not be read: %v", c.ID, err))
		}
		for n, v := range qs.Properties {
			if typ, ok := schemaType(v.Type, v.Format); ok {
				l.Fields = append(l.Fields, tasks.Field{Name: n, Type: string(typ)})
			} else if l.Geometry == "" {
				l.Geometry = strings.TrimPrefix(v.Format, "geometry-")
			}
		}
		slices.SortFunc(l.Fields, func(a, b tasks.Field) int { return strings.Compare(a.Name, b.Name) })
	}
	first, meta, err := t.firstFeature(ctx, env, items)
	if err != nil {
		return append(notes, fmt.Sprintf("%s: a one-feature page failed: %v", c.ID, err))
	}
	l.Count = meta.NumberMatched
	if meta.NumberMatched < 0 {
		notes = append(notes, fmt.Sprintf("%s: the server gives no numberMatched", c.ID))
	}
	if meta.Next != "" {
		s.Paging = "next links"
		if op := pagingParam(meta.Next); op != "" {
			s.Paging = "next links (" + op + " and limit)"
		}
	}
	if first != nil {
		if l.Geometry == "" && first.Geometry != nil {
			l.Geometry = first.Geometry.GeoJSONType()
		}
		if len(l.Fields) == 0 {
			keys := make([]string, 0, len(first.Properties))
			for k := range first.Properties {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				l.Fields = append(l.Fields, tasks.Field{Name: k, Type: string(cmp.Or(valueType(first.Properties[k]), "null"))})
			}
		}
	}
	return notes
}

// firstFeature asks items for a page of one feature: the feature (nil when there is
// none) and the page's counts and links.
func (t *Task) firstFeature(ctx context.Context, env *tasks.Env, items string) (*spatial.Feature, spatial.Meta, error) {
	u := items
	if p, err := url.Parse(items); err == nil {
		v := p.Query()
		v.Set("limit", "1")
		if !v.Has("f") {
			v.Set("f", "json")
		}
		p.RawQuery = v.Encode()
		u = p.String()
	}
	var first *spatial.Feature
	meta := spatial.UnknownMeta()
	err := env.HTTP.Do(ctx, t.request(env, "count", u, acceptFeatures), func(resp *http.Response) error {
		if err := tasks.RefuseHTML(resp); err != nil {
			return err
		}
		r := geojson.NewReader(resp.Body, geojson.Options{})
		err := spatial.Walk(r, func(f *spatial.Feature) error {
			if first == nil {
				first = f
			}
			return nil
		})
		if err != nil {
			return classify(err)
		}
		meta = r.Meta()
		return nil
	})
	return first, meta, err
}

// Snippet is an ogcapi_features task harvesting layer of s, as flow YAML (geoflow
// inspect --flow).
func Snippet(s *tasks.Service, layer string) (string, error) {
	l, err := s.FindLayer(layer)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "type: ogcapi_features\nurl: %s\ncollection: %s\n", s.URL, l.Name)
	if l.Extent != nil {
		fmt.Fprintf(&b, "# the collection's extent, lon/lat: narrow it to harvest less\nbbox: %s\n", tasks.SnippetBBox(*l.Extent))
	}
	fmt.Fprintf(&b, "target:\n  table: %s\n", tasks.SnippetName(l.Name))
	return b.String(), nil
}

// CheckOnline implements tasks.Online: the task's collection, crs, filter (and a
// transform.where pushed down as CQL2), properties and bbox against the server's landing
// page, conformance, collection, queryables or first feature. No feature is fetched
// beyond a one-feature page where the server publishes no queryables.
func (c *Config) CheckOnline(ctx context.Context, env *tasks.Env, p tasks.Problems) error {
	t, err := newTask("online", *c)
	if err != nil {
		return err
	}
	pr := &prepared{}
	_, coll, err := t.discover(ctx, env, pr)
	if err != nil {
		t.reportCollection(ctx, env, err, p)
		return nil
	}
	if err := t.checkFilter(pr); err != nil {
		p.At("filter", "%v", err)
	}
	if err := t.chooseCRS(pr, coll); err != nil {
		p.At("crs", "%v", err)
	}
	if ext := collExtent(coll); c.BBox != nil && ext != nil {
		b := *c.BBox
		if err := tasks.CheckExtent(c.Collection, orb.Bound{Min: orb.Point{b[0], b[1]}, Max: orb.Point{b[2], b[3]}}, *ext); err != nil {
			p.At("bbox", "%v", err)
		}
	}
	var l tasks.Layer
	var s tasks.Service
	t.describeCollection(ctx, env, pr.items, pr.items, coll, &l, &s)
	names := make([]string, len(l.Fields))
	props := make([]tasks.Property, len(l.Fields))
	for i, f := range l.Fields {
		names[i] = f.Name
		props[i] = tasks.Property{Name: f.Name, Type: store.ColumnType(f.Type)}
		if f.Type == "null" {
			props[i].Type = store.TypeText
		}
	}
	if len(props) > 0 {
		if _, _, err := c.Transform.Plan(c.Collection, props); err != nil {
			p.At("transform", "%v", err)
		}
	}
	for _, name := range c.Properties {
		if len(names) > 0 && !slices.Contains(names, name) {
			p.At("properties", "collection %q has no property %q%s", c.Collection, name, didYouMean(name, names))
		}
	}
	if c.Transform.Where != "" && !slices.Contains(ogcFilters(t, pr), "CQL2 text") {
		env.Logger.Info("transform.where is evaluated by geoflow, on every feature of the area: the server does not declare CQL2 text filtering", "collection", c.Collection)
	}
	return nil
}

// reportCollection reports a collection the server does not have at collection, naming
// the nearest it has; any other failure at url.
func (t *Task) reportCollection(ctx context.Context, env *tasks.Env, err error, p tasks.Problems) {
	var cs collections
	data := t.keepQuery(join(t.cfg.URL, "collections"))
	if t.getJSON(ctx, env, "collections", withF(data), "collections", &cs) != nil || len(cs.Collections) == 0 {
		p.At("url", "%v", err)
		return
	}
	names := make([]string, len(cs.Collections))
	for i, c := range cs.Collections {
		names[i] = c.ID
	}
	if !slices.Contains(names, t.cfg.Collection) {
		p.At("collection", "the server has no collection %q (it has %s)%s", t.cfg.Collection, strings.Join(names, ", "), didYouMean(t.cfg.Collection, names))
		return
	}
	p.At("url", "%v", err)
}

func didYouMean(s string, names []string) string {
	if n := didyoumean.Nearest(s, names); n != "" {
		return fmt.Sprintf("; did you mean %q?", n)
	}
	return ""
}

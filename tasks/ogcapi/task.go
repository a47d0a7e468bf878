package ogcapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/geojson"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/internal/harvest"
)

var (
	_ tasks.Task       = (*Task)(nil)
	_ tasks.Finisher   = (*Task)(nil)
	_ harvest.Protocol = (*protocol)(nil)
)

// sampleSize is how many features are read to lay out the table's columns when the
// server publishes no queryables.
const sampleSize = 200

// Task is a configured ogcapi_features task. Its setup (landing page, conformance,
// collection, the target table) happens once, on the first Plan or Execute; Execute is
// safe for concurrent use.
type Task struct {
	id            string
	cfg           Config
	schema, table string

	once sync.Mutex
	p    *prepared // nil until prepare succeeds
	// unknown are the properties met that have no column, each logged once.
	unknown sync.Map
}

// prepared is what the task learned from the server; read-only once set.
type prepared struct {
	items       string // the items URL, with any query of its own
	conformance []string
	crsParam    string // the crs parameter, "" for the default CRS84
	srid        int
	latFirst    bool   // the CRS's axis order is latitude first: coordinates are swapped
	offsetParam string // the paging parameter the server's next links use, "" unknown
	table       *store.FeatureTable
	columns     map[string]bool // the properties that have a column
	eng         *harvest.Engine
}

func newTask(id string, c Config) (*Task, error) {
	schema, table, err := store.SplitTable(c.Target.Table)
	if err != nil {
		return nil, err
	}
	return &Task{id: id, cfg: c, schema: schema, table: table}, nil
}

// Plan implements tasks.Task: one root tile over the area, counted where the server
// counts; tiles split as they learn how many features they hold.
func (t *Task) Plan(ctx context.Context, env *tasks.Env) ([]store.Unit, error) {
	p, err := t.prepare(ctx, env)
	if err != nil {
		return nil, err
	}
	return p.eng.Plan(ctx, env)
}

// Execute implements tasks.Task.
func (t *Task) Execute(ctx context.Context, env *tasks.Env, u store.Unit) (*tasks.Output, error) {
	p, err := t.prepare(ctx, env)
	if err != nil {
		return nil, err
	}
	return p.eng.Execute(ctx, env, u)
}

// Finish implements tasks.Finisher: the stored distinct count is checked against the
// server's count for the area.
func (t *Task) Finish(ctx context.Context, env *tasks.Env) error {
	t.once.Lock()
	p := t.p
	t.once.Unlock()
	if p == nil {
		return nil
	}
	return p.eng.Finish(ctx, env)
}

// prepare reads the landing page, conformance and collection once, checks that the server
// can do what the configuration asks, lays out the table (from the queryables, or a
// sample of features) and makes the harvest engine. A failure is not cached, so a later
// unit (or a replay) tries again.
func (t *Task) prepare(ctx context.Context, env *tasks.Env) (*prepared, error) {
	t.once.Lock()
	defer t.once.Unlock()
	if t.p != nil {
		return t.p, nil
	}
	p := &prepared{}
	base := t.cfg.URL
	var land landing
	if err := t.getJSON(ctx, env, "landing", withF(base), "landing page", &land); err != nil {
		return nil, err
	}
	confURL := t.keepQuery(cmp.Or(find(land.Links, "conformance", base), find(land.Links, "http://www.opengis.net/def/rel/ogc/1.0/conformance", base), join(base, "conformance")))
	var conf struct {
		ConformsTo []string `json:"conformsTo"`
	}
	if err := t.getJSON(ctx, env, "conformance", withF(confURL), "conformance declaration", &conf); err != nil {
		return nil, err
	}
	p.conformance = conf.ConformsTo
	data := t.keepQuery(cmp.Or(find(land.Links, "data", base), find(land.Links, "http://www.opengis.net/def/rel/ogc/1.0/data", base), join(base, "collections")))
	collURL := join(data, t.cfg.Collection)
	var coll collection
	if err := t.getJSON(ctx, env, "collection", withF(collURL), "collection "+strconv.Quote(t.cfg.Collection), &coll); err != nil {
		return nil, err
	}
	p.items = t.keepQuery(cmp.Or(find(coll.Links, "items", collURL), join(collURL, "items")))

	if t.cfg.Filter != "" && (!t.conforms(p, confFilter) || !t.conforms(p, confCQL2Text)) {
		return nil, fmt.Errorf("filter: the server does not declare the Features Part 3 filter and CQL2 text conformance classes (%s, %s), so it cannot be trusted to apply the filter; remove filter: or use another server",
			confFilter, confCQL2Text)
	}
	if err := t.chooseCRS(p, &coll); err != nil {
		return nil, err
	}
	area, err := t.area(env, &coll)
	if err != nil {
		return nil, err
	}
	ps := int64(defaultPageSize)
	if t.cfg.PageSize > 0 {
		ps = int64(t.cfg.PageSize)
	}
	if desc := t.keepQuery(find(land.Links, "service-desc", base)); desc != "" {
		var doc openAPI
		if err := t.getJSON(ctx, env, "openapi", desc, "OpenAPI document", &doc); err != nil {
			env.Logger.Warn("could not read the OpenAPI document for limit's maximum; the page size is learnt from the answers", "err", err)
		} else if m := doc.limitMax(t.cfg.Collection); m > 0 && m < ps {
			env.Logger.Info("the server's OpenAPI document caps limit", "maximum", m, "asked", ps)
			ps = m
		}
	}

	sampleArea := area
	if env.Area != nil && env.Area.Intersects(area) {
		sampleArea = harvest.Intersect(area, *env.Area) // a --bbox rerun asks for nothing beyond its area
	}
	props, sample, err := t.properties(ctx, env, p, &coll, sampleArea)
	if err != nil {
		return nil, err
	}
	p.table = &store.FeatureTable{Schema: t.schema, Name: t.table, SRID: p.srid, Mode: t.cfg.Target.Mode, Key: t.cfg.Target.Key}
	p.table.Columns = tasks.Columns(props)
	p.columns = map[string]bool{}
	for _, c := range p.table.Columns {
		p.columns[c.Property] = true
	}
	if err := tasks.CheckKey(p.table, t.cfg.Collection); err != nil {
		return nil, err
	}
	if err := env.Store.EnsureFeatureTable(ctx, p.table); err != nil {
		return nil, err
	}
	counts := sample.NumberMatched >= 0
	if !counts {
		env.Logger.Warn("the server gives no numberMatched: tiles are split whenever a page comes back full, and completeness cannot be checked", "collection", t.cfg.Collection)
	}
	if n := sample.Next; n != "" {
		p.offsetParam = pagingParam(n)
	}
	if p.offsetParam != "" {
		t.checkOffsets(ctx, env, p, sampleArea)
	}
	p.eng = harvest.New(harvest.Config{
		Protocol:   &protocol{t: t, p: p},
		Caps:       harvest.Caps{Counts: counts, MatchedInResponse: counts, Pages: p.offsetParam != ""},
		Table:      p.table,
		Area:       area,
		PageSize:   ps,
		Geographic: p.srid == 4326, // the box is CRS84: a wrong swap is caught and undone
	})
	env.Logger.Info("ogcapi_features negotiated", "collection", t.cfg.Collection, "items", redact.URL(p.items), "page_size", ps,
		"number_matched", counts, "paging", cmp.Or(p.offsetParam, "none"), "crs", cmp.Or(p.crsParam, "CRS84"),
		"table", p.table.Schema+"."+p.table.Name, "srid", p.srid)
	t.p = p
	return p, nil
}

func (t *Task) conforms(p *prepared, class string) bool {
	return slices.ContainsFunc(p.conformance, func(c string) bool {
		return strings.EqualFold(strings.TrimSuffix(c, "/"), class)
	})
}

// chooseCRS checks the configured CRS against the server: the default CRS84 needs
// nothing; another must be declared (Part 2) and listed by the collection.
func (t *Task) chooseCRS(p *prepared, coll *collection) error {
	p.srid = 4326
	if t.cfg.CRS == "" {
		return nil
	}
	srid, err := spatial.SRID(t.cfg.CRS)
	if err != nil {
		return fmt.Errorf("crs %q: %w", t.cfg.CRS, err)
	}
	uri := fmt.Sprintf("http://www.opengis.net/def/crs/EPSG/0/%d", srid)
	if srid == 4326 && !strings.Contains(t.cfg.CRS, "/EPSG/") && !strings.Contains(strings.ToLower(t.cfg.CRS), "urn:") {
		return nil // EPSG:4326 written short: CRS84, lon/lat, the default
	}
	if !t.conforms(p, confCRS) {
		return fmt.Errorf("crs %s: the server does not declare Features Part 2 (%s), so it serves CRS84 only; drop crs: to store EPSG:4326", t.cfg.CRS, confCRS)
	}
	listed := slices.ContainsFunc(coll.CRS, func(c string) bool {
		s, err := spatial.SRID(c)
		return err == nil && s == srid && !strings.HasSuffix(strings.ToUpper(c), "CRS84")
	})
	if !listed {
		return fmt.Errorf("crs %s: collection %q does not list it (it lists %s)", t.cfg.CRS, t.cfg.Collection, strings.Join(coll.CRS, ", "))
	}
	p.srid, p.crsParam = srid, uri
	p.latFirst = spatial.LatLonOrder(uri, "2.0.0")
	return nil
}

// area is the configured bbox, else the collection's extent.
func (t *Task) area(env *tasks.Env, coll *collection) (orb.Bound, error) {
	if b := t.cfg.BBox; b != nil {
		return orb.Bound{Min: orb.Point{b[0], b[1]}, Max: orb.Point{b[2], b[3]}}, nil
	}
	sp := coll.Extent.Spatial
	if len(sp.BBox) == 0 || len(sp.BBox[0]) < 4 {
		return orb.Bound{}, fmt.Errorf("no bbox given and collection %q states no spatial extent: set bbox", t.cfg.Collection)
	}
	if sp.CRS != "" && !strings.HasSuffix(strings.ToUpper(sp.CRS), "CRS84") {
		return orb.Bound{}, fmt.Errorf("no bbox given and collection %q states its extent in %s, not CRS84: set bbox", t.cfg.Collection, sp.CRS)
	}
	e := sp.BBox[0]
	if len(e) == 6 { // with heights: minx,miny,minz,maxx,maxy,maxz
		e = []float64{e[0], e[1], e[3], e[4]}
	}
	b := [4]float64{e[0], e[1], e[2], e[3]}
	if err := spatial.ValidateBBox(b, true); err != nil {
		return orb.Bound{}, fmt.Errorf("collection %q states an extent geoflow cannot use (%v): set bbox", t.cfg.Collection, err)
	}
	area := orb.Bound{Min: orb.Point{b[0], b[1]}, Max: orb.Point{b[2], b[3]}}
	env.Logger.Info("no bbox given: harvesting the collection's extent", "bbox", harvest.FormatBound(area))
	return area, nil
}

// properties lays out the table's columns: from the collection's queryables where the
// server publishes them, else from a sample of the area's features (numbers as numeric,
// which holds integers and decimals exactly; strings as text). The sample's answer also
// tells whether the server counts (numberMatched) and how its next links page.
func (t *Task) properties(ctx context.Context, env *tasks.Env, p *prepared, coll *collection, area orb.Bound) ([]tasks.Property, spatial.Meta, error) {
	var props []tasks.Property
	seen := map[string]int{}      // property -> index in props
	declared := map[string]bool{} // typed by the queryables: the sample does not retype them
	add := func(name string, typ store.ColumnType) {
		if i, ok := seen[name]; ok {
			if props[i].Type != typ && typ != "" && !declared[name] {
				props[i].Type = widen(props[i].Type, typ)
			}
			return
		}
		seen[name] = len(props)
		props = append(props, tasks.Property{Name: name, Type: typ})
	}
	if q := t.keepQuery(find(coll.Links, relQueryables, p.items)); q != "" {
		var qs queryables
		if err := t.getJSON(ctx, env, "queryables", withF(q), "queryables", &qs); err != nil {
			env.Logger.Warn("could not read the queryables; the columns are laid out from a sample", "err", err)
		} else {
			names := make([]string, 0, len(qs.Properties))
			for n := range qs.Properties {
				names = append(names, n)
			}
			slices.Sort(names)
			for _, n := range names {
				if typ, ok := schemaType(qs.Properties[n].Type, qs.Properties[n].Format); ok && t.wanted(n) {
					add(n, typ)
					declared[n] = true
				}
			}
		}
	}
	meta := spatial.UnknownMeta()
	q := harvest.Query{Box: area, Count: sampleSize}
	fromQueryables := slices.Clone(props)
	err := env.HTTP.Do(ctx, t.request(env, "sample", t.itemsURL(p, q), acceptFeatures), func(resp *http.Response) error {
		// An earlier attempt's sample is forgotten; the queryables' columns are kept.
		props, seen = slices.Clone(fromQueryables), map[string]int{}
		for i, pr := range props {
			seen[pr.Name] = i
		}
		if err := checkContentType(resp); err != nil {
			return err
		}
		r := geojson.NewReader(resp.Body, geojson.Options{Limits: t.cfg.Limits.Spatial()})
		for {
			f, err := r.Next()
			if err == io.EOF {
				break
			}
			var fe *spatial.FeatureError
			if errors.As(err, &fe) {
				continue
			}
			if err != nil {
				return classify(err)
			}
			keys := make([]string, 0, len(f.Properties))
			for k := range f.Properties {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				if t.wanted(k) {
					add(k, valueType(f.Properties[k]))
				}
			}
		}
		meta = r.Meta()
		return nil
	})
	if err != nil {
		return nil, meta, fmt.Errorf("reading a sample of collection %q: %w", t.cfg.Collection, err)
	}
	for i := range props {
		if props[i].Type == "" {
			props[i].Type = store.TypeText // null in every sampled feature
		}
	}
	return props, meta, nil
}

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
			if err := checkContentType(resp); err != nil {
				return err
			}
			r := geojson.NewReader(resp.Body, geojson.Options{Limits: t.cfg.Limits.Spatial()})
			for {
				f, err := r.Next()
				if err == io.EOF {
					return nil
				}
				if err != nil {
					return classify(err)
				}
				out = append(out, f.ID)
			}
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

// wanted says whether property name is harvested (properties: restricts them).
func (t *Task) wanted(name string) bool {
	return len(t.cfg.Properties) == 0 || slices.Contains(t.cfg.Properties, name)
}

// schemaType maps a JSON Schema type (and format) to a column type; ok is false for
// geometry and what cannot be a column.
func schemaType(typ any, format string) (store.ColumnType, bool) {
	var s string
	switch v := typ.(type) {
	case string:
		s = v
	case []any:
		for _, x := range v {
			if x, ok := x.(string); ok && x != "null" {
				s = x
			}
		}
	}
	if strings.HasPrefix(format, "geometry") {
		return "", false
	}
	switch s {
	case "integer":
		return store.TypeBigint, true
	case "number":
		return store.TypeNumeric, true
	case "boolean":
		return store.TypeBoolean, true
	case "string":
		switch format {
		case "date-time":
			return store.TypeTimestamptz, true
		case "date":
			return store.TypeDate, true
		}
		return store.TypeText, true
	}
	return store.TypeText, true
}

// valueType is the column type of one sampled value, "" for null.
func valueType(v any) store.ColumnType {
	switch v.(type) {
	case nil:
		return ""
	case bool:
		return store.TypeBoolean
	case float64:
		return store.TypeNumeric
	}
	return store.TypeText
}

// widen is a column type that holds values of both a and b.
func widen(a, b store.ColumnType) store.ColumnType {
	switch {
	case a == "":
		return b
	case b == "" || a == b:
		return a
	}
	return store.TypeText
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
	if t.cfg.Filter != "" {
		v.Set("filter", t.cfg.Filter)
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
		if err := checkContentType(resp); err != nil {
			return err
		}
		r := geojson.NewReader(resp.Body, geojson.Options{Limits: w.t.cfg.Limits.Spatial()})
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			var fe *spatial.FeatureError
			if errors.As(err, &fe) {
				continue
			}
			if err != nil {
				return classify(err)
			}
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
func (w *protocol) CheckResponse(resp *http.Response) error { return checkContentType(resp) }

// Decode implements harvest.Protocol: GeoJSON, swapped to x/y where the CRS asked for is
// latitude first.
func (w *protocol) Decode(env *tasks.Env, body io.Reader) harvest.Decoder {
	return &unknownProps{Reader: geojson.NewReader(body, geojson.Options{SwapXY: w.p.latFirst, Limits: w.t.cfg.Limits.Spatial()}), p: w.p, t: w.t, env: env}
}

// unknownProps watches for properties that have no column: laid out from a sample, the
// table may miss a property the sample's features did not carry. Such a property is not
// stored; the first of each name is logged, so that the user can name it in properties:
// or recreate the table.
type unknownProps struct {
	*geojson.Reader
	p   *prepared
	t   *Task
	env *tasks.Env
}

func (u *unknownProps) Next() (*spatial.Feature, error) {
	f, err := u.Reader.Next()
	if err == nil {
		for k := range f.Properties {
			if !u.p.columns[k] && u.t.wanted(k) {
				if _, seen := u.t.unknown.LoadOrStore(k, true); !seen {
					u.env.Logger.Warn("a property the table has no column for is not stored (it was absent from the sample the columns were laid out from)",
						"property", k, "feature", f.ID, "table", u.p.table.Schema+"."+u.p.table.Name)
				}
			}
		}
	}
	return f, err
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

package ogcapi

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/internal/harvest"
)

var (
	_ tasks.Task       = (*Task)(nil)
	_ tasks.Finisher   = (*Task)(nil)
	_ harvest.Protocol = (*protocol)(nil)
)

// Task is a configured ogcapi_features task. Its setup (landing page, conformance,
// collection, the target table) happens once, on the first Plan or Execute; Execute is
// safe for concurrent use.
type Task struct {
	// Task makes Plan, Execute, Follow and Finish the harvest engine's, once negotiated.
	harvest.Task

	id            string
	cfg           Config
	schema, table string

	prepMu sync.Mutex // serializes prepare: one negotiation at a time, its result kept in p
	p      *prepared  // nil until prepare succeeds
	// unknown are the properties met that have no column, each logged once.
	unknown sync.Map
}

// prepared is what the task learned from the server; read-only once set.
type prepared struct {
	// transform is the task's transform planned against the layer; nil changes nothing.
	transform *tasks.Transformer
	// pushdown is transform.where as sent to a server that evaluates CQL2, "" when not sent.
	pushdown    string
	items       string // the items URL, with any query of its own
	conformance []string
	crsParam    string // the crs parameter, "" for the default CRS84
	srid        int
	latFirst    bool   // the CRS's axis order is latitude first: coordinates are swapped
	offsetParam string // the paging parameter the server's next links use, "" unknown
	table       *store.FeatureTable
	columns     map[string]bool // the properties the layer declares (a column each, unless transform.columns selects)
	eng         *harvest.Engine
}

func newTask(id string, c Config) (*Task, error) {
	schema, table, err := store.SplitTable(c.Target.Table)
	if err != nil {
		return nil, err
	}
	t := &Task{id: id, cfg: c, schema: schema, table: table}
	t.Task.Source = t
	return t, nil
}

// Negotiate implements harvest.Negotiator.
func (t *Task) Negotiate(ctx context.Context, env *tasks.Env) (*harvest.Engine, error) {
	p, err := t.prepare(ctx, env)
	if err != nil {
		return nil, err
	}
	return p.eng, nil
}

// prepare reads the landing page, conformance and collection once, checks that the server
// can do what the configuration asks, lays out the table (from the queryables, or a
// sample of features) and makes the harvest engine. A failure is not cached, so a later
// unit (or a replay) tries again.
func (t *Task) prepare(ctx context.Context, env *tasks.Env) (*prepared, error) {
	t.prepMu.Lock()
	defer t.prepMu.Unlock()
	if t.p != nil {
		return t.p, nil
	}
	p := &prepared{}
	land, coll, err := t.discover(ctx, env, p)
	if err != nil {
		return nil, err
	}
	if err := t.checkFilter(p); err != nil {
		return nil, err
	}
	if err := t.chooseCRS(p, coll); err != nil {
		return nil, err
	}
	area, err := t.area(env, coll)
	if err != nil {
		return nil, err
	}
	if ext := collExtent(coll); t.cfg.BBox != nil && ext != nil {
		if err := tasks.CheckExtent(t.cfg.Collection, area, *ext); err != nil {
			return nil, err // the runner names the task
		}
	}
	ps := t.pageSize(ctx, env, land)
	sample := sampleArea(area, env.Area)
	props, meta, err := t.properties(ctx, env, p, coll, sample)
	if err != nil {
		return nil, err
	}
	p.table = &store.FeatureTable{Schema: t.schema, Name: t.table, SRID: p.srid, Mode: t.cfg.Target.Mode, Key: t.cfg.Target.Key, History: t.cfg.Target.History}
	t.cfg.Target.Reproject(p.table)
	if p.table.Columns, p.transform, err = t.cfg.Transform.Plan(t.cfg.Collection, props); err != nil {
		return nil, err
	}
	p.columns = map[string]bool{}
	for _, pr := range props {
		p.columns[pr.Name] = true // known to the schema, whether the transform keeps it or not
	}
	p.pushdown = t.pushdown(p)
	if err := tasks.CheckKey(p.table, t.cfg.Collection); err != nil {
		return nil, err
	}
	if err := env.Features.EnsureFeatureTable(ctx, p.table); err != nil {
		return nil, err
	}
	counts := meta.NumberMatched >= 0
	if !counts {
		env.Logger.Warn("the server gives no numberMatched: tiles are split whenever a page comes back full, and completeness cannot be checked", "collection", t.cfg.Collection)
	}
	if n := meta.Next; n != "" {
		p.offsetParam = pagingParam(n)
	}
	if p.offsetParam != "" {
		t.checkOffsets(ctx, env, p, sample)
	}
	p.eng = harvest.New(harvest.Config{
		Protocol:   &protocol{t: t, p: p},
		Caps:       harvest.Caps{Counts: counts, MatchedInResponse: counts, Pages: p.offsetParam != ""},
		Table:      p.table,
		Area:       area,
		PageSize:   ps,
		Geographic: p.srid == 4326, // the box is CRS84: a wrong swap is caught and undone
		Budget:     t.cfg.Limits.Budget(),

		MaxDeleteFraction: t.cfg.Target.DeleteFraction(), Lookup: t.lookup(p), DeleteAfter: t.cfg.Target.AbsentRuns(),
		Transform: p.transform,
	})
	env.Logger.Info("ogcapi_features negotiated", "collection", t.cfg.Collection, "items", redact.URL(p.items), "page_size", ps,
		"number_matched", counts, "paging", cmp.Or(p.offsetParam, "none"), "crs", cmp.Or(p.crsParam, "CRS84"),
		"table", p.table.Schema+"."+p.table.Name, "srid", p.srid)
	t.p = p
	return p, nil
}

// discover follows the landing page to the conformance declaration (into p.conformance)
// and the collection, whose items URL it keeps in p.items. A link the server does not
// give is taken at its conventional path.
func (t *Task) discover(ctx context.Context, env *tasks.Env, p *prepared) (*landing, *collection, error) {
	base := t.cfg.URL
	var land landing
	if err := t.getJSON(ctx, env, "landing", withF(base), "landing page", &land); err != nil {
		return nil, nil, err
	}
	confURL := t.keepQuery(cmp.Or(find(land.Links, "conformance", base), find(land.Links, "http://www.opengis.net/def/rel/ogc/1.0/conformance", base), join(base, "conformance")))
	var conf struct {
		ConformsTo []string `json:"conformsTo"`
	}
	if err := t.getJSON(ctx, env, "conformance", withF(confURL), "conformance declaration", &conf); err != nil {
		return nil, nil, err
	}
	p.conformance = conf.ConformsTo
	data := t.keepQuery(cmp.Or(find(land.Links, "data", base), find(land.Links, "http://www.opengis.net/def/rel/ogc/1.0/data", base), join(base, "collections")))
	collURL := join(data, t.cfg.Collection)
	var coll collection
	if err := t.getJSON(ctx, env, "collection", withF(collURL), "collection "+strconv.Quote(t.cfg.Collection), &coll); err != nil {
		return nil, nil, err
	}
	p.items = t.keepQuery(cmp.Or(find(coll.Links, "items", collURL), join(collURL, "items")))
	return &land, &coll, nil
}

// checkFilter refuses a filter where the server does not declare both Features Part 3
// and CQL2 text: it cannot be trusted to apply it.
func (t *Task) checkFilter(p *prepared) error {
	if t.cfg.Filter != "" && (!t.conforms(p, confFilter) || !t.conforms(p, confCQL2Text)) {
		return fmt.Errorf("filter: the server does not declare the Features Part 3 filter and CQL2 text conformance classes (%s, %s), so it cannot be trusted to apply the filter; remove filter: or use another server",
			confFilter, confCQL2Text)
	}
	return nil
}

// pageSize decides the features asked for per page: the configured page size (else
// defaultPageSize), capped at the maximum of limit the server's OpenAPI document states,
// where it links one that can be read.
func (t *Task) pageSize(ctx context.Context, env *tasks.Env, land *landing) int64 {
	ps := int64(defaultPageSize)
	if t.cfg.PageSize > 0 {
		ps = int64(t.cfg.PageSize)
	}
	desc := t.keepQuery(find(land.Links, "service-desc", t.cfg.URL))
	if desc == "" {
		return ps
	}
	var doc openAPI
	if err := t.getJSON(ctx, env, "openapi", desc, "OpenAPI document", &doc); err != nil {
		env.Logger.Warn("could not read the OpenAPI document for limit's maximum; the page size is learnt from the answers", "err", err)
	} else if m := doc.limitMax(t.cfg.Collection); m > 0 && m < ps {
		env.Logger.Info("the server's OpenAPI document caps limit", "maximum", m, "asked", ps)
		ps = m
	}
	return ps
}

// sampleArea is where the table's sample of features is asked for: the harvest's area,
// or within it a --bbox rerun's, which asks for nothing beyond its area.
func sampleArea(area orb.Bound, rerun *orb.Bound) orb.Bound {
	if rerun != nil && rerun.Intersects(area) {
		return harvest.Intersect(area, *rerun)
	}
	return area
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

package arcgis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/project"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/esrijson"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/internal/harvest"
)

var (
	_ tasks.Task     = (*Task)(nil)
	_ tasks.Finisher = (*Task)(nil)
)

// maxDepth bounds the splitting of id tiles: 2^-20 of the area is far below a parcel.
const maxDepth = 20

// Task is a configured arcgis_features task; Execute is safe for concurrent use.
type Task struct {
	id            string
	cfg           Config
	schema, table string
	token         string

	once sync.Mutex
	p    *prepared

	expected atomic.Int64 // the server's count of the area, -1 unknown
	missing  atomic.Int64 // ids listed but absent from their batch's answer (deleted since)
}

// prepared is what the task learned from the layer; read-only once set.
type prepared struct {
	oidField string
	batch    int
	dates    map[string]bool // fields of epoch-millisecond dates
	area     orb.Bound
	table    *store.FeatureTable
}

// spec is what a unit carries.
type spec struct {
	Depth int   `json:"d,omitempty"`
	IDs   []int `json:"ids,omitempty"` // a batch: these object ids; none: list the tile's ids
	// Count, on the root unit, is the server's count of the area when planned (a
	// replay's finish reads it); nil when it gave none.
	Count *int64 `json:"n,omitempty"`
}

func newTask(id string, c Config) (*Task, error) {
	schema, table, err := store.SplitTable(c.Target.Table)
	if err != nil {
		return nil, err
	}
	t := &Task{id: id, cfg: c, schema: schema, table: table}
	if c.TokenEnv != "" {
		t.token = os.Getenv(c.TokenEnv)
	}
	t.expected.Store(-1)
	return t, nil
}

// layer is the layer document (?f=json).
type layer struct {
	Type           string `json:"type"`
	GeometryType   string `json:"geometryType"`
	ObjectIDField  string `json:"objectIdField"`
	MaxRecordCount int    `json:"maxRecordCount"`
	Fields         []struct {
		Name string `json:"name"`
		Type string `json:"type"`
	} `json:"fields"`
	// Extent is read apart, leniently: an empty layer may state "NaN" coordinates, which
	// must not make the whole document unreadable when bbox is set.
	Extent json.RawMessage `json:"extent"`
}

// extent is a layer's extent.
type extent struct {
	XMin, YMin, XMax, YMax float64
	SpatialReference       struct {
		WKID       int `json:"wkid"`
		LatestWKID int `json:"latestWkid"`
	} `json:"spatialReference"`
}

// columnType maps an Esri field type to a column type; ok is false for what is no
// attribute (the geometry, blobs, rasters).
func columnType(esri string) (store.ColumnType, bool) {
	switch esri {
	case "esriFieldTypeOID", "esriFieldTypeInteger", "esriFieldTypeSmallInteger", "esriFieldTypeBigInteger", "esriFieldTypeLong":
		return store.TypeBigint, true
	case "esriFieldTypeDouble", "esriFieldTypeSingle":
		return store.TypeDouble, true
	case "esriFieldTypeDate", "esriFieldTypeTimestampOffset":
		return store.TypeTimestamptz, true
	case "esriFieldTypeDateOnly":
		return store.TypeDate, true
	case "esriFieldTypeGeometry", "esriFieldTypeBlob", "esriFieldTypeRaster", "esriFieldTypeXML":
		return "", false
	}
	return store.TypeText, true // String, GUID, GlobalID, TimeOnly and types to come
}

func (t *Task) prepare(ctx context.Context, env *tasks.Env) (*prepared, error) {
	t.once.Lock()
	defer t.once.Unlock()
	if t.p != nil {
		return t.p, nil
	}
	var l layer
	err := env.HTTP.Do(ctx, t.request(env, "layer", http.MethodGet, t.cfg.URL, url.Values{"f": {"json"}}), func(resp *http.Response) error {
		body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
		if err != nil {
			return retry.Transient(dlq.ClassTruncated, err)
		}
		if err := serviceError(body); err != nil {
			return err
		}
		if err := json.Unmarshal(body, &l); err != nil {
			return retry.Permanent(dlq.ClassParse, fmt.Errorf("the layer document is not JSON: %w (%s)", err, spatial.Snippet(body, 200)))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the layer %s: %w", redact.URL(t.cfg.URL), err)
	}
	if l.Type == "Table" || l.GeometryType == "" {
		return nil, fmt.Errorf("%s is a table without geometry; geoflow harvests feature layers", redact.URL(t.cfg.URL))
	}
	p := &prepared{oidField: l.ObjectIDField, dates: map[string]bool{}}
	if p.oidField == "" {
		return nil, fmt.Errorf("the layer %s names no objectIdField: it cannot be harvested by object id", redact.URL(t.cfg.URL))
	}
	p.batch = max(l.MaxRecordCount, 1)
	if l.MaxRecordCount <= 0 {
		p.batch = 1000
	}
	if t.cfg.BatchSize > 0 && t.cfg.BatchSize < p.batch {
		p.batch = t.cfg.BatchSize
	}
	var props []tasks.Property
	for _, f := range l.Fields {
		typ, ok := columnType(f.Type)
		if !ok || len(t.cfg.OutFields) > 0 && !slices.Contains(t.cfg.OutFields, f.Name) && f.Name != p.oidField {
			continue
		}
		if f.Type == "esriFieldTypeDate" {
			p.dates[f.Name] = true
		}
		props = append(props, tasks.Property{Name: f.Name, Type: typ})
	}
	for _, f := range t.cfg.OutFields {
		if !slices.ContainsFunc(props, func(p tasks.Property) bool { return p.Name == f }) {
			return nil, fmt.Errorf("out_fields: the layer has no field %q", f)
		}
	}
	switch {
	case t.cfg.BBox != nil:
		b := *t.cfg.BBox
		p.area = orb.Bound{Min: orb.Point{b[0], b[1]}, Max: orb.Point{b[2], b[3]}}
	case len(l.Extent) > 0 && string(l.Extent) != "null":
		var e extent
		if err := json.Unmarshal(l.Extent, &e); err != nil {
			return nil, fmt.Errorf("no bbox given and the layer's extent cannot be read (%v): set bbox", err)
		}
		b := orb.Bound{Min: orb.Point{e.XMin, e.YMin}, Max: orb.Point{e.XMax, e.YMax}}
		switch wkid := max(e.SpatialReference.LatestWKID, e.SpatialReference.WKID); wkid {
		case 4326:
		case 3857, 102100, 102113, 900913:
			b = orb.Bound{Min: project.Mercator.ToWGS84(b.Min), Max: project.Mercator.ToWGS84(b.Max)}
		default:
			return nil, fmt.Errorf("no bbox given and the layer states its extent in wkid %d: set bbox (lon/lat)", wkid)
		}
		p.area = b
		env.Logger.Info("no bbox given: harvesting the layer's extent", "bbox", harvest.FormatBound(b))
	default:
		return nil, errors.New("no bbox given and the layer states no extent: set bbox")
	}
	p.table = &store.FeatureTable{Schema: t.schema, Name: t.table, SRID: 4326, Mode: t.cfg.Target.Mode, Key: t.cfg.Target.Key, History: t.cfg.Target.History}
	p.table.Columns = tasks.Columns(props)
	if err := tasks.CheckKey(p.table, t.cfg.URL); err != nil {
		return nil, err
	}
	if err := env.Store.EnsureFeatureTable(ctx, p.table); err != nil {
		return nil, err
	}
	env.Logger.Info("arcgis_features negotiated", "layer", redact.URL(t.cfg.URL), "geometry", l.GeometryType,
		"object_id_field", p.oidField, "batch", p.batch, "table", p.table.Schema+"."+p.table.Name)
	t.p = p
	return p, nil
}

// Plan implements tasks.Task: the area is counted, then one unit lists its object ids.
func (t *Task) Plan(ctx context.Context, env *tasks.Env) ([]store.Unit, error) {
	p, err := t.prepare(ctx, env)
	if err != nil {
		return nil, err
	}
	area := p.area
	if env.Area != nil {
		if !area.Intersects(*env.Area) {
			return nil, &tasks.OutsideArea{Area: area}
		}
		area = harvest.Intersect(area, *env.Area)
	}
	t.expected.Store(-1)
	var count struct {
		Count *int64 `json:"count"`
	}
	if err := t.query(ctx, env, "plan", t.boxQuery(area, url.Values{"returnCountOnly": {"true"}}), &count); err != nil {
		env.Logger.Warn("could not count the area's features; completeness will not be checked", "err", err)
	} else if count.Count != nil {
		t.expected.Store(*count.Count)
		env.Logger.Info("server count for the area", "count", *count.Count, "bbox", harvest.FormatBound(area))
	}
	root := spec{}
	if n := t.expected.Load(); n >= 0 {
		root.Count = &n
	}
	sp, _ := json.Marshal(root)
	return []store.Unit{{Key: "q", BBox: &area, Spec: sp}}, nil
}

// boxQuery is a query of the features intersecting b, with the task's where.
func (t *Task) boxQuery(b orb.Bound, more url.Values) url.Values {
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	v := url.Values{
		"where":        {t.cfg.Where},
		"geometry":     {strings.Join([]string{f(b.Min[0]), f(b.Min[1]), f(b.Max[0]), f(b.Max[1])}, ",")},
		"geometryType": {"esriGeometryEnvelope"},
		"inSR":         {"4326"},
		"spatialRel":   {"esriSpatialRelIntersects"},
		"f":            {"json"},
	}
	for k, x := range more {
		v[k] = x
	}
	return v
}

// query POSTs a query whose answer is one small JSON object into v.
func (t *Task) query(ctx context.Context, env *tasks.Env, unit string, form url.Values, v any) error {
	return env.HTTP.Do(ctx, t.request(env, unit, http.MethodPost, t.cfg.URL+"/query", form), func(resp *http.Response) error {
		if err := tasks.RefuseHTML(resp); err != nil {
			return err
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
		if err != nil {
			return retry.Transient(dlq.ClassTruncated, fmt.Errorf("answer cut off: %w", err))
		}
		if err := serviceError(body); err != nil {
			return err
		}
		if err := json.Unmarshal(body, v); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || !json.Valid(body) && len(body) > 0 && body[len(body)-1] != '}' {
				return retry.Transient(dlq.ClassTruncated, fmt.Errorf("answer cut off: %w", err))
			}
			return retry.Permanent(dlq.ClassParse, fmt.Errorf("unexpected answer: %w (%s)", err, spatial.Snippet(body, 200)))
		}
		return nil
	})
}

// Execute implements tasks.Task: a tile lists its object ids (split where the server caps
// the list) and plans batches of them; a batch fetches its features.
func (t *Task) Execute(ctx context.Context, env *tasks.Env, u store.Unit) (*tasks.Output, error) {
	p, err := t.prepare(ctx, env)
	if err != nil {
		return nil, err
	}
	var sp spec
	if len(u.Spec) > 0 {
		if err := json.Unmarshal(u.Spec, &sp); err != nil {
			return nil, retry.Permanent(dlq.ClassInvalid, fmt.Errorf("unit %s: bad spec: %w", u.Key, err))
		}
	}
	if u.BBox == nil {
		return nil, retry.Permanent(dlq.ClassInvalid, fmt.Errorf("unit %s has no bbox", u.Key))
	}
	if len(sp.IDs) > 0 {
		return t.fetch(ctx, env, p, u, sp)
	}
	return t.list(ctx, env, p, u, sp)
}

func (t *Task) list(ctx context.Context, env *tasks.Env, p *prepared, u store.Unit, sp spec) (*tasks.Output, error) {
	var ids struct {
		ObjectIDs []int `json:"objectIds"`
		Exceeded  bool  `json:"exceededTransferLimit"`
	}
	if err := t.query(ctx, env, u.Key, t.boxQuery(*u.BBox, url.Values{"returnIdsOnly": {"true"}}), &ids); err != nil {
		return nil, err
	}
	b := *u.BBox
	if ids.Exceeded {
		if sp.Depth >= maxDepth || b.Max[0]-b.Min[0] < 1e-9 {
			return nil, retry.Permanent(dlq.ClassParse, fmt.Errorf("tile %s cannot be split further and the server still caps its id list at %d", u.Key, len(ids.ObjectIDs)))
		}
		c := b.Center()
		var children []store.Unit
		for i, q := range []orb.Bound{
			{Min: b.Min, Max: c}, {Min: orb.Point{c[0], b.Min[1]}, Max: orb.Point{b.Max[0], c[1]}},
			{Min: orb.Point{b.Min[0], c[1]}, Max: orb.Point{c[0], b.Max[1]}}, {Min: c, Max: b.Max},
		} {
			cs, _ := json.Marshal(spec{Depth: sp.Depth + 1})
			children = append(children, store.Unit{Key: fmt.Sprintf("%s.%d", u.Key, i), BBox: &q, Spec: cs})
		}
		env.Logger.Debug("the server capped the id list; splitting the tile", "unit", u.Key, "ids", len(ids.ObjectIDs))
		return &tasks.Output{Children: children}, nil
	}
	// A feature crossing two tiles is listed by both and fetched twice, once per tile: its
	// payload is one row. (Deduplicating across units would need state that a unit executed
	// again after a store fault must not see.)
	mine := slices.Compact(slices.Sorted(slices.Values(ids.ObjectIDs)))
	var children []store.Unit
	for start := 0; start < len(mine); start += p.batch {
		batch := mine[start:min(start+p.batch, len(mine))]
		cs, _ := json.Marshal(spec{Depth: sp.Depth, IDs: batch})
		children = append(children, store.Unit{Key: fmt.Sprintf("%s/o%d", u.Key, batch[0]), BBox: &b, Spec: cs})
	}
	return &tasks.Output{Children: children}, nil
}

// fetch downloads one batch of features into a spool and returns it as the unit's output.
// Ids the answer left out (exceededTransferLimit, a server capping below maxRecordCount)
// are asked for again as another batch.
func (t *Task) fetch(ctx context.Context, env *tasks.Env, p *prepared, u store.Unit, sp spec) (*tasks.Output, error) {
	form := url.Values{
		"objectIds":      {joinInts(sp.IDs)},
		"outFields":      {"*"},
		"returnGeometry": {"true"},
		"outSR":          {"4326"},
		"f":              {"json"},
	}
	if len(t.cfg.OutFields) > 0 {
		form.Set("outFields", strings.Join(append([]string{p.oidField}, t.cfg.OutFields...), ","))
	}
	var body *tasks.Spool
	err := env.HTTP.Do(ctx, t.request(env, u.Key, http.MethodPost, t.cfg.URL+"/query", form), func(resp *http.Response) error {
		body.Close()
		body = env.NewSpool()
		if err := tasks.RefuseHTML(resp); err != nil {
			return err
		}
		// The head is decoded as it arrives: an error object answered with 200 shows before
		// the rest is spooled.
		r := esrijson.NewReader(body.Tee(resp.Body), esrijson.Options{IDField: p.oidField, Limits: t.cfg.Limits.Spatial()})
		if _, err := r.Next(); err != nil && err != io.EOF {
			var fe *spatial.FeatureError
			if !errors.As(err, &fe) {
				if _, sink := store.AsFault(err); sink {
					return err
				}
				return classify(err)
			}
		}
		_, err := body.ReadFrom(resp.Body)
		return err
	})
	if err != nil {
		body.Close()
		return nil, err
	}
	var last *source
	out := &tasks.Output{
		Table:   p.table,
		Counts:  store.Counts{Bytes: body.Len()},
		Release: body.Close,
		Features: func() (store.FeatureSource, error) {
			r, err := body.Reader()
			if err != nil {
				return nil, err
			}
			last = &source{r: esrijson.NewReader(r, esrijson.Options{IDField: p.oidField, Limits: t.cfg.Limits.Spatial()}),
				dates: p.dates, seen: map[string]bool{}, env: env, unit: u.Key}
			return last, nil
		},
		Rejected: func() *tasks.RejectedError {
			if last == nil || last.refused.Total == 0 {
				return nil
			}
			rej := last.refused
			return &rej
		},
	}
	out.Check = func(store.Counts) (*tasks.Verdict, error) {
		var rest []int
		for _, id := range sp.IDs {
			if !last.seen[strconv.Itoa(id)] {
				rest = append(rest, id)
			}
		}
		switch {
		case len(rest) == 0:
			return nil, nil
		case last.count > 0:
			// The server held back part of the batch (its own cap, below what it
			// advertises, with exceededTransferLimit or without): ask for the rest. An
			// answer with none of them ends it, whatever its flag says, so that ids
			// deleted since the listing cannot make a batch plan itself forever. The
			// rest's key extends the batch's, so it can never be the batch's own.
			cs, _ := json.Marshal(spec{Depth: sp.Depth, IDs: rest})
			b := *u.BBox
			return &tasks.Verdict{Children: []store.Unit{{Key: fmt.Sprintf("%s/r%d", u.Key, rest[0]), BBox: &b, Spec: cs}}}, nil
		}
		t.missing.Add(int64(len(rest)))
		env.Logger.Warn("object ids listed but not answered (deleted since the listing?)", "unit", u.Key, "ids", len(rest))
		return &tasks.Verdict{Short: int64(len(rest))}, nil
	}
	return out, nil
}

func joinInts(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	return strings.Join(s, ",")
}

// source is a batch's features for the sink: epoch-millisecond dates made timestamps,
// features refused by the decoder logged and counted, ids seen recorded.
type source struct {
	r       *esrijson.Reader
	dates   map[string]bool
	seen    map[string]bool
	count   int
	refused tasks.RejectedError
	env     *tasks.Env
	unit    string
}

// Next implements store.FeatureSource.
func (s *source) Next() (*spatial.Feature, error) {
	for {
		f, err := s.r.Next()
		var fe *spatial.FeatureError
		if errors.As(err, &fe) {
			s.seen[fe.ID] = true
			s.refused.Add(tasks.Reject{ID: fe.ID, Index: fe.Index, Reason: fe.Err.Error()})
			s.env.Logger.Error("feature refused", "unit", s.unit, "feature", fe.ID, "err", fe.Err)
			continue
		}
		if err != nil {
			if errors.Is(err, spatial.ErrTooLarge) {
				err = retry.Permanent(dlq.ClassTooLarge, err)
			}
			return nil, err
		}
		s.count++
		s.seen[f.ID] = true
		for k := range s.dates {
			if v, ok := f.Properties[k]; ok && v != nil {
				if ms, ok := epochMillis(v); ok {
					f.Properties[k] = time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
				}
			}
		}
		if f.Geometry != nil && !finiteLonLat(f.Geometry) {
			s.refused.Add(tasks.Reject{ID: f.ID, Index: s.count - 1, Reason: "coordinates outside longitude -180..180, latitude -90..90, or not finite"})
			s.env.Logger.Error("feature refused", "unit", s.unit, "feature", f.ID, "err", "coordinates outside the lon/lat domain")
			continue
		}
		return f, nil
	}
}

func epochMillis(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, true
		}
		if f, err := x.Float64(); err == nil {
			return int64(f), true
		}
	case float64:
		return int64(x), true
	}
	return 0, false
}

func finiteLonLat(g orb.Geometry) bool {
	b := g.Bound()
	for _, v := range []float64{b.Min[0], b.Min[1], b.Max[0], b.Max[1]} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return b.Min[0] >= -180.001 && b.Max[0] <= 180.001 && b.Min[1] >= -90.001 && b.Max[1] <= 90.001
}

// Finish implements tasks.Finisher: indexes, then the server's count of the area against
// the distinct features stored, and the changes of a keyed table (tasks.FinishChanges: a
// mirror's deletions, on evidence of a complete harvest).
func (t *Task) Finish(ctx context.Context, env *tasks.Env) error {
	t.once.Lock()
	p := t.p
	t.once.Unlock()
	if p == nil {
		return nil
	}
	if err := env.Store.FinishFeatureTable(ctx, p.table); err != nil {
		return err
	}
	want := t.expected.Load()
	if want < 0 && p.table.Keyed() {
		// A replay plans nothing: the count is the one the run planned with.
		var err error
		if want, err = t.plannedCount(ctx, env); err != nil {
			return err
		}
	}
	area := p.area
	if env.Area != nil {
		area = harvest.Intersect(area, *env.Area)
	}
	var incomplete error
	if want >= 0 && p.table.Mode != store.ModeMirror {
		var err error
		if incomplete, err = t.checkStored(ctx, env, p, area, want); err != nil {
			return err
		}
	}
	if err := tasks.FinishChanges(ctx, env, tasks.Harvest{Table: p.table, Area: area, Expected: want,
		MaxDeleteFraction: t.cfg.Target.DeleteFraction()}); err != nil {
		return err
	}
	return incomplete
}

// plannedCount is the server's count the task's root unit was planned with; -1 when the
// server gave none.
func (t *Task) plannedCount(ctx context.Context, env *tasks.Env) (int64, error) {
	u, _, err := env.Store.Unit(ctx, store.UnitRef{RunID: env.RunID, TaskID: env.TaskID, Key: "q"})
	if errors.Is(err, store.ErrNotFound) {
		return -1, nil
	}
	if err != nil {
		return -1, err
	}
	var sp spec
	if json.Unmarshal(u.Spec, &sp) != nil || sp.Count == nil {
		return -1, nil
	}
	return *sp.Count, nil
}

// checkStored compares the server's count with the distinct features stored in area: an
// INCOMPLETE error (not a failure of the check) when fewer are.
func (t *Task) checkStored(ctx context.Context, env *tasks.Env, p *prepared, area orb.Bound, want int64) (incomplete, err error) {
	got, err := env.Store.CountFeatures(ctx, p.table, area)
	if err != nil {
		if errors.Is(err, store.ErrNoTransform) {
			return nil, nil
		}
		return nil, err
	}
	if merged, err := env.Store.MergedFeatures(ctx, env.RunID, env.TaskID); err == nil {
		got += merged
	}
	m := t.missing.Load()
	if short, err := env.Store.ShortFeatures(ctx, env.RunID, env.TaskID); err == nil {
		m = max(m, short) // recorded by the units, wherever they ran
	}
	if got < want && m > 0 {
		env.Logger.Warn("fewer features stored than the server counted; ids it listed were not answered", "count", want, "stored_distinct", got, "not_answered", m)
	}
	if got < want {
		return fmt.Errorf("INCOMPLETE: the server counted %d features in %s but %d distinct features are stored there (%d missing)",
			want, harvest.FormatBound(area), got, want-got), nil
	}
	env.Logger.Info("complete: every feature the server counted is stored", "count", want, "stored_distinct", got)
	return nil, nil
}

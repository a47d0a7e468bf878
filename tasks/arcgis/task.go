package arcgis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/paulmach/orb"

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
	_ tasks.Task         = (*Task)(nil)
	_ tasks.Finisher     = (*Task)(nil)
	_ tasks.Follower     = (*Task)(nil)
	_ harvest.Lister     = (*protocol)(nil)
	_ harvest.Negotiator = (*Task)(nil)
)

// Task is a configured arcgis_features task: the harvest engine lists each tile's object
// ids and fetches them in batches by id; Execute is safe for concurrent use.
type Task struct {
	// Task makes Plan, Execute, Follow and Finish the harvest engine's, once negotiated.
	harvest.Task

	id            string
	cfg           Config
	schema, table string
	token         string

	prepMu sync.Mutex // serializes prepare: one negotiation at a time, its result kept in p
	p      *prepared
}

// prepared is what the task learned from the layer; read-only once set.
type prepared struct {
	// transform is the task's transform planned against the layer; nil changes nothing.
	transform *tasks.Transformer
	oidField  string
	batch     int
	dates     map[string]bool // fields of epoch-millisecond dates
	area      orb.Bound
	table     *store.FeatureTable
	eng       *harvest.Engine
}

func newTask(id string, c Config) (*Task, error) {
	schema, table, err := store.SplitTable(c.Target.Table)
	if err != nil {
		return nil, err
	}
	t := &Task{id: id, cfg: c, schema: schema, table: table}
	t.Task.Source = t
	if c.TokenEnv != "" {
		t.token = os.Getenv(c.TokenEnv)
	}
	return t, nil
}

// prepare reads the layer document once and makes the harvest engine of what it says:
// the batch size, the columns and the area. A failure is not cached, so a later unit (or
// a replay) tries again.
func (t *Task) prepare(ctx context.Context, env *tasks.Env) (*prepared, error) {
	t.prepMu.Lock()
	defer t.prepMu.Unlock()
	if t.p != nil {
		return t.p, nil
	}
	l, err := t.readLayer(ctx, env)
	if err != nil {
		return nil, err
	}
	if err := checkLayer(l, t.cfg.URL); err != nil {
		return nil, err
	}
	p := &prepared{oidField: l.ObjectIDField, batch: batchSize(l.MaxRecordCount, t.cfg.BatchSize)}
	props, dates, err := layerProperties(l.Fields, t.cfg.OutFields, p.oidField)
	if err != nil {
		return nil, err
	}
	p.dates = dates
	area, fromExtent, err := layerArea(t.cfg.BBox, l.Extent)
	if err != nil {
		return nil, err
	}
	p.area = area
	if err := checkExtent(t.cfg.BBox, l.Extent, cmpOr(l.Name, redact.URL(t.cfg.URL))); err != nil {
		return nil, err // the runner names the task
	}
	if fromExtent {
		env.Logger.Info("no bbox given: harvesting the layer's extent", "bbox", harvest.FormatBound(area))
	}
	p.table = &store.FeatureTable{Schema: t.schema, Name: t.table, SRID: 4326, Mode: t.cfg.Target.Mode, Key: t.cfg.Target.Key, History: t.cfg.Target.History}
	t.cfg.Target.Reproject(p.table)
	if p.table.Columns, p.transform, err = t.cfg.Transform.Plan(t.cfg.URL, props); err != nil {
		return nil, err
	}
	if err := tasks.CheckKey(p.table, t.cfg.URL); err != nil {
		return nil, err
	}
	if err := env.Features.EnsureFeatureTable(ctx, p.table); err != nil {
		return nil, err
	}
	p.eng = harvest.New(harvest.Config{
		Protocol: &protocol{t: t, p: p},
		// Counts for the area; features by id need neither sorting nor offsets.
		Caps:  harvest.Caps{Counts: true, Sorts: true, Pages: true},
		Table: p.table, Area: p.area, PageSize: int64(p.batch), Geographic: true,
		Budget: t.cfg.Limits.Budget(), MaxDeleteFraction: t.cfg.Target.DeleteFraction(),
		Lookup: t.lookup(p), DeleteAfter: t.cfg.Target.AbsentRuns(), Transform: p.transform,
	})
	env.Logger.Info("arcgis_features negotiated", "layer", redact.URL(t.cfg.URL), "geometry", l.GeometryType,
		"object_id_field", p.oidField, "batch", p.batch, "table", p.table.Schema+"."+p.table.Name)
	t.p = p
	return p, nil
}

// Negotiate implements harvest.Negotiator.
func (t *Task) Negotiate(ctx context.Context, env *tasks.Env) (*harvest.Engine, error) {
	p, err := t.prepare(ctx, env)
	if err != nil {
		return nil, err
	}
	return p.eng, nil
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

// protocol is how the harvest engine counts, lists, asks and decodes an ArcGIS layer.
type protocol struct {
	t *Task
	p *prepared
}

// Count implements harvest.Protocol: returnCountOnly; -1 when the answer has no count.
func (pr *protocol) Count(ctx context.Context, env *tasks.Env, unit string, box orb.Bound) (int64, error) {
	var count struct {
		Count *int64 `json:"count"`
	}
	if err := pr.t.query(ctx, env, unit, pr.t.boxQuery(box, url.Values{"returnCountOnly": {"true"}}), &count); err != nil {
		return -1, err
	}
	if count.Count == nil {
		return -1, nil
	}
	return *count.Count, nil
}

// List implements harvest.Lister: returnIdsOnly, read as it arrives and no further than
// max+1 ids, so that a listing of millions costs no more memory than the budget allows.
func (pr *protocol) List(ctx context.Context, env *tasks.Env, unit string, box orb.Bound, max int64) (ids []string, exceeded bool, err error) {
	req := pr.t.request(env, unit, http.MethodPost, pr.t.cfg.URL+"/query", pr.t.boxQuery(box, url.Values{"returnIdsOnly": {"true"}}))
	err = env.HTTP.Do(ctx, req, func(resp *http.Response) error {
		if err := tasks.RefuseHTML(resp); err != nil {
			return err
		}
		ids, exceeded, err = readIDs(resp.Body, max)
		return err
	})
	return ids, exceeded, err
}

// Request implements harvest.Protocol: the features of a batch of object ids (the engine
// asks a Lister's layer by id only; a query without ids asks for the whole box).
func (pr *protocol) Request(env *tasks.Env, unit string, q harvest.Query) retry.Request {
	form := url.Values{
		"outFields":      {"*"},
		"returnGeometry": {"true"},
		"outSR":          {"4326"},
		"f":              {"json"},
	}
	if len(q.IDs) > 0 {
		form.Set("objectIds", strings.Join(q.IDs, ","))
	} else {
		form = pr.t.boxQuery(q.Box, form)
	}
	if len(pr.t.cfg.OutFields) > 0 {
		form.Set("outFields", strings.Join(append([]string{pr.p.oidField}, pr.t.cfg.OutFields...), ","))
	}
	return pr.t.request(env, unit, http.MethodPost, pr.t.cfg.URL+"/query", form)
}

// CheckResponse implements harvest.Protocol.
func (pr *protocol) CheckResponse(resp *http.Response) error { return tasks.RefuseHTML(resp) }

// Classify implements harvest.Protocol.
func (pr *protocol) Classify(err error) error { return classify(err) }

// Decode implements harvest.Protocol: Esri JSON features, epoch-millisecond dates made
// timestamps.
func (pr *protocol) Decode(env *tasks.Env, body io.Reader) harvest.Decoder {
	return &decoder{r: esrijson.NewReader(body, esrijson.Options{IDField: pr.p.oidField, Limits: pr.t.cfg.Limits.Spatial()}), dates: pr.p.dates}
}

// decoder is a batch's features with dates made timestamps.
type decoder struct {
	r     *esrijson.Reader
	dates map[string]bool
}

// Meta implements harvest.Decoder: ArcGIS answers carry no counts.
func (d *decoder) Meta() spatial.Meta { return d.r.Meta() }

// Next implements harvest.Decoder.
func (d *decoder) Next() (*spatial.Feature, error) {
	f, err := d.r.Next()
	if err != nil {
		return nil, err
	}
	for k := range d.dates {
		if v, ok := f.Properties[k]; ok && v != nil {
			if ms, ok := epochMillis(v); ok {
				f.Properties[k] = time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
			}
		}
	}
	return f, nil
}

// readIDs reads an id listing ({"objectIdFieldName":..., "objectIds":[...],
// "exceededTransferLimit":...}) as it arrives, stopping after max+1 ids. An {"error":...}
// answer is the server's error, classified.
func readIDs(r io.Reader, max int64) (ids []string, exceeded bool, err error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	cut := func(err error) (bool, error) {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return false, retry.Transient(dlq.ClassTruncated, fmt.Errorf("id listing cut off: %w", err))
		}
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return false, retry.Permanent(dlq.ClassParse, fmt.Errorf("the id listing is not JSON: %w", err))
		}
		return false, err
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		if err == nil {
			err = fmt.Errorf("the id listing is not a JSON object (starts with %v)", tok)
			return nil, false, retry.Permanent(dlq.ClassParse, err)
		}
		_, err = cut(err)
		return nil, false, err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			_, err = cut(err)
			return nil, false, err
		}
		switch key, _ := tok.(string); key {
		case "objectIds":
			tok, err := dec.Token()
			if err != nil {
				_, err = cut(err)
				return nil, false, err
			}
			if tok == nil {
				continue // null: no ids
			}
			if tok != json.Delim('[') {
				return nil, false, retry.Permanent(dlq.ClassParse, fmt.Errorf("objectIds is not a list (%v)", tok))
			}
			for dec.More() {
				var id json.Number
				if err := dec.Decode(&id); err != nil {
					_, err = cut(err)
					return nil, false, err
				}
				if ids = append(ids, id.String()); int64(len(ids)) > max {
					return ids, exceeded, nil // past the budget: the tile is cut, the rest unread
				}
			}
			if _, err := dec.Token(); err != nil {
				_, err = cut(err)
				return nil, false, err
			}
		case "exceededTransferLimit":
			if err := dec.Decode(&exceeded); err != nil {
				_, err = cut(err)
				return nil, false, err
			}
		case "error":
			var v any
			if err := dec.Decode(&v); err != nil {
				_, err = cut(err)
				return nil, false, err
			}
			if v != nil {
				return nil, false, classify(esrijson.ServiceErrorOf(v))
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				_, err = cut(err)
				return nil, false, err
			}
		}
	}
	return ids, exceeded, nil
}

// query POSTs a query whose answer is one small JSON object into v.
func (t *Task) query(ctx context.Context, env *tasks.Env, unit string, form url.Values, v any) error {
	return env.HTTP.Do(ctx, t.request(env, unit, http.MethodPost, t.cfg.URL+"/query", form), func(resp *http.Response) error {
		if err := tasks.RefuseHTML(resp); err != nil {
			return err
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
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

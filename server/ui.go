package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/store"
)

// routes adds the web UI and the API it uses:
//
//	GET  /, /runs, /runs/{id}, /dlq, /flows/{name}   the pages
//	GET  /static/{version}/...                       embedded assets (MapLibre, app.js)
//	GET  /tiles/{flow}/{task}/{z}/{x}/{y}            a tile task's stored tiles, the maps' basemap
//	GET  /tables, /tables/{table}                    the tables geoflow wrote; one on a map
//	GET  /vt/{table}/{z}/{x}/{y}.mvt                 a feature table as Mapbox Vector Tiles
//	GET  /rt/{table}/{z}/{x}/{y}                     a GeoPackage tile pyramid's tiles
//	GET  /api/tables/{table}/features            rows as GeoJSON or a GeoPackage (?bbox= ?asof= ?limit= ?format=geojson|gpkg)
//	GET  /api/tables/{table}/features/{id}       the row(s) of a tile id and the feature's versions
//	GET  /api/runs/{id}/changes  what a run inserted, updated, deleted, as GeoJSON with counts
//	GET  /api/runs/{id}/units    a run's units as GeoJSON (?task=, ?state=, ?bbox=, ?limit=)
//	GET  /api/dlq                dead letters (?flow= ?task= ?run= ?class= ?status= ?since= ?bbox= ?host= ?limit=)
//	GET  /api/dlq/features       the same as GeoJSON
//	GET  /api/dlq/{id}           one dead letter, whole
//	POST /api/runs               start a run: {"flow", "bbox", "bbox_crs", "tasks", "with_downstream"}
//	POST /api/dlq/replay         replay: {"ids"} or {"all", "filter"}; "wait" for the outcome
//	POST /api/dlq/discard        discard: {"ids"} or {"all", "filter"}
func (h *handler) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", h.overview)
	mux.HandleFunc("GET /runs", h.runsPage)
	mux.HandleFunc("GET /runs/{id}", h.runPage)
	mux.HandleFunc("GET /dlq", h.dlqPage)
	mux.HandleFunc("GET /flows/{name}", h.flowPage)
	mux.HandleFunc("GET /login", h.loginPage)
	mux.HandleFunc("POST /login", h.loginPage)
	mux.HandleFunc("POST /logout", h.logout)
	mux.HandleFunc("GET /static/", h.assets.serve)
	mux.HandleFunc("GET /tiles/{flow}/{task}/{z}/{x}/{y}", h.tile)
	mux.HandleFunc("GET /tables", h.tablesPage)
	mux.HandleFunc("GET /tables/{table}", h.tablePage)
	mux.HandleFunc("GET /vt/{table}/{z}/{x}/{y}", h.vectorTile)
	mux.HandleFunc("GET /rt/{table}/{z}/{x}/{y}", h.rasterTile)
	mux.HandleFunc("GET /api/tables/{table}/features", h.tableFeatures)
	mux.HandleFunc("GET /api/tables/{table}/features/{id}", h.tableFeature)
	mux.HandleFunc("GET /api/runs/{id}/changes", h.runChanges)

	mux.HandleFunc("GET /api/runs/{id}/units", h.units)
	mux.HandleFunc("GET /api/dlq", h.deadLetters)
	mux.HandleFunc("GET /api/dlq/features", h.deadLetterFeatures)
	mux.HandleFunc("GET /api/dlq/{id}", h.deadLetter)
	mux.HandleFunc("POST /api/runs", h.startRun)
	mux.HandleFunc("POST /api/dlq/replay", h.replay)
	mux.HandleFunc("POST /api/dlq/discard", h.discard)
}

// feature is a GeoJSON feature whose geometry is a bbox.
type feature struct {
	Type       string   `json:"type"`
	ID         string   `json:"id,omitempty"`
	Geometry   geometry `json:"geometry"`
	Properties any      `json:"properties"`
}

type geometry struct {
	Type        string `json:"type"`
	Coordinates any    `json:"coordinates"`
}

// boxGeometry is b as a polygon, or a point when it has no area.
func boxGeometry(b orb.Bound) geometry {
	if b.Min == b.Max {
		return geometry{Type: "Point", Coordinates: [2]float64{b.Min[0], b.Min[1]}}
	}
	return geometry{Type: "Polygon", Coordinates: [][][2]float64{{
		{b.Min[0], b.Min[1]}, {b.Max[0], b.Min[1]}, {b.Max[0], b.Max[1]}, {b.Min[0], b.Max[1]}, {b.Min[0], b.Min[1]},
	}}}
}

// collection is a GeoJSON FeatureCollection with what the map needs to say about it.
type collection struct {
	Type     string    `json:"type"`
	Features []feature `json:"features"`
	// Total counts what matched; Truncated says Features holds fewer (the limit), and
	// NotSpatial how many matched but have no bbox to draw.
	Total      int64 `json:"total"`
	Truncated  bool  `json:"truncated"`
	NotSpatial int64 `json:"not_spatial"`
}

func bboxParam(r *http.Request) (*orb.Bound, error) {
	return flows.ParseArea(r.URL.Query().Get("bbox"), r.URL.Query().Get("bbox_crs"))
}

func (h *handler) units(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		h.fail(w, r, http.StatusBadRequest, errors.New("a run id is a positive whole number"))
		return
	}
	// A map draws up to 20,000 boxes: the default, and the most one asks for.
	limit, err := limitParam(r, 20000, 20000)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	area, err := bboxParam(r)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	// An unknown run is a 404, as on /api/runs/{id}, not an empty map.
	if _, err := h.o.Store.RunInfo(r.Context(), id); errors.Is(err, store.ErrNotFound) {
		h.fail(w, r, http.StatusNotFound, errors.New("no run "+strconv.FormatInt(id, 10)))
		return
	} else if err != nil {
		h.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	q := r.URL.Query()
	units, total, err := h.o.Store.ListUnits(r.Context(), store.UnitFilter{RunID: id, Task: q.Get("task"),
		State: store.State(q.Get("state")), BBox: area, Limit: limit})
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	c := collection{Type: "FeatureCollection", Features: []feature{}, Total: total, Truncated: total > int64(len(units))}
	// A unit that planned others (a layer's count, a tile that split) covers their
	// area: the map outlines it rather than filling it over them.
	planners := map[[2]string]bool{}
	for _, u := range units {
		if u.Parent != "" {
			planners[[2]string{u.Task, u.Parent}] = true
		}
	}
	type unitProps struct {
		store.UnitRecord
		Planner bool `json:"planner"`
	}
	for _, u := range units {
		if u.BBox == nil {
			c.NotSpatial++
			continue
		}
		c.Features = append(c.Features, feature{Type: "Feature", ID: u.Task + "/" + u.Key, Geometry: boxGeometry(*u.BBox),
			Properties: unitProps{u, planners[[2]string{u.Task, u.Key}]}})
	}
	h.writeGeoJSON(w, r, c)
}

// writeGeoJSON writes c (a collection) compact, gzipped when the client takes it: a map
// of 20,000 units is megabytes of repetitive JSON, a tenth of that gzipped. The flows'
// secrets are masked before it is compressed (maskAnswers cannot read a gzipped body).
func (h *handler) writeGeoJSON(w http.ResponseWriter, r *http.Request, c any) {
	b, err := json.Marshal(c)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if s := h.secrets(); s != nil {
		b = []byte(s.String(string(b)))
	}
	w.Header().Set("Content-Type", "application/geo+json")
	w.Header().Add("Vary", "Accept-Encoding")
	writeMaybeGzip(w, r, b)
}

// dlqFilter reads the dead-letter filter of a query with the CLI's validation.
func dlqFilter(r *http.Request) (dlq.Filter, error) {
	q := r.URL.Query()
	if s := q.Get("run"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err != nil || n < 1 {
			return dlq.Filter{}, fmt.Errorf("--run %s: want a run id (a positive number)", s)
		}
	}
	f, err := dlqArgs(q).Parse(time.Now())
	if err != nil {
		return f, err
	}
	if s := q.Get("id"); s != "" {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id < 1 {
			return f, fmt.Errorf("id %s: want a dead letter's id (a positive number)", s)
		}
		f.IDs = []int64{id}
	}
	return f, nil
}

func (h *handler) deadLetters(w http.ResponseWriter, r *http.Request) {
	f, err := dlqFilter(r)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	if f.Limit, err = limitParam(r, 1000, 10000); err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	es, err := h.o.Store.ListDeadLetters(r.Context(), f)
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	if es == nil {
		es = []dlq.Entry{}
	}
	writeJSON(w, http.StatusOK, es)
}

func (h *handler) deadLetterFeatures(w http.ResponseWriter, r *http.Request) {
	f, err := dlqFilter(r)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	if f.Limit, err = limitParam(r, 10000, 10000); err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	rows, err := h.o.Store.DeadLetterStats(r.Context(), f)
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	es, err := h.o.Store.ListDeadLetters(r.Context(), f)
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	c := collection{Type: "FeatureCollection", Features: []feature{}, Total: dlq.Aggregate(rows).Total}
	c.Truncated = c.Total > int64(len(es))
	for _, e := range es {
		if e.BBox == nil {
			c.NotSpatial++
			continue
		}
		c.Features = append(c.Features, feature{Type: "Feature", ID: strconv.FormatInt(e.ID, 10), Geometry: boxGeometry(*e.BBox),
			Properties: map[string]any{"id": e.ID, "run_id": e.RunID, "flow": e.Flow, "task": e.Task, "unit": e.Unit,
				"error_class": e.Class, "status": e.Status, "http_status": e.HTTPStatus, "error": e.Error}})
	}
	h.writeGeoJSON(w, r, c)
}

func (h *handler) deadLetter(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		h.fail(w, r, http.StatusBadRequest, errors.New("a dead letter's id is a positive whole number"))
		return
	}
	e, err := h.o.Store.GetDeadLetter(r.Context(), id)
	if errors.Is(err, dlq.ErrNotFound) {
		h.fail(w, r, http.StatusNotFound, fmt.Errorf("no dead letter %d", id))
		return
	}
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

// decode reads a JSON body into v, refusing unknown fields: a typo in a field name must
// not run something else than was asked for. The guard caps the body at maxBody: a
// larger one fails with an error that says so, and that bodyStatus answers 413.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bodyError(fmt.Errorf("reading the request's JSON body: %w", err))
	}
	if dec.More() {
		return errors.New("reading the request's JSON body: more than one JSON value")
	}
	return nil
}

// bodyError is err, a failure to read a request's body, saying so first when the body
// was over maxBody: "unexpected EOF" would send the client looking for a network fault.
func bodyError(err error) error {
	if _, tooBig := errors.AsType[*http.MaxBytesError](err); tooBig {
		return fmt.Errorf("request body over %s: %w", maxBodyText, err)
	}
	return err
}

// bodyStatus is the status of an answer to a request whose body could not be read
// (decode's err): 413 when it was over maxBody, else 400.
func bodyStatus(err error) int {
	if _, tooBig := errors.AsType[*http.MaxBytesError](err); tooBig {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

// runRequest is the body of POST /api/runs; the fields are named as geoflow run's flags.
type runRequest struct {
	Flow           string   `json:"flow"`
	BBox           any      `json:"bbox"` // "minx,miny,maxx,maxy" or [minx, miny, maxx, maxy]
	BBoxCRS        string   `json:"bbox_crs"`
	Tasks          []string `json:"tasks"`
	WithDownstream bool     `json:"with_downstream"`
}

func bboxText(v any) (string, error) {
	switch b := v.(type) {
	case nil:
		return "", nil
	case string:
		return b, nil
	case []any:
		if len(b) != 4 {
			return "", fmt.Errorf("--bbox: want 4 numbers [minx, miny, maxx, maxy], got %d values", len(b))
		}
		s := ""
		for i, x := range b {
			n, ok := x.(float64)
			if !ok {
				return "", fmt.Errorf("--bbox: value %d is %v, not a number", i+1, x)
			}
			if i > 0 {
				s += ","
			}
			s += strconv.FormatFloat(n, 'f', -1, 64)
		}
		return s, nil
	}
	return "", fmt.Errorf("--bbox: want \"minx,miny,maxx,maxy\" or [minx, miny, maxx, maxy], got %v", v)
}

// refused answers 503 and reports true when this server does not do what a POST asks
// (what: "start runs"), saying why: it is read-only, or it has no launcher (no flows
// directory) and what needs one.
func (h *handler) refused(w http.ResponseWriter, r *http.Request, what string, needsLauncher bool) bool {
	var why string
	switch {
	case h.o.ReadOnly:
		why = "it only looks (geoflow ui --read-only)"
	case needsLauncher && h.o.Launcher == nil:
		why = "it was started without a flows directory"
	default:
		return false
	}
	h.fail(w, r, http.StatusServiceUnavailable, fmt.Errorf("this server does not %s: %s", what, why))
	return true
}

func (h *handler) startRun(w http.ResponseWriter, r *http.Request) {
	if h.refused(w, r, "start runs", true) {
		return
	}
	var rq runRequest
	if err := decode(r, &rq); err != nil {
		h.fail(w, r, bodyStatus(err), err)
		return
	}
	if rq.Flow == "" {
		h.fail(w, r, http.StatusBadRequest, errors.New("flow: name the flow to run"))
		return
	}
	bbox, err := bboxText(rq.BBox)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	id, err := h.o.Launcher.StartRun(r.Context(), rq.Flow, flows.Scope{BBox: bbox, BBoxCRS: rq.BBoxCRS, Tasks: rq.Tasks, WithDownstream: rq.WithDownstream})
	var re *RequestError
	switch {
	case errors.Is(err, ErrShuttingDown):
		h.fail(w, r, http.StatusServiceUnavailable, err)
		return
	case errors.Is(err, ErrNoFlow):
		h.fail(w, r, http.StatusNotFound, err)
		return
	case errors.As(err, &re):
		h.fail(w, r, http.StatusBadRequest, err)
		return
	case err != nil:
		h.fail(w, r, http.StatusUnprocessableEntity, h.masked(err))
		return
	}
	w.Header().Set("Location", "/api/runs/"+strconv.FormatInt(id, 10))
	writeJSON(w, http.StatusAccepted, map[string]any{"run_id": id, "url": "/runs/" + strconv.FormatInt(id, 10)})
}

package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/geojson"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/gpkg"
)

// featureQuery reads a download's selection: ?bbox= (lon/lat, or ?bbox_crs=), ?asof=RUN
// and ?limit= (every row when absent).
func featureQuery(r *http.Request) (store.FeatureQuery, error) {
	var q store.FeatureQuery
	var err error
	if q.BBox, err = bboxParam(r); err != nil {
		return q, err
	}
	if q.AsOfRun, err = asOfParam(r); err != nil {
		return q, err
	}
	if r.URL.Query().Get("limit") != "" {
		if q.Limit, err = limitParam(r, 0, 1<<30); err != nil {
			return q, err
		}
	}
	return q, nil
}

// tableFeatures serves GET /api/tables/{table}/features: the rows of a feature table
// (?bbox, ?asof, ?limit) as GeoJSON, streamed a feature at a time, or with
// ?format=gpkg as a GeoPackage of one layer in lon/lat, written whole before it is sent.
func (h *handler) tableFeatures(w http.ResponseWriter, r *http.Request) {
	q, err := featureQuery(r)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	t, ok := h.tableOf(w, r, store.KindFeatures)
	if !ok {
		return
	}
	switch f := r.URL.Query().Get("format"); f {
	case "", "geojson":
		h.streamGeoJSON(w, r, t, q)
	case "gpkg":
		h.sendGeoPackage(w, r, t, q)
	default:
		h.fail(w, r, http.StatusBadRequest, fmt.Errorf("format %q: want geojson or gpkg", f))
	}
}

// downloadName is the file name a download of t is saved under.
func downloadName(t store.StoredTable, q store.FeatureQuery, ext string) string {
	name := tableRef(t)
	if q.AsOfRun > 0 {
		name += "-run" + strconv.FormatInt(q.AsOfRun, 10)
	}
	if q.BBox != nil {
		name += "-view"
	}
	return name + ext
}

// featureProps is a row's properties as a download writes them: its columns, then
// gf_run_id and, with history, the version's life.
func featureProps(f *store.StoredFeature, history bool) map[string]any {
	p := make(map[string]any, len(f.Properties)+4)
	for k, v := range f.Properties {
		p[k] = finite(v)
	}
	p["gf_run_id"] = f.RunID
	if history {
		p["gf_valid_from"], p["gf_valid_to"] = timeOrNil(f.ValidFrom), timeOrNil(f.ValidTo)
	}
	return p
}

// finite is v, or nil for a number JSON cannot hold (NaN, an infinity: a double column
// may hold them, and encoding/json refuses them).
func finite(v any) any {
	if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return nil
	}
	return v
}

func timeOrNil(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}

// downloadStall is how long a download waits on a client that reads nothing before
// it gives up.
const downloadStall = time.Minute

// streamGeoJSON writes the rows as one FeatureCollection as they are read. An error
// before the first row is an answer of its own; one after it cuts the connection, so
// that no client takes a partial collection for a whole one.
func (h *handler) streamGeoJSON(w http.ResponseWriter, r *http.Request, t store.StoredTable, q store.FeatureQuery) {
	started := false
	start := func() {
		if !started {
			started = true
			hd := w.Header()
			hd.Set("Content-Type", "application/geo+json")
			hd.Set("Content-Disposition", `attachment; filename="`+downloadName(t, q, ".geojson")+`"`)
			w.WriteHeader(http.StatusOK)
		}
	}
	c := geojson.NewCollectionWriter(w)
	rc := http.NewResponseController(w)
	// The deadline is the connection's: cleared after, or the next request on a kept-alive
	// connection would meet it.
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	err := h.o.Store.ReadFeatures(r.Context(), t, q, func(f *store.StoredFeature) error {
		start()
		if c.Count()%256 == 0 {
			// A client that stops reading holds the read (a connection, a snapshot)
			// only so long.
			_ = rc.SetWriteDeadline(time.Now().Add(downloadStall))
		}
		var id any
		if f.ID != "" {
			id = f.ID
		}
		return c.Feature(id, f.Geometry, featureProps(f, t.History))
	})
	if err == nil {
		start()
		err = c.Close(map[string]int64{"numberReturned": c.Count()})
	}
	if err == nil {
		return
	}
	if !started {
		h.fail(w, r, tileStatus(err), fmt.Errorf("reading %s: %w", tableRef(t), err))
		return
	}
	h.log.Warn("a download stopped part way: the connection is cut", "table", tableRef(t), "features", c.Count(), "err", err)
	panic(http.ErrAbortHandler)
}

// exportColumns are the columns of a download of t: its own, typed as the store declares
// them, and the bookkeeping featureProps adds.
func exportColumns(t store.StoredTable) []store.Column {
	cols := make([]store.Column, 0, len(t.Columns)+4)
	for _, c := range t.Columns {
		name := c.Name
		if strings.EqualFold(name, "fid") || strings.EqualFold(name, "geom") {
			name += "_1" // a GeoPackage's own columns (an ArcGIS layer's FID, kept on PostGIS)
		}
		cols = append(cols, store.Column{Name: name, Property: c.Name, Type: store.DeclaredType(c.Type)})
	}
	cols = append(cols, store.Column{Name: "gf_feature_id", Property: "gf_feature_id", Type: store.TypeText},
		store.Column{Name: "gf_run_id", Property: "gf_run_id", Type: store.TypeBigint})
	if t.History {
		cols = append(cols, store.Column{Name: "gf_valid_from", Property: "gf_valid_from", Type: store.TypeTimestamptz},
			store.Column{Name: "gf_valid_to", Property: "gf_valid_to", Type: store.TypeTimestamptz})
	}
	return cols
}

// sendGeoPackage writes the rows into a GeoPackage in a temporary directory and sends it.
func (h *handler) sendGeoPackage(w http.ResponseWriter, r *http.Request, t store.StoredTable, q store.FeatureQuery) {
	dir, err := os.MkdirTemp("", "geoflow-download-")
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, downloadName(t, q, ".gpkg"))
	if err := h.exportGeoPackage(r.Context(), file, t, q); err != nil {
		if r.Context().Err() == nil {
			h.fail(w, r, tileStatus(err), fmt.Errorf("exporting %s: %w", tableRef(t), err))
		}
		return
	}
	f, err := os.Open(file)
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Content-Type", "application/geopackage+sqlite3")
	w.Header().Set("Content-Disposition", `attachment; filename="`+filepath.Base(file)+`"`)
	http.ServeContent(w, r, "", st.ModTime(), f)
}

// exportGeoPackage writes q's rows of t into a GeoPackage at file, one export at a
// time (h.exports): each builds its R-tree in memory, by the feature. Sending the file
// does not hold the turn.
func (h *handler) exportGeoPackage(ctx context.Context, file string, t store.StoredTable, q store.FeatureQuery) error {
	select {
	case h.exports <- struct{}{}:
		defer func() { <-h.exports }()
	case <-ctx.Done():
		return ctx.Err()
	}
	src, stop := pull(ctx, func(ctx context.Context, fn func(*store.StoredFeature) error) error {
		return h.o.Store.ReadFeatures(ctx, t, q, fn)
	}, t.History)
	defer stop()
	_, err := gpkg.Export(ctx, file, gpkg.ExportLayer{Name: t.Name, SRID: 4326, Columns: exportColumns(t),
		Description: "exported by geoflow from " + tableRef(t)}, src)
	return err
}

// pull turns a store's read, which calls back with each row, into the FeatureSource a
// writer pulls from: the read runs in a goroutine and hands one feature at a time over.
// stop ends the read (when the writer gave up early) and waits for it.
func pull(ctx context.Context, read func(context.Context, func(*store.StoredFeature) error) error, history bool) (store.FeatureSource, func()) {
	ctx, cancel := context.WithCancel(ctx)
	p := &puller{next: make(chan *spatial.Feature), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.err = read(ctx, func(f *store.StoredFeature) error {
			sf := &spatial.Feature{ID: f.ID, Geometry: f.Geometry, Properties: featureProps(f, history)}
			sf.Properties["gf_feature_id"] = f.ID
			select {
			case p.next <- sf:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	return p, func() { cancel(); <-p.done }
}

type puller struct {
	next chan *spatial.Feature
	done chan struct{}
	err  error // set before done is closed
}

// Next implements store.FeatureSource.
func (p *puller) Next() (*spatial.Feature, error) {
	select {
	case f := <-p.next:
		return f, nil
	case <-p.done:
		if p.err != nil {
			return nil, p.err
		}
		return nil, io.EOF
	}
}

// storedFeatureJSON is a row as GET /api/tables/{table}/features/{id} answers it.
type storedFeatureJSON struct {
	TileID     uint64          `json:"tile_id"`
	FeatureID  string          `json:"feature_id,omitempty"`
	Key        string          `json:"key,omitempty"`
	Run        int64           `json:"run"`
	ClosedRun  int64           `json:"closed_run,omitempty"`
	FetchedAt  time.Time       `json:"fetched_at"`
	ValidFrom  *time.Time      `json:"valid_from,omitempty"`
	ValidTo    *time.Time      `json:"valid_to,omitempty"`
	Properties map[string]any  `json:"properties"`
	Geometry   json.RawMessage `json:"geometry"`
}

func storedJSON(f *store.StoredFeature) (storedFeatureJSON, error) {
	g, err := geojson.AppendGeometry(nil, f.Geometry)
	props := make(map[string]any, len(f.Properties))
	for k, v := range f.Properties {
		props[k] = finite(v)
	}
	return storedFeatureJSON{TileID: f.TileID, FeatureID: f.ID, Key: f.Key, Run: f.RunID, ClosedRun: f.ClosedRun,
		FetchedAt: f.FetchedAt, ValidFrom: f.ValidFrom, ValidTo: f.ValidTo, Properties: props, Geometry: g}, err
}

// maxVersions is how many versions of one feature the detail lists, the oldest first.
const maxVersions = 1000

// tableFeature serves GET /api/tables/{table}/features/{id}: the row(s) whose tile id is
// id (what a click on the map gives) and, for a keyed table, every version of that
// feature, oldest first.
func (h *handler) tableFeature(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil || id >= 1<<48 {
		h.fail(w, r, http.StatusBadRequest, fmt.Errorf("feature %q: want a tile id (a whole number below 2^48)", r.PathValue("id")))
		return
	}
	t, ok := h.tableOf(w, r, store.KindFeatures)
	if !ok {
		return
	}
	collect := func(q store.FeatureQuery) ([]storedFeatureJSON, error) {
		out := []storedFeatureJSON{}
		err := h.o.Store.ReadFeatures(r.Context(), t, q, func(f *store.StoredFeature) error {
			j, err := storedJSON(f)
			out = append(out, j)
			return err
		})
		return out, err
	}
	ans := struct {
		Table    string              `json:"table"`
		Features []storedFeatureJSON `json:"features"`
		Versions []storedFeatureJSON `json:"versions,omitempty"`
	}{Table: tableRef(t)}
	if ans.Features, err = collect(store.FeatureQuery{TileID: id, AllVersions: t.History, Limit: 10}); err != nil {
		h.fail(w, r, tileStatus(err), err)
		return
	}
	if len(ans.Features) == 0 {
		h.fail(w, r, http.StatusNotFound, fmt.Errorf("no feature %d in %s (changed since the map was drawn?)", id, tableRef(t)))
		return
	}
	if t.Keyed && ans.Features[0].Key != "" {
		if ans.Versions, err = collect(store.FeatureQuery{Key: ans.Features[0].Key, AllVersions: true, Limit: maxVersions}); err != nil {
			h.fail(w, r, tileStatus(err), err)
			return
		}
	}
	writeJSON(w, http.StatusOK, ans)
}

// maxChanges is how many changed features a run's map draws; the counts cover all.
const maxChanges = 20000

// runChanges serves GET /api/runs/{id}/changes: the features the run inserted, updated
// and deleted in mirror and history tables, as GeoJSON (a deleted one where it was),
// with the counts by kind of every change (?task= narrows; ?limit= caps the features).
func (h *handler) runChanges(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		h.fail(w, r, http.StatusBadRequest, errors.New("a run id is a positive whole number"))
		return
	}
	limit, err := limitParam(r, maxChanges, maxChanges)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	if _, err := h.o.Store.RunInfo(r.Context(), id); errors.Is(err, store.ErrNotFound) {
		h.fail(w, r, http.StatusNotFound, errors.New("no run "+strconv.FormatInt(id, 10)))
		return
	} else if err != nil {
		h.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	// Gathered first: the counts come with the features, and an error must be an answer.
	fc := collection{Type: "FeatureCollection"}
	type drawn struct {
		Type       string          `json:"type"`
		ID         any             `json:"id,omitempty"`
		Geometry   json.RawMessage `json:"geometry"`
		Properties map[string]any  `json:"properties"`
	}
	var features []drawn
	counts := map[string]int64{store.ChangeInserted: 0, store.ChangeUpdated: 0, store.ChangeDeleted: 0}
	err = h.o.Store.ListChanges(r.Context(), store.ChangeFilter{RunID: id, Task: r.URL.Query().Get("task"), Features: true}, func(c store.Change) error {
		counts[c.Kind]++
		fc.Total++
		if len(features) >= limit || c.Geometry == nil {
			if c.Geometry == nil {
				fc.NotSpatial++
			}
			return nil
		}
		fid, g, props := store.ChangeFeature(c)
		gb, err := geojson.AppendGeometry(nil, g)
		features = append(features, drawn{"Feature", fid, gb, props})
		return err
	})
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	fc.Truncated = fc.Total-fc.NotSpatial > int64(len(features))
	h.writeGeoJSON(w, r, struct {
		collection
		Features []drawn          `json:"features"`
		Counts   map[string]int64 `json:"counts"`
	}{fc, append([]drawn{}, features...), counts})
}

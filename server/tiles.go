package server

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/geoflow/geoflow/store"
)

// maxTileZoom is the deepest zoom level a tile is served at: a level where a tile is a
// few centimetres wide serves no map.
const maxTileZoom = 24

// tileCoords reads a tile's z, x and y from a URL's path values; y may carry an
// extension (12.mvt, 12.png), which is dropped.
func tileCoords(zs, xs, ys string) (z, x, y int, err error) {
	ys = strings.TrimSuffix(ys, path.Ext(ys))
	z, errZ := strconv.Atoi(zs)
	x, errX := strconv.Atoi(xs)
	y, errY := strconv.Atoi(ys)
	switch {
	case errors.Join(errZ, errX, errY) != nil:
		return 0, 0, 0, fmt.Errorf("tile %s/%s/%s: z, x and y are whole numbers", zs, xs, ys)
	case z < 0 || z > maxTileZoom:
		return 0, 0, 0, fmt.Errorf("tile %d/%d/%d: zoom levels go from 0 to %d", z, x, y, maxTileZoom)
	case x < 0 || y < 0 || x >= 1<<z || y >= 1<<z:
		return 0, 0, 0, fmt.Errorf("tile %d/%d/%d: zoom %d has tiles 0 to %d in x and y", z, x, y, z, 1<<z-1)
	}
	return z, x, y, nil
}

// tableRef names a stored table in URLs and on pages: its name alone in the store's
// default schema, else schema.name.
func tableRef(t store.StoredTable) string {
	if t.Schema == "" || t.Schema == "public" || t.Schema == "main" {
		return t.Name
	}
	return t.Schema + "." + t.Name
}

// parseTableRef splits a URL's table into its schema ("" for the store's default) and
// name, both plain identifiers.
func parseTableRef(s string) (schema, name string, err error) {
	schema, name, err = store.SplitTable(s)
	if err != nil {
		return "", "", err
	}
	if !strings.Contains(s, ".") {
		schema = ""
	}
	return schema, name, nil
}

// describeEvery is how long a table's description (its stamp included) is reused: a
// map asks for a dozen tiles at once, and describing a table counts its rows.
const describeEvery = time.Second

// tableCache keeps each table's description for describeEvery; the requests that miss
// it at once share one description (after a write, each would count the table). Entries
// older than describeEvery are dropped as others are added, so names asked for once do
// not pile up. Safe for concurrent use.
type tableCache struct {
	mu       sync.Mutex
	m        map[string]cachedTable
	inflight singleflight.Group
}

type cachedTable struct {
	t   store.StoredTable
	err error
	at  time.Time
}

// table describes the table ref names, from the cache when it is fresh; a table that is
// not one geoflow wrote fails wrapping store.ErrNotFound.
func (h *handler) table(r *http.Request, ref string) (store.StoredTable, error) {
	schema, name, err := parseTableRef(ref)
	if err != nil {
		return store.StoredTable{}, fmt.Errorf("%w: %v", store.ErrNotFound, err)
	}
	c := &h.tables
	c.mu.Lock()
	e, ok := c.m[ref]
	c.mu.Unlock()
	if ok && time.Since(e.at) < describeEvery {
		return e.t, e.err
	}
	v, err, _ := c.inflight.Do(ref, func() (any, error) {
		// Not the request's context: the others waiting on this description would fail
		// with it when its client goes away.
		t, err := h.o.Store.StoredTable(context.WithoutCancel(r.Context()), schema, name)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return t, err // not kept: the next request asks again
		}
		c.put(ref, cachedTable{t, err, time.Now()})
		return t, err
	})
	return v.(store.StoredTable), err
}

// put keeps e as ref's description, dropping the entries that are too old to use.
func (c *tableCache) put(ref string, e cachedTable) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]cachedTable{}
	}
	for k, old := range c.m {
		if time.Since(old.at) >= describeEvery {
			delete(c.m, k)
		}
	}
	c.m[ref] = e
}

// tableOf is the table of the request's {table} when it is of kind, else it answers
// 404 (not a table geoflow wrote, or of another kind) or 500 and returns false.
func (h *handler) tableOf(w http.ResponseWriter, r *http.Request, kind string) (store.StoredTable, bool) {
	ref := r.PathValue("table")
	t, err := h.table(r, ref)
	switch {
	case errors.Is(err, store.ErrNotFound):
		h.fail(w, r, http.StatusNotFound, fmt.Errorf("no table %q that geoflow wrote", ref))
		return t, false
	case err != nil:
		h.fail(w, r, http.StatusInternalServerError, err)
		return t, false
	case t.Kind != kind:
		h.fail(w, r, http.StatusNotFound, fmt.Errorf("table %q holds %s, not %s", ref, t.Kind, kind))
		return t, false
	}
	return t, true
}

// etag is the entity tag of an answer that depends on a table's content only and parts.
func etag(stamp string, parts ...any) string {
	s := sha256.New()
	fmt.Fprint(s, stamp)
	for _, p := range parts {
		fmt.Fprintf(s, "|%v", p)
	}
	return `"` + hex.EncodeToString(s.Sum(nil)[:12]) + `"`
}

// notModified answers 304 when the client holds tag, and sets it otherwise.
func notModified(w http.ResponseWriter, r *http.Request, tag string) bool {
	w.Header().Set("ETag", tag)
	// A tile changes when its table does: the browser keeps it and asks again each
	// time, which costs one small request when nothing changed.
	w.Header().Set("Cache-Control", "no-cache")
	for _, t := range strings.Split(r.Header.Get("If-None-Match"), ",") {
		if strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(t), "W/")) == tag {
			w.WriteHeader(http.StatusNotModified)
			return true
		}
	}
	return false
}

// asOfParam reads ?asof=RUN, 0 when absent.
func asOfParam(r *http.Request) (int64, error) {
	s := r.URL.Query().Get("asof")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("asof %q: want a run id (a positive whole number)", s)
	}
	return n, nil
}

// vectorTile serves GET /vt/{table}/{z}/{x}/{y}.mvt: one Mapbox Vector Tile of a feature
// table, bounded (store.DefaultTileFeatures, store.DefaultTileBytes: thinned beyond) and
// revalidated by its ETag. A tile with nothing in it answers 204.
func (h *handler) vectorTile(w http.ResponseWriter, r *http.Request) {
	z, x, y, err := tileCoords(r.PathValue("z"), r.PathValue("x"), r.PathValue("y"))
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	asOf, err := asOfParam(r)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	t, ok := h.tableOf(w, r, store.KindFeatures)
	if !ok {
		return
	}
	w.Header().Add("Vary", "Accept-Encoding")
	if notModified(w, r, etag(t.Stamp, "vt1", z, x, y, asOf)) {
		return
	}
	vt, err := h.o.Store.VectorTile(r.Context(), t, store.TileQuery{Z: z, X: x, Y: y, AsOfRun: asOf})
	if err != nil {
		h.fail(w, r, tileStatus(err), fmt.Errorf("tile %d/%d/%d of %s: %w", z, x, y, tableRef(t), err))
		return
	}
	hd := w.Header()
	hd.Set("X-Geoflow-Features", strconv.Itoa(vt.Features))
	if vt.Thinned {
		hd.Set("X-Geoflow-Thinned", "true")
	}
	if len(vt.Data) == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	hd.Set("Content-Type", "application/vnd.mapbox-vector-tile")
	writeMaybeGzip(w, r, vt.Data)
}

// tileStatus is the status of a tile the store could not make: a table whose CRS it
// cannot bring to Web Mercator is the table's matter (422), anything else the server's.
func tileStatus(err error) int {
	if errors.Is(err, store.ErrNoTransform) {
		return http.StatusUnprocessableEntity
	}
	return http.StatusInternalServerError
}

// writeMaybeGzip writes b, gzipped when the client takes it and it is worth it.
func writeMaybeGzip(w http.ResponseWriter, r *http.Request, b []byte) {
	if len(b) < 1024 || !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		w.Write(b)
		return
	}
	w.Header().Set("Content-Encoding", "gzip")
	zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	zw.Write(b)
	zw.Close()
}

// rasterTile serves GET /rt/{table}/{z}/{x}/{y}: a tile of a tile pyramid geoflow stored
// in its GeoPackage; one the pyramid does not hold answers 204, which a map draws as
// empty.
func (h *handler) rasterTile(w http.ResponseWriter, r *http.Request) {
	z, x, y, err := tileCoords(r.PathValue("z"), r.PathValue("x"), r.PathValue("y"))
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	t, ok := h.tableOf(w, r, store.KindTiles)
	if !ok {
		return
	}
	if notModified(w, r, etag(t.Stamp, "rt1", z, x, y)) {
		return
	}
	b, ctype, err := h.o.Store.RasterTile(r.Context(), t, z, x, y)
	if errors.Is(err, store.ErrNotFound) {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, fmt.Errorf("tile %d/%d/%d of %s: %w", z, x, y, tableRef(t), err))
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Write(b)
}

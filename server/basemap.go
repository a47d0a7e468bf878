package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// basemap is a tile task's stored tiles, drawn beneath a map of its flow: there is no
// basemap service offline, but a flow that mirrors tiles has its own.
type basemap struct {
	URL      string // /tiles/{flow}/{task}/{z}/{x}/{y}
	Min, Max int
}

// basemapTiles finds the first task of f that stores tiles as files.
func basemapTiles(f *flows.Flow) (task *flows.Task, dir string, lo, hi int, ok bool) {
	for _, t := range f.Tasks {
		if b, isB := t.Config.(tasks.Basemap); isB {
			if dir, lo, hi, ok = b.BasemapTiles(); ok {
				return t, dir, lo, hi, true
			}
		}
	}
	return nil, "", 0, 0, false
}

// basemapOf is what a map of the flow called name draws beneath: the flow's own tiles
// (files, or a pyramid in the GeoPackage store), else the --basemap of the server's
// user; nil when there is none.
func (h *handler) basemapOf(ctx context.Context, name string) *basemap {
	if b := h.flowBasemap(ctx, name); b != nil {
		return b
	}
	return h.userBasemap()
}

func (h *handler) flowBasemap(ctx context.Context, name string) *basemap {
	if h.o.Catalog == nil || name == "" {
		return nil
	}
	f, err := h.o.Catalog.Load(name)
	if err != nil {
		return nil
	}
	if t, _, lo, hi, ok := basemapTiles(f); ok {
		return &basemap{URL: "/tiles/" + f.Name + "/" + t.ID + "/{z}/{x}/{y}", Min: lo, Max: hi}
	}
	for _, t := range f.Tasks {
		p, isP := t.Config.(interface{ PyramidTable() (string, bool) })
		if !isP {
			continue
		}
		table, ok := p.PyramidTable()
		if !ok {
			continue
		}
		schema, name, err := store.SplitTable(table)
		if err != nil {
			continue
		}
		if schema == "public" {
			schema = ""
		}
		if st, err := h.o.Store.StoredTable(ctx, schema, name); err == nil && st.Kind == store.KindTiles {
			return &basemap{URL: "/rt/" + tableRef(st) + "/{z}/{x}/{y}", Min: st.MinZoom, Max: st.MaxZoom}
		}
	}
	return nil
}

// userBasemap is the server's --basemap, nil when it has none.
func (h *handler) userBasemap() *basemap {
	if h.o.Basemap == "" {
		return nil
	}
	return &basemap{URL: h.o.Basemap, Min: 0, Max: 19}
}

// checkBasemap checks a --basemap template: an http(s) URL with {z}, {x} and {y}. It
// returns the origin the pages' content security policy lets images come from.
func checkBasemap(tmpl string) (origin string, err error) {
	u, err := url.Parse(tmpl)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("basemap %q: want an http or https URL template such as https://tile.example.org/{z}/{x}/{y}.png", redact.String(tmpl))
	}
	for _, p := range []string{"{z}", "{x}", "{y}"} {
		if !strings.Contains(tmpl, p) {
			return "", fmt.Errorf("basemap %q: the template has no %s (it needs {z}, {x} and {y})", redact.String(tmpl), p)
		}
	}
	return u.Scheme + "://" + u.Host, nil
}

// tile serves one stored tile of a flow's tile task. A tile that is not stored (outside
// the area, not fetched yet) answers 204, which the map draws as empty without an error.
func (h *handler) tile(w http.ResponseWriter, r *http.Request) {
	if h.o.Catalog == nil {
		h.notFound(w, r)
		return
	}
	f, err := h.o.Catalog.Load(r.PathValue("flow"))
	if err != nil {
		h.notFound(w, r)
		return
	}
	t, dir, lo, hi, ok := basemapTiles(f)
	if !ok || t.ID != r.PathValue("task") {
		h.notFound(w, r)
		return
	}
	// Numbers only: nothing of the request reaches the path but three integers.
	z, errZ := strconv.Atoi(r.PathValue("z"))
	x, errX := strconv.Atoi(r.PathValue("x"))
	y, errY := strconv.Atoi(r.PathValue("y"))
	if errors.Join(errZ, errX, errY) != nil || z < lo || z > hi || x < 0 || y < 0 || x >= 1<<z || y >= 1<<z {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	base := filepath.Join(dir, strconv.Itoa(z), strconv.Itoa(x), strconv.Itoa(y))
	for _, ext := range []string{".png", ".jpg", ".jpeg", ".webp"} {
		file, err := os.Open(base + ext)
		if err != nil {
			continue
		}
		defer file.Close()
		st, err := file.Stat()
		if err != nil || st.IsDir() {
			continue
		}
		w.Header().Set("Cache-Control", "no-cache") // a rerun may replace it; ETag-less, Last-Modified revalidates
		http.ServeContent(w, r, filepath.Base(base+ext), st.ModTime(), file)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

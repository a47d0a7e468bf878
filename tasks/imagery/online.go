package imagery

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/internal/didyoumean"
	"github.com/geoflow/geoflow/internal/ows"
	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/internal/probe"
)

var _ tasks.Online = (*Config)(nil)

// finding is one problem an online check found, at the key it concerns.
type finding struct{ key, msg string }

// CheckOnline implements tasks.Online: for a WMS, that its capabilities offer the layers,
// the format and the CRS the task asks for, and that the task's bbox meets the layers'
// extent; for a STAC API, that each collection exists, offers the assets asked for, and
// that the bbox meets its extent. The error is for a server that could not be asked.
func (c *Config) CheckOnline(ctx context.Context, env *tasks.Env, p tasks.Problems) error {
	var area *orb.Bound
	if b := c.BBox; b != nil {
		area = &orb.Bound{Min: orb.Point{b[0], b[1]}, Max: orb.Point{b[2], b[3]}}
	}
	var fs []finding
	var err error
	switch {
	case c.WMS != nil:
		fs, err = c.checkWMS(ctx, env, area)
	case c.STAC != nil:
		fs, err = c.checkSTAC(ctx, env, area)
	}
	for _, f := range fs {
		p.At(f.key, "%s", f.msg)
	}
	return err
}

// checkWMS reads the capabilities and judges the wms section against them.
func (c *Config) checkWMS(ctx context.Context, env *tasks.Env, area *orb.Bound) ([]finding, error) {
	w := *c.WMS
	w.Version = cmpOr(w.Version, "1.3.0")
	w.Format = cmpOr(w.Format, "auto")
	u := ows.URL(w.URL, [][2]string{{"SERVICE", "WMS"}, {"REQUEST", "GetCapabilities"}, {"VERSION", w.Version}})
	r, err := probe.Get(ctx, env, "capabilities", u, "", c.Headers)
	if err != nil {
		return nil, fmt.Errorf("reading the capabilities of %s: %w", redact.URL(w.URL), err)
	}
	if !r.OK() {
		return []finding{{"wms.url", fmt.Sprintf("the server answered HTTP %d to GetCapabilities", r.Status)}}, nil
	}
	caps, err := ParseCapabilities(bytes.NewReader(r.Body))
	if err != nil {
		return []finding{{"wms.url", err.Error()}}, nil
	}
	return wmsFindings(&w, area, caps), nil
}

// wmsFindings judges a wms section and its area against the server's capabilities.
func wmsFindings(w *WMS, area *orb.Bound, c *wmsCaps) []finding {
	var out []finding
	names := make([]string, len(c.Named))
	for i, l := range c.Named {
		names[i] = l.Name
	}
	var found []wmsLayer
	for _, name := range strings.Split(w.Layers, ",") {
		name = strings.TrimSpace(name)
		l, ok := c.layer(name)
		if !ok {
			out = append(out, finding{"wms.layers", noSuch("the server has no layer", name, names)})
			continue
		}
		found = append(found, l)
		if crs := canonicalCRS(w.CRS); len(l.CRSs) > 0 && !offers(l.CRSs, crs) {
			out = append(out, finding{"wms.crs", fmt.Sprintf("layer %q is not offered in %s (it is in %s)", name, crs, strings.Join(l.CRSs, ", "))})
		}
	}
	if _, err := chooseFormat(w.Format, c.Formats); err != nil {
		out = append(out, finding{"wms.format", err.Error()})
	}
	if area != nil && len(found) > 0 {
		if err := layersExtent(w.Layers, *area, found); err != nil {
			out = append(out, finding{"bbox", err.Error()})
		}
	}
	return out
}

// layer returns the named layer.
func (c *wmsCaps) layer(name string) (wmsLayer, bool) {
	for _, l := range c.Named {
		if l.Name == name {
			return l, true
		}
	}
	return wmsLayer{}, false
}

// layersExtent checks area against the union of the layers' advertised extents (a map of
// several layers has content where any has); nil when none advertises one.
func layersExtent(name string, area orb.Bound, ls []wmsLayer) error {
	var ext orb.Bound
	have := false
	for _, l := range ls {
		if l.Extent == nil {
			return nil // one layer may be anywhere
		}
		if !have {
			ext, have = *l.Extent, true
		} else {
			ext = ext.Union(*l.Extent)
		}
	}
	if !have {
		return nil
	}
	return tasks.CheckExtent(name, area, ext)
}

func canonicalCRS(s string) string {
	if s == "" {
		return "EPSG:3857"
	}
	return strings.ToUpper(s)
}

// noSuch says a name is not among names, suggesting the nearest.
func noSuch(what, name string, names []string) string {
	msg := fmt.Sprintf("%s %q", what, name)
	if s := didyoumean.Nearest(name, names); s != "" {
		return msg + fmt.Sprintf(" (did you mean %q?)", s)
	}
	if len(names) > 0 && len(names) <= 10 {
		return msg + " (it has " + strings.Join(names, ", ") + ")"
	}
	return msg
}

// checkSTAC asks for each collection of the stac section and judges the task against it.
func (c *Config) checkSTAC(ctx context.Context, env *tasks.Env, area *orb.Bound) ([]finding, error) {
	s := c.STAC
	if len(s.Collections) == 0 {
		r, err := probe.Get(ctx, env, "landing", s.URL, "application/json", c.Headers)
		if err != nil {
			return nil, fmt.Errorf("reading the landing page of %s: %w", redact.URL(s.URL), err)
		}
		if !r.OK() {
			return []finding{{"stac.url", fmt.Sprintf("the API answered HTTP %d to its landing page", r.Status)}}, nil
		}
		return nil, nil
	}
	var out []finding
	for _, id := range s.Collections {
		coll, status, err := fetchCollection(ctx, env, s.URL, id, c.Headers)
		if err != nil {
			return out, err
		}
		if status == http.StatusNotFound {
			var ids []string
			if all, err := stacCollections(ctx, env, s.URL, nil); err == nil {
				for _, other := range all {
					ids = append(ids, other.ID)
				}
			}
			out = append(out, finding{"stac.collections", noSuch("the API has no collection", id, ids)})
			continue
		}
		if coll == nil {
			out = append(out, finding{"stac.collections", fmt.Sprintf("collection %q: the API answered HTTP %d", id, status)})
			continue
		}
		out = append(out, collectionFindings(s, area, coll)...)
	}
	return out, nil
}

// collectionFindings judges the assets asked for and the area against a collection.
func collectionFindings(s *STAC, area *orb.Bound, coll *collection) []finding {
	var out []finding
	if len(coll.ItemAssets) > 0 {
		var keys []string
		for k := range coll.ItemAssets {
			keys = append(keys, k)
		}
		assets := s.Assets
		if len(assets) == 0 {
			assets = []string{"visual"}
		}
		for _, a := range assets {
			if _, ok := coll.ItemAssets[a]; !ok {
				out = append(out, finding{"stac.assets", noSuch(fmt.Sprintf("collection %q has no asset", coll.ID), a, keys)})
			}
		}
	}
	if b := coll.bound(); area != nil && b != nil {
		if err := tasks.CheckExtent(coll.ID, *area, *b); err != nil {
			out = append(out, finding{"bbox", err.Error()})
		}
	}
	return out
}

// fetchCollection asks a STAC API for one collection: the collection when it answers
// 200, else the status it answered; the error is for an API that could not be asked.
func fetchCollection(ctx context.Context, env *tasks.Env, root, id string, headers map[string]string) (*collection, int, error) {
	u := strings.TrimRight(root, "/") + "/collections/" + url.PathEscape(id)
	r, err := probe.Get(ctx, env, "collection", u, "application/json", headers)
	if err != nil {
		return nil, 0, fmt.Errorf("asking %s for collection %q: %w", redact.URL(root), id, err)
	}
	if !r.OK() {
		return nil, r.Status, nil
	}
	var c collection
	if err := json.Unmarshal(r.Body, &c); err != nil || c.ID == "" {
		return nil, r.Status, nil
	}
	return &c, r.Status, nil
}

// wmsAreaMeets is the planning check of a WMS task: its area must meet the extent its
// layers advertise, or the run would fetch blank chips and call that complete.
func wmsAreaMeets(w *WMS, a orb.Bound, c *wmsCaps) error {
	var ls []wmsLayer
	for _, name := range strings.Split(w.Layers, ",") {
		if l, ok := c.layer(strings.TrimSpace(name)); ok {
			ls = append(ls, l)
		}
	}
	if err := layersExtent(w.Layers, a, ls); err != nil {
		return fmt.Errorf("wms.layers: %w", err)
	}
	return nil
}

// stacAreaMeets is the planning check of a STAC task: each collection it names must exist
// and its extent meet the task's area, or the search would find nothing and the run call
// that complete. An API that does not serve its collections (or fails to) is not held
// against the task: the search decides.
func (t *Task) stacAreaMeets(ctx context.Context, env *tasks.Env, a orb.Bound) error {
	s := t.cfg.STAC
	for _, id := range s.Collections {
		coll, status, err := fetchCollection(ctx, env, s.URL, id, t.cfg.Headers)
		switch {
		case err != nil:
			env.Logger.Warn("could not read the collection's extent", "collection", id, "err", err)
		case status == http.StatusNotFound:
			return fmt.Errorf("stac.collections: the API has no collection %q", id)
		case coll == nil:
			env.Logger.Warn("could not read the collection's extent", "collection", id, "status", status)
		default:
			if b := coll.bound(); b != nil {
				if err := tasks.CheckExtent(id, a, *b); err != nil {
					return fmt.Errorf("stac.collections: %w", err)
				}
			}
		}
	}
	return nil
}

package tiles

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/internal/didyoumean"
	"github.com/geoflow/geoflow/internal/ows"
	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/internal/files"
	"github.com/geoflow/geoflow/tasks/internal/probe"
)

var _ tasks.Online = (*Config)(nil)

// finding is one problem an online check found, at the key it concerns.
type finding struct{ key, msg string }

// CheckOnline implements tasks.Online. For a WMTS KVP template it reads the service's
// capabilities: the layer, format and tile matrix set must be offered and the bbox meet
// the layer's extent. For any other template (or a WMTS that serves no capabilities
// there) it fetches the first zoom level's tile at the centre of the bbox, which must be
// an image (or, with missing_ok, may be missing). The error is for a server that could
// not be asked.
func (c *Config) CheckOnline(ctx context.Context, env *tasks.Env, p tasks.Problems) error {
	tpl, err := ParseTemplate(c.URL, c.Scheme == "tms")
	if err != nil {
		return nil // Check reported it
	}
	var area *orb.Bound
	if b := c.BBox; b != nil {
		area = &orb.Bound{Min: orb.Point{b[0], b[1]}, Max: orb.Point{b[2], b[3]}}
	}
	var fs []finding
	caps, err := c.wmtsCaps(ctx, env)
	if err != nil {
		return err
	}
	if caps != nil {
		fs = wmtsFindings(c.URL, area, caps)
	} else if fs, err = c.probeTile(ctx, env, tpl, area); err != nil {
		return err
	}
	for _, f := range fs {
		p.At(f.key, "%s", f.msg)
	}
	return nil
}

// wmtsCaps reads the capabilities of a WMTS KVP template's service; nil when the
// template is not one, or the service serves no capabilities there.
func (c *Config) wmtsCaps(ctx context.Context, env *tasks.Env) (*wmtsCaps, error) {
	if !strings.EqualFold(param(c.URL, "REQUEST"), "GetTile") {
		return nil, nil
	}
	u := ows.URL(kvpBase(c.URL), [][2]string{{"SERVICE", "WMTS"}, {"REQUEST", "GetCapabilities"}, {"VERSION", "1.0.0"}})
	r, err := probe.Get(ctx, env, "capabilities", u, "application/xml, text/xml", c.Headers)
	if err != nil {
		return nil, fmt.Errorf("reading the WMTS capabilities of %s: %w", redact.URL(kvpBase(c.URL)), err)
	}
	caps, ok, err := parseWMTS(r.Body)
	if !r.OK() || !ok || err != nil {
		return nil, nil
	}
	return caps, nil
}

// wmtsFindings judges a WMTS KVP template (its LAYER, FORMAT and TILEMATRIXSET) and the
// task's area against the service's capabilities.
func wmtsFindings(template string, area *orb.Bound, c *wmtsCaps) []finding {
	name := param(template, "LAYER")
	l, ok := c.layer(name)
	if !ok {
		ids := make([]string, len(c.Layers))
		for i, l := range c.Layers {
			ids[i] = l.Identifier
		}
		msg := fmt.Sprintf("LAYER=%s: the WMTS has no such layer", name)
		if s := didyoumean.Nearest(name, ids); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return []finding{{"url", msg}}
	}
	var out []finding
	if f := param(template, "FORMAT"); f != "" && !contains(l.Formats, f) {
		out = append(out, finding{"url", fmt.Sprintf("FORMAT=%s: layer %q is served as %s", f, name, strings.Join(l.Formats, ", "))})
	}
	var sets []string
	for _, link := range l.Links {
		sets = append(sets, link.Set)
	}
	if s := param(template, "TILEMATRIXSET"); s != "" && !contains(sets, s) {
		out = append(out, finding{"url", fmt.Sprintf("TILEMATRIXSET=%s: layer %q is in %s", s, name, strings.Join(sets, ", "))})
	}
	if e := l.extent(); area != nil && e != nil {
		if err := tasks.CheckExtent(name, *area, *e); err != nil {
			out = append(out, finding{"bbox", err.Error()})
		}
	}
	return out
}

// probeTile fetches the tile of the first zoom level at the centre of the area (the
// world when the area comes from another task) and judges the answer.
func (c *Config) probeTile(ctx context.Context, env *tasks.Env, tpl *Template, area *orb.Bound) ([]finding, error) {
	z, _, _ := zoomRange(c.Zoom)
	a := world
	if area != nil {
		a = *area
	}
	fx, fy := tileFraction(a.Center(), z)
	x, y := min(int(fx), 1<<uint(z)-1), min(int(fy), 1<<uint(z)-1)
	u := tpl.Expand(z, x, y)
	r, err := probe.Get(ctx, env, "probe", u, "image/*", c.Headers)
	if err != nil {
		return nil, fmt.Errorf("fetching tile %d/%d/%d: %w", z, x, y, err)
	}
	return tileFindings(z, x, y, c.MissingOK, r.Status, r.Header.Get("Content-Type"), r.Body), nil
}

// tileFindings judges the answer to one probed tile.
func tileFindings(z, x, y int, missingOK bool, status int, contentType string, body []byte) []finding {
	at := fmt.Sprintf("tile %d/%d/%d (the first zoom level, at the centre of bbox)", z, x, y)
	switch {
	case (status == http.StatusNotFound || status == http.StatusNoContent) && missingOK:
		return nil
	case status == http.StatusNotFound:
		return []finding{{"url", at + ": the server answered 404 (a template mistake, or no tiles there: missing_ok: true accepts missing tiles)"}}
	case status < 200 || status > 299:
		return []finding{{"url", fmt.Sprintf("%s: the server answered HTTP %d", at, status)}}
	}
	if _, err := files.CheckImage(contentType, body); err != nil {
		return []finding{{"url", fmt.Sprintf("%s: %v", at, err)}}
	}
	return nil
}

// areaMeets is the planning check of a WMTS KVP template: the area must meet the layer's
// advertised extent, or the run would find no tile and call that complete. A service
// that serves no capabilities (or fails to) is not held against the task.
func (t *Task) areaMeets(ctx context.Context, env *tasks.Env, a orb.Bound) error {
	caps, err := t.cfg.wmtsCaps(ctx, env)
	if err != nil {
		env.Logger.Warn("could not read the WMTS capabilities", "err", err)
		return nil
	}
	if caps == nil {
		return nil
	}
	name := param(t.cfg.URL, "LAYER")
	if l, ok := caps.layer(name); ok {
		if e := l.extent(); e != nil {
			if err := tasks.CheckExtent(name, a, *e); err != nil {
				return fmt.Errorf("url: %w", err)
			}
		}
	}
	return nil
}

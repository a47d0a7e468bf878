package ogcapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/tasks"
)

var _ tasks.IDLookup = (*idLookup)(nil)

// idLookup asks an OGC API - Features server for one feature by id: items/{featureId}
// (Part 1 has no request for several ids). 404 (or 410) is the server's word that the
// feature is gone.
type idLookup struct {
	t *Task
	p *prepared
}

// lookup is the task's tasks.IDLookup, nil where an answer by id would not say whether
// the feature belongs to the harvest: rows keyed on properties (target.key) are not
// keyed on the server's id, and items/{featureId} ignores the task's filter and
// datetime, so it would keep features that no longer match them.
func (t *Task) lookup(p *prepared) tasks.IDLookup {
	if len(t.cfg.Target.Key) > 0 || t.cfg.Filter != "" || t.cfg.Datetime != "" {
		return nil
	}
	return &idLookup{t: t, p: p}
}

// BatchSize implements tasks.IDLookup: one id a request.
func (l *idLookup) BatchSize() int { return 1 }

// LookupIDs implements tasks.IDLookup, one request per id.
func (l *idLookup) LookupIDs(ctx context.Context, env *tasks.Env, ids []string) ([]*spatial.Feature, error) {
	var out []*spatial.Feature
	for _, id := range ids {
		u, err := url.Parse(join(l.p.items, id))
		if err != nil {
			return nil, fmt.Errorf("asking for feature %q by id: %w", id, err)
		}
		v := u.Query()
		v.Set("f", "json")
		if l.p.crsParam != "" {
			v.Set("crs", l.p.crsParam)
		}
		u.RawQuery = v.Encode()
		req := l.t.request(env, "confirm-by-id", u.String(), acceptFeatures)
		req.AcceptStatus = []int{http.StatusNotFound, http.StatusGone}
		err = env.HTTP.Do(ctx, req, func(resp *http.Response) error {
			if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone {
				return nil // gone
			}
			if err := tasks.RefuseHTML(resp); err != nil {
				return err
			}
			fs, err := l.p.eng.ReadFeatures(env, resp.Body)
			if err != nil {
				return err
			}
			for _, f := range fs {
				if f.ID == "" {
					f.ID = id // a Feature document need not repeat the id it was asked by
				}
				out = append(out, f)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("asking for feature %q by id: %w", id, err)
		}
	}
	return out, nil
}

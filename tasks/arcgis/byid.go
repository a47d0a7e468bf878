package arcgis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/esrijson"
	"github.com/geoflow/geoflow/tasks"
)

// maxLookupBatch caps the object ids one lookup asks for, below the maxRecordCount most
// servers keep (1,000 or 2,000): an answer cut by the server's own cap is no evidence.
const maxLookupBatch = 500

var _ tasks.IDLookup = (*idLookup)(nil)

// idLookup asks an ArcGIS layer for features by object id: a query with objectIds (and
// the task's where, so that a feature that no longer matches it is not kept).
type idLookup struct {
	t *Task
	p *prepared
}

// lookup is the task's tasks.IDLookup, nil where rows are keyed on properties
// (target.key), not on the object id the server is asked by.
func (t *Task) lookup(p *prepared) tasks.IDLookup {
	if len(t.cfg.Target.Key) > 0 {
		return nil
	}
	return &idLookup{t: t, p: p}
}

// BatchSize implements tasks.IDLookup.
func (l *idLookup) BatchSize() int { return max(1, min(l.p.batch, maxLookupBatch)) }

// LookupIDs implements tasks.IDLookup with one POSTed query. An answer that says it was
// cut (exceededTransferLimit) is an error: the ids it left out are not known gone.
func (l *idLookup) LookupIDs(ctx context.Context, env *tasks.Env, ids []string) ([]*spatial.Feature, error) {
	for _, id := range ids {
		if _, err := strconv.Atoi(id); err != nil {
			return nil, fmt.Errorf("asking for features by object id: %q is not an object id", id)
		}
	}
	form := url.Values{
		"objectIds":      {strings.Join(ids, ",")},
		"where":          {l.t.cfg.Where},
		"outFields":      {"*"},
		"returnGeometry": {"true"},
		"outSR":          {"4326"},
		"f":              {"json"},
	}
	if len(l.t.cfg.OutFields) > 0 {
		form.Set("outFields", strings.Join(append([]string{l.p.oidField}, l.t.cfg.OutFields...), ","))
	}
	var out []*spatial.Feature
	err := env.HTTP.Do(ctx, l.t.request(env, "confirm-by-id", http.MethodPost, l.t.cfg.URL+"/query", form), func(resp *http.Response) error {
		out = out[:0]
		if err := tasks.RefuseHTML(resp); err != nil {
			return err
		}
		d := &decoder{r: esrijson.NewReader(resp.Body, esrijson.Options{IDField: l.p.oidField, Limits: l.t.cfg.Limits.Spatial()}), dates: l.p.dates}
		for {
			f, err := d.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				// A feature answered but unreadable is still served: no evidence of
				// absence for it, nor for the batch.
				return classify(err)
			}
			out = append(out, f)
		}
		if d.r.Exceeded() {
			return fmt.Errorf("the server cut its answer to %d of %d object ids (exceededTransferLimit)", len(out), len(ids))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("asking for %d features by object id: %w", len(ids), err)
	}
	return out, nil
}

package wfs

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/geoflow/geoflow/internal/ows"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/tasks"
)

// lookupBatch is how many ids one GetFeature by id asks for: about 20 characters each
// with a type prefix, well inside the 8 KiB many servers and proxies allow a URL.
const lookupBatch = 100

var _ tasks.IDLookup = (*idLookup)(nil)

// idLookup asks a WFS for features by id: RESOURCEID in 2.0, FEATUREID in 1.1 and 1.0,
// with the type name, SRS and output format the harvest negotiated.
type idLookup struct {
	t *Task
	p *prepared
}

// lookup is the task's tasks.IDLookup, nil where the server cannot be asked by id for
// what the mirror keys on: rows keyed on properties (target.key) are not keyed on the
// server's id, and a task with a filter would keep features that no longer match it
// (FES 2.0 does not combine ResourceId with other predicates).
func (t *Task) lookup(p *prepared) tasks.IDLookup {
	if len(t.cfg.Target.Key) > 0 || t.cfg.Filter != "" {
		return nil
	}
	return &idLookup{t: t, p: p}
}

// BatchSize implements tasks.IDLookup.
func (l *idLookup) BatchSize() int { return lookupBatch }

// LookupIDs implements tasks.IDLookup with one GetFeature.
func (l *idLookup) LookupIDs(ctx context.Context, env *tasks.Env, ids []string) ([]*spatial.Feature, error) {
	p := l.p
	params := [][2]string{{"SERVICE", "WFS"}, {"VERSION", p.version}, {"REQUEST", "GetFeature"}}
	idParam, countParam := "FEATUREID", "MAXFEATURES"
	if p.version == "2.0.0" {
		params = append(params, [2]string{"TYPENAMES", p.typeName})
		idParam, countParam = "RESOURCEID", "COUNT"
	} else {
		params = append(params, [2]string{"TYPENAME", p.typeName})
	}
	if p.version != "1.0.0" {
		params = append(params, [2]string{"SRSNAME", p.srsParam})
	}
	if p.format != "" {
		params = append(params, [2]string{"OUTPUTFORMAT", p.format})
	}
	params = append(params, [2]string{countParam, strconv.Itoa(len(ids))}, [2]string{idParam, strings.Join(ids, ",")})
	var out []*spatial.Feature
	err := env.HTTP.Do(ctx, l.t.request(env, p, "confirm-by-id", ows.URL(l.t.cfg.URL, params)), func(resp *http.Response) error {
		if err := tasks.RefuseHTML(resp); err != nil {
			return err
		}
		var err error
		out, err = p.eng.ReadFeatures(env, resp.Body)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("asking for %d features by id: %w", len(ids), err)
	}
	return out, nil
}

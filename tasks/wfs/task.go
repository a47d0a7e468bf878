package wfs

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/project"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/gml"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/internal/harvest"
)

var (
	_ tasks.Task         = (*Task)(nil)
	_ tasks.Finisher     = (*Task)(nil)
	_ tasks.Follower     = (*Task)(nil)
	_ harvest.Negotiator = (*Task)(nil)
)

// defaultPageSize is the features per request when the server advertises no CountDefault.
const defaultPageSize = 1000

// Task is a configured wfs task. Its setup (capabilities, schema, target table) happens
// once, on the first Plan or Execute; Execute is safe for concurrent use.
type Task struct {
	// Task makes Plan, Execute, Follow and Finish the harvest engine's, once negotiated.
	harvest.Task

	id            string
	cfg           Config
	schema, table string

	prepMu sync.Mutex // serializes prepare: one negotiation at a time, its result kept in p
	p      *prepared  // nil until prepare succeeds

}

// prepared is what a task learned from the server; read-only once set.
type prepared struct {
	// transform is the task's transform planned against the layer; nil changes nothing.
	transform *tasks.Transformer
	caps      *Capabilities
	version   string
	typeName  string // as advertised
	format    string // OUTPUTFORMAT value; "" for the server's default GML
	geoJSON   bool
	srsParam  string // SRSNAME value
	srid      int
	latLonCRS bool // the stored CRS is geographic: x must be longitude
	area      orb.Bound
	table     *store.FeatureTable
	sortBy    string
	eng       *harvest.Engine
}

// hits asks the server how many features a box holds.
func (t *Task) hits(ctx context.Context, env *tasks.Env, p *prepared, unit string, bbox orb.Bound) (int64, error) {
	q := t.getFeature(p, bbox, 0, 0, true, false)
	n := int64(-1)
	err := env.HTTP.Do(ctx, t.request(env, p, unit, q), func(resp *http.Response) error {
		if err := tasks.RefuseHTML(resp); err != nil {
			return err
		}
		r := gml.NewReader(resp.Body, gml.Options{WFSVersion: p.version, TypeName: p.typeName})
		if err := spatial.Walk(r, nil); err != nil {
			return classify(err)
		}
		m := r.Meta()
		n = m.NumberMatched
		if p.version == "1.1.0" && n < 0 {
			n = m.NumberReturned // numberOfFeatures
		}
		return nil
	})
	if err != nil {
		return -1, fmt.Errorf("counting features in %s: %w", harvest.FormatBound(bbox), err)
	}
	return n, nil
}

func mercatorToLonLat(b orb.Bound) orb.Bound {
	return orb.Bound{Min: project.Mercator.ToWGS84(b.Min), Max: project.Mercator.ToWGS84(b.Max)}
}

// Negotiate implements harvest.Negotiator.
func (t *Task) Negotiate(ctx context.Context, env *tasks.Env) (*harvest.Engine, error) {
	p, err := t.prepare(ctx, env)
	if err != nil {
		return nil, err
	}
	return p.eng, nil
}

package wfs

import (
	"context"
	"encoding/json"
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
	_ tasks.Task     = (*Task)(nil)
	_ tasks.Finisher = (*Task)(nil)
	_ tasks.Follower = (*Task)(nil)
)

// defaultPageSize is the features per request when the server advertises no CountDefault.
const defaultPageSize = 1000

// Task is a configured wfs task. Its setup (capabilities, schema, target table) happens
// once, on the first Plan or Execute; Execute is safe for concurrent use.
type Task struct {
	id            string
	cfg           Config
	schema, table string

	once sync.Mutex
	p    *prepared // nil until prepare succeeds

}

// prepared is what a task learned from the server; read-only once set.
type prepared struct {
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

// Plan implements tasks.Task: one root tile over the area; tiles split as they learn
// how many features they hold.
func (t *Task) Plan(ctx context.Context, env *tasks.Env) ([]store.Unit, error) {
	p, err := t.prepare(ctx, env)
	if err != nil {
		return nil, err
	}
	return p.eng.Plan(ctx, env)
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

// Finish implements tasks.Finisher: the engine builds the indexes deferred while a new
// table was first filled, and compares the server's count for the area with the distinct
// features stored there.
func (t *Task) Finish(ctx context.Context, env *tasks.Env) error {
	t.once.Lock()
	p := t.p
	t.once.Unlock()
	if p == nil {
		return nil
	}
	return p.eng.Finish(ctx, env)
}

// Follow implements tasks.Follower: the harvest engine plans what a verdict calls for.
func (t *Task) Follow(env *tasks.Env, u store.Unit, e tasks.Evidence, v tasks.Verdict) (json.RawMessage, []store.Unit) {
	t.once.Lock()
	p := t.p
	t.once.Unlock()
	if p == nil {
		return nil, nil
	}
	return p.eng.Follow(env, u, e, v)
}

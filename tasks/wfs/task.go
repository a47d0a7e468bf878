package wfs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/project"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/gml"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

var (
	_ tasks.Task     = (*Task)(nil)
	_ tasks.Finisher = (*Task)(nil)
)

// Defaults of the harvest.
const (
	defaultPageSize = 1000
	// maxDepth bounds the quadtree: 2^-24 of the root box is far below a parcel.
	maxDepth = 24
	// minTileDeg is the smallest tile side worth splitting further.
	minTileDeg = 1e-7
)

// splitBudget is the backstop on the tiles one task may plan by splitting: 64 for every
// page of the area's count, and at least 100,000, far more than real data needs (a
// harvest plans about one and a half tiles a page). A server whose counts keep tiles
// looking overfull however small they get would otherwise have the task split without
// end; past the budget the task pages what is left instead, and says so.
var splitBudget = func(expected, pageSize int64) int64 {
	return max(100_000, 64*expected/max(pageSize, 1))
}

// Task is a configured wfs task. Its setup (capabilities, schema, target table) happens
// once, on the first Plan or Execute; Execute is safe for concurrent use.
type Task struct {
	id            string
	cfg           Config
	schema, table string

	once sync.Mutex
	p    *prepared // nil until prepare succeeds

	pageSize   atomic.Int64 // lowered when the server turns out to cap pages below CountDefault
	expected   atomic.Int64 // numberMatched of the whole area, -1 unknown
	warnedOrd  atomic.Bool
	warnedSwap atomic.Bool
	// optimistic counts tiles fetched on an estimated count, overflows those that held
	// more than a page after all: uneven data makes estimates wrong.
	optimistic, overflows atomic.Int64
	// miscounted is how many features the server counted beyond what it returned in
	// tiles that came back short of a full page; inflated counts the tiles where asking
	// for the rest proved the count high.
	miscounted, inflated atomic.Int64
	warnedCount          atomic.Bool
	// split counts the tiles planned by splitting, against splitBudget.
	splitTiles  atomic.Int64
	warnedSplit atomic.Bool
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
}

// spec is what a unit carries besides its key and bbox.
type spec struct {
	Depth int   `json:"d"`
	Page  bool  `json:"p,omitempty"`
	Start int64 `json:"s,omitempty"`
	// Size and Total are a page's size and its tile's count, fixed when the tile was
	// paged: a page is fetched at the size it was planned with, whatever the task has
	// learnt since, so that pages neither overlap nor leave gaps.
	Size  int64 `json:"z,omitempty"`
	Total int64 `json:"t,omitempty"`
	// Count is the features the tile holds: the server's count when Exact, else an
	// estimate from its parent's count (0 without Exact: unknown).
	Count int64 `json:"n,omitempty"`
	Exact bool  `json:"x,omitempty"`
	// Split says the tile turned out to hold more than one response: it is cut into
	// smaller tiles (Count is then what the server matched, 0 when unknown).
	Split bool `json:"sp,omitempty"`
	// Probe marks a page asking for the rest of a tile whose response was short of
	// the server's count without being full: nothing back proves the count high.
	Probe bool `json:"pr,omitempty"`
}

// fill is the share of a page a tile is cut to hold, leaving room for uneven density so
// that tiles estimated from their parent's count can be fetched without counting first.
const fill = 0.7

// Plan implements tasks.Task: one root tile over the area; tiles split as they learn
// how many features they hold.
func (t *Task) Plan(ctx context.Context, env *tasks.Env) ([]store.Unit, error) {
	p, err := t.prepare(ctx, env)
	if err != nil {
		return nil, err
	}
	area := p.area
	if env.Area != nil {
		if !area.Intersects(*env.Area) {
			return nil, &tasks.OutsideArea{Area: area}
		}
		area = intersect(area, *env.Area)
	}
	t.expected.Store(-1)
	if p.caps.Hits {
		if n, err := t.hits(ctx, env, p, "plan", area); err == nil {
			t.expected.Store(n)
			env.Logger.Info("server count for the area", "number_matched", n, "bbox", fmtBound(area))
		} else {
			env.Logger.Warn("could not count the area's features; completeness will not be checked", "err", err)
		}
	}
	root := spec{}
	if n := t.expected.Load(); n >= 0 {
		root = spec{Count: n, Exact: true} // the root tile need not be counted twice
	}
	sp, _ := json.Marshal(root)
	return []store.Unit{{Key: "q", BBox: &area, Spec: sp}}, nil
}

// hits asks the server how many features a box holds.
func (t *Task) hits(ctx context.Context, env *tasks.Env, p *prepared, unit string, bbox orb.Bound) (int64, error) {
	q := t.getFeature(p, bbox, 0, 0, true, false)
	n := int64(-1)
	err := env.HTTP.Do(ctx, t.request(env, p, unit, q), func(resp *http.Response) error {
		if err := checkContentType(resp); err != nil {
			return err
		}
		r := gml.NewReader(resp.Body, gml.Options{WFSVersion: p.version, TypeName: p.typeName})
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			var fe *spatial.FeatureError
			if errors.As(err, &fe) {
				continue
			}
			if err != nil {
				return classify(err)
			}
		}
		m := r.Meta()
		n = m.NumberMatched
		if p.version == "1.1.0" && n < 0 {
			n = m.NumberReturned // numberOfFeatures
		}
		return nil
	})
	if err != nil {
		return -1, fmt.Errorf("counting features in %s: %w", fmtBound(bbox), err)
	}
	return n, nil
}

func fmtBound(b orb.Bound) string {
	return fmt.Sprintf("%g,%g,%g,%g", b.Min[0], b.Min[1], b.Max[0], b.Max[1])
}

func intersect(a, b orb.Bound) orb.Bound {
	return orb.Bound{
		Min: orb.Point{math.Max(a.Min[0], b.Min[0]), math.Max(a.Min[1], b.Min[1])},
		Max: orb.Point{math.Min(a.Max[0], b.Max[0]), math.Min(a.Max[1], b.Max[1])},
	}
}

func mercatorToLonLat(b orb.Bound) orb.Bound {
	return orb.Bound{Min: project.Mercator.ToWGS84(b.Min), Max: project.Mercator.ToWGS84(b.Max)}
}

// Finish implements tasks.Finisher: it builds the indexes deferred while a new table was
// first filled, then compares the server's count for the area with the distinct features
// stored there. A shortfall is an error, which the runner logs loudly.
func (t *Task) Finish(ctx context.Context, env *tasks.Env) error {
	want := t.expected.Load()
	t.once.Lock()
	p := t.p
	t.once.Unlock()
	if p == nil {
		return nil
	}
	if err := env.Store.FinishFeatureTable(ctx, p.table); err != nil {
		return err
	}
	if want < 0 {
		return nil
	}
	area := p.area
	if env.Area != nil {
		area = intersect(area, *env.Area)
	}
	got, err := env.Store.CountFeatures(ctx, p.table, area)
	if errors.Is(err, store.ErrNoTransform) {
		env.Logger.Warn("completeness not checked: this store cannot bring the area into the table's CRS; request srs EPSG:4326 or use PostGIS to have it checked",
			"number_matched", want, "srid", p.table.SRID)
		return nil
	}
	if err != nil {
		return err
	}
	merged, err := env.Store.MergedFeatures(ctx, env.RunID, env.TaskID)
	if err != nil {
		return err
	}
	if merged > 0 {
		// Append mode keys a row on the payload (geometry and properties): features
		// the server lists under distinct ids with one payload are one row.
		env.Logger.Warn("distinct features with equal payloads (geometry and properties) are stored once: append mode keys rows on the payload",
			"features", merged)
		got += merged
	}
	if n := t.miscounted.Load(); n > 0 {
		env.Logger.Warn("the server counted more features than it returned in some tiles; its totals are checked against what is stored",
			"counted_beyond_returned", n, "tiles_proven_high", t.inflated.Load())
	}
	if got < want && t.miscounted.Load() > 0 {
		// The server's own counts ran high in this harvest: its total is not proof
		// of anything missing.
		env.Logger.Warn("the server matched more features than are stored, but its counts ran high in this harvest: not taken as missing",
			"number_matched", want, "stored_distinct", got, "counted_beyond_returned", t.miscounted.Load())
		return nil
	}
	if got < want {
		return fmt.Errorf("INCOMPLETE: the server matched %d features in %s but %d distinct features are stored there (%d missing)",
			want, fmtBound(area), got, want-got)
	}
	env.Logger.Info("complete: every feature the server matched is stored", "number_matched", want, "stored_distinct", got)
	return nil
}

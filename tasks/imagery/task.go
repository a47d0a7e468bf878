package imagery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/internal/files"
)

var _ tasks.Task = (*Task)(nil)

// Task is a configured imagery task. Execute is safe for concurrent use and works for any
// unit it ever planned, in this process or another (resume, dead-letter replay): each
// unit's spec carries what it needs.
type Task struct {
	id    string
	cfg   Config
	table *store.AssetTable
	epsg  int // WMS chip CRS
	// origin is the service URL (wms.url or stac.url) the task's headers are for;
	// nil when it does not parse, and then no request gets them.
	origin *url.URL

	mu      sync.Mutex
	ensured bool
	caps    *wmsCaps // WMS capabilities, once read
}

// ensure creates the index table and the directory once; a failure is not remembered.
func (t *Task) ensure(ctx context.Context, env *tasks.Env) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ensured {
		return nil
	}
	if err := env.Assets.EnsureAssetTable(ctx, t.table); err != nil {
		return err
	}
	if err := os.MkdirAll(t.cfg.Target.Dir, 0o755); err != nil {
		return fmt.Errorf("creating target.dir: %w", err)
	}
	t.ensured = true
	return nil
}

// area returns the task's lon/lat area: bbox, or the extent bbox_from names. The run's
// --bbox is applied by the callers, which cut differently (chips keep their grid).
func (t *Task) area(ctx context.Context, env *tasks.Env) (orb.Bound, error) {
	if b := t.cfg.BBox; b != nil {
		return orb.Bound{Min: orb.Point{b[0], b[1]}, Max: orb.Point{b[2], b[3]}}, nil
	}
	b, found, err := env.Records.TaskExtent(ctx, env.Flow, t.cfg.BBoxFrom)
	if err != nil {
		return orb.Bound{}, fmt.Errorf("bbox_from %q: %w", t.cfg.BBoxFrom, err)
	}
	if !found {
		return orb.Bound{}, fmt.Errorf("bbox_from: task %q of flow %q has no finished run that stored anything "+
			"(is it a task of this flow? list it in depends_on: [%s] so that it runs first)", t.cfg.BBoxFrom, env.Flow, t.cfg.BBoxFrom)
	}
	return b, nil
}

// Plan implements tasks.Task.
func (t *Task) Plan(ctx context.Context, env *tasks.Env) ([]store.Unit, error) {
	if err := t.ensure(ctx, env); err != nil {
		return nil, err
	}
	a, err := t.area(ctx, env)
	if err != nil {
		return nil, err
	}
	if env.Area != nil && !a.Intersects(*env.Area) {
		return nil, &tasks.OutsideArea{Area: a}
	}
	if t.cfg.WMS != nil {
		return t.planWMS(ctx, env, a)
	}
	return t.planSTAC(ctx, env, a)
}

// Execute implements tasks.Task.
func (t *Task) Execute(ctx context.Context, env *tasks.Env, u store.Unit) (*tasks.Output, error) {
	if err := t.ensure(ctx, env); err != nil {
		return nil, err
	}
	switch {
	case strings.HasPrefix(u.Key, chipPrefix) && t.cfg.WMS != nil:
		return t.executeChip(ctx, env, u)
	case strings.HasPrefix(u.Key, pagePrefix) && t.cfg.STAC != nil:
		return t.executePage(ctx, env, u)
	case strings.HasPrefix(u.Key, itemPrefix) && t.cfg.STAC != nil:
		return t.executeAsset(ctx, env, u)
	}
	return nil, retry.Permanent(dlq.ClassInvalid, fmt.Errorf("unit %q is not a unit of this task", u.Key))
}

// fileOutput is the output of a unit that fetched one file: its row, once place has put
// the file (and any sidecar) in its final path, atomically, before the row commits (a
// crash between leaves a file without a row, which the next run does not trust and
// overwrites). When the stored row already has this content and the file is intact,
// nothing is rewritten and the unit counts as skipped.
func (t *Task) fileOutput(row store.AssetRow, stored *store.StoredFile, place func() error) (*tasks.Output, error) {
	out := &tasks.Output{AssetTable: t.table, Assets: []store.AssetRow{row}, Counts: store.Counts{Bytes: row.Bytes}}
	switch {
	case stored != nil && bytes.Equal(stored.Hash, row.Hash) && stored.Path == row.Path && files.FileHas(stored.Path, stored.Bytes, stored.Hash):
		out.Counts.Skipped = 1
		return out, nil
	case stored == nil:
		out.Counts.Inserted = 1
	default:
		out.Counts.Updated = 1
	}
	if err := place(); err != nil {
		return nil, store.DiskFault("writing "+row.Path, err)
	}
	return out, nil
}

// skipped is the output of a unit whose file is unchanged (a 304).
func skipped() *tasks.Output {
	return &tasks.Output{Counts: store.Counts{Skipped: 1}}
}

// request builds a retry.Request for a GET of u with the task's headers.
func (t *Task) request(env *tasks.Env, unit, u string, accept []int, conditional func(*http.Request)) retry.Request {
	return retry.Request{
		Unit: env.TaskID + "/" + unit, Policy: env.Retry, RateLimit: env.RateLimit, Redirects: env.Redirects, AcceptStatus: accept,
		New: func(ctx context.Context) (*http.Request, error) {
			r, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				return nil, err
			}
			t.headers(r)
			if conditional != nil {
				conditional(r)
			}
			return r, nil
		},
	}
}

// headers sets the task's configured headers on r when r goes to the origin they were
// configured for (the WMS's or the STAC API's): a STAC catalogue names asset hrefs and
// next pages on any host, and a key for the catalogue is not theirs to see.
func (t *Task) headers(r *http.Request) {
	if t.origin != nil && retry.SameOrigin(t.origin, r.URL) {
		for k, v := range t.cfg.Headers {
			r.Header.Set(k, v)
		}
	}
	if r.Header.Get("User-Agent") == "" {
		r.Header.Set("User-Agent", "geoflow")
	}
}

var errNotConditional = errors.New("304 Not Modified to a request that was not conditional")

func boundPolygon(b orb.Bound) orb.Polygon {
	return orb.Polygon{orb.Ring{b.Min, {b.Max[0], b.Min[1]}, b.Max, {b.Min[0], b.Max[1]}, b.Min}}
}

func intersect(a, b orb.Bound) orb.Bound {
	return orb.Bound{
		Min: orb.Point{math.Max(a.Min[0], b.Min[0]), math.Max(a.Min[1], b.Min[1])},
		Max: orb.Point{math.Min(a.Max[0], b.Max[0]), math.Min(a.Max[1], b.Max[1])},
	}
}

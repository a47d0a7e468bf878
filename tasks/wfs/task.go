package wfs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/project"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/gml"
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
	table     *tasks.FeatureTable
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
}

// fill is the share of a page a tile is cut to hold, leaving room for uneven density so
// that tiles estimated from their parent's count can be fetched without counting first.
const fill = 0.7

// Plan implements tasks.Task: one root tile over the area; tiles split as they learn
// how many features they hold.
func (t *Task) Plan(ctx context.Context, env *tasks.Env) ([]tasks.Unit, error) {
	p, err := t.prepare(ctx, env)
	if err != nil {
		return nil, err
	}
	area := p.area
	if env.Area != nil {
		if !area.Intersects(*env.Area) {
			env.Logger.Info("the run's --bbox does not touch this task's bbox: nothing to do")
			return nil, nil
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
	return []tasks.Unit{{Key: "q", BBox: &area, Spec: sp}}, nil
}

// Execute implements tasks.Task.
func (t *Task) Execute(ctx context.Context, env *tasks.Env, u tasks.Unit) (tasks.Result, error) {
	p, err := t.prepare(ctx, env)
	if err != nil {
		return tasks.Result{}, err
	}
	if u.BBox == nil {
		return tasks.Result{}, fmt.Errorf("unit %s has no bbox", u.Key)
	}
	var sp spec
	if len(u.Spec) > 0 {
		if err := json.Unmarshal(u.Spec, &sp); err != nil {
			return tasks.Result{}, fmt.Errorf("unit %s: bad spec %s: %w", u.Key, u.Spec, err)
		}
	}
	bbox := *u.BBox
	ps := t.pageSize.Load()
	if sp.Page {
		return t.fetch(ctx, env, p, u, bbox, sp.Start, cmp.Or(sp.Size, ps), -1, false, &sp)
	}
	// How many features does the tile hold? Known exactly (the plan counted the root),
	// estimated from the parent's count (small enough: fetch at once, a full page says
	// otherwise), or asked of the server with RESULTTYPE=hits.
	n := int64(-1)
	optimistic := false
	switch {
	case sp.Exact:
		n = sp.Count
	case sp.Count > 0 && float64(sp.Count) <= fill*float64(ps) && p.version == "2.0.0" && t.estimatesHold():
		// Only WFS 2.0 says reliably in the response how many features matched, which is
		// what tells an overfull tile fetched without counting.
		optimistic = true
	case p.caps.Hits:
		if n, err = t.hits(ctx, env, p, u.Key, bbox); err != nil {
			return tasks.Result{}, err
		}
	}
	switch {
	case n == 0:
		return t.commitEmpty(ctx, env, u, nil)
	case n > ps:
		return t.split(ctx, env, p, u, sp, bbox, n)
	}
	res, err := t.fetch(ctx, env, p, u, bbox, 0, ps, n, true, nil)
	var short *shortPage
	isShort := errors.As(err, &short)
	if optimistic {
		t.optimistic.Add(1)
		if isShort {
			t.overflows.Add(1)
		}
	}
	if !isShort {
		return res, err
	}
	if short.got > 0 && short.got < ps {
		// The server caps pages below what it advertised: learn its real page size.
		if t.pageSize.CompareAndSwap(ps, short.got) {
			env.Logger.Warn("server returns fewer features per page than advertised; using its real page size",
				"advertised", ps, "actual", short.got)
		}
	}
	n = max(n, short.matched)
	if n < 0 && p.caps.Hits {
		if n, err = t.hits(ctx, env, p, u.Key, bbox); err != nil {
			return tasks.Result{}, err
		}
	}
	return t.split(ctx, env, p, u, sp, bbox, n)
}

// estimatesHold tells whether fetching tiles on their estimated count still pays: every
// overflow wastes a page, so once more than one in eight overflows (the data is uneven)
// tiles are counted first again.
func (t *Task) estimatesHold() bool {
	n := t.optimistic.Load()
	return n < 8 || 8*t.overflows.Load() <= n
}

// split commits the unit with a grid of smaller tiles as children, or, where the tile
// cannot be split further (all features on one spot), with sorted pages. With a count n,
// the grid is cut at once to tiles of about fill pages each (k x k, k up to 16), instead
// of halving again and again, and each child carries its share of n as an estimate;
// without one (-1), the tile is quartered and its children count themselves.
func (t *Task) split(ctx context.Context, env *tasks.Env, p *prepared, u tasks.Unit, sp spec, bbox orb.Bound, n int64) (tasks.Result, error) {
	ps := t.pageSize.Load()
	k := 2
	if n > 0 {
		k = min(16, max(2, int(math.Ceil(math.Sqrt(float64(n)/(fill*float64(ps)))))))
	}
	w, h := (bbox.Max[0]-bbox.Min[0])/float64(k), (bbox.Max[1]-bbox.Min[1])/float64(k)
	var children []tasks.Unit
	if sp.Depth < maxDepth && w > minTileDeg && h > minTileDeg {
		var est int64
		if n > 0 {
			est = max(1, (n+int64(k*k)-1)/int64(k*k))
		}
		for i := range k {
			for j := range k {
				b := orb.Bound{
					Min: orb.Point{bbox.Min[0] + float64(i)*w, bbox.Min[1] + float64(j)*h},
					Max: orb.Point{bbox.Min[0] + float64(i+1)*w, bbox.Min[1] + float64(j+1)*h},
				}
				if i == k-1 {
					b.Max[0] = bbox.Max[0] // no gap from rounding at the far edges
				}
				if j == k-1 {
					b.Max[1] = bbox.Max[1]
				}
				cs, _ := json.Marshal(spec{Depth: sp.Depth + 1, Count: est})
				children = append(children, tasks.Unit{Key: fmt.Sprintf("%s.%d.%d", u.Key, i, j), BBox: &b, Spec: cs})
			}
		}
	} else {
		if n < 0 {
			return tasks.Result{}, fmt.Errorf("tile %s cannot be split further and the server cannot count it", u.Key)
		}
		if !p.caps.ImplementsSorting && t.warnedOrd.CompareAndSwap(false, true) {
			env.Logger.Warn("paging a tile that cannot be split, on a server without sorting: pages may overlap or miss features", "unit", u.Key)
		}
		for start := int64(0); start < n; start += ps {
			b := bbox
			cs, _ := json.Marshal(spec{Depth: sp.Depth, Page: true, Start: start, Size: ps, Total: n})
			children = append(children, tasks.Unit{Key: fmt.Sprintf("%s/p%d", u.Key, start), BBox: &b, Spec: cs})
		}
	}
	return t.commitEmpty(ctx, env, u, children)
}

func (t *Task) commitEmpty(ctx context.Context, env *tasks.Env, u tasks.Unit, children []tasks.Unit) (tasks.Result, error) {
	res, err := env.Store.CommitUnit(ctx, ref(env, u), func(context.Context, tasks.Tx) (tasks.Result, error) {
		return tasks.Result{Children: children}, nil
	})
	if err != nil {
		return res, retry.Permanent(dlq.ClassDatabase, err)
	}
	return res, nil
}

func ref(env *tasks.Env, u tasks.Unit) tasks.UnitRef {
	return tasks.UnitRef{RunID: env.RunID, TaskID: env.TaskID, Key: u.Key}
}

// shortPage says a response held fewer features than the server matched: the tile must
// be split or paged instead. It rolls the unit's transaction back.
type shortPage struct{ got, matched int64 }

func (e *shortPage) Error() string {
	return fmt.Sprintf("the server returned %d of %d features", e.got, e.matched)
}

// fetch downloads one page of a tile and writes it in the unit's transaction. expected
// is the tile's hits count, or -1. With mayShort, a response holding less than the
// tile's features fails with *shortPage so that Execute splits the tile instead. page is
// the spec of a page unit (nil for a tile): a page that comes back short while its tile
// has more plans the rest as another page, in the same commit.
func (t *Task) fetch(ctx context.Context, env *tasks.Env, p *prepared, u tasks.Unit, bbox orb.Bound, start, count, expected int64, mayShort bool, page *spec) (tasks.Result, error) {
	q := t.getFeature(p, bbox, start, count, false, !mayShort)
	var res tasks.Result
	err := env.HTTP.Do(ctx, t.request(env, p, u.Key, q), func(resp *http.Response) error {
		if err := checkContentType(resp); err != nil {
			return err
		}
		body := &countingReader{r: resp.Body}
		src := t.source(env, p, u.Key, body, bbox)
		if mayShort && p.version == "2.0.0" {
			src.limit = count
		}
		var err error
		res, err = env.Store.CommitUnit(ctx, ref(env, u), func(ctx context.Context, tx tasks.Tx) (tasks.Result, error) {
			r, err := tx.WriteFeatures(ctx, p.table, src)
			if err != nil {
				return r, err
			}
			// Features the decoder refused (curves) were in the response: they count
			// as received, or one refusal would make the tile look short forever.
			got := r.Inserted + r.Skipped + r.Updated + int64(src.refused)
			meta := src.meta()
			matched := meta.NumberMatched
			if p.version != "2.0.0" && matched <= got {
				// 1.x numberOfFeatures may count what this response holds, not what
				// matched: only a larger number proves the page short.
				matched = -1
			}
			if expected >= 0 && start == 0 && got < expected {
				matched = max(matched, expected)
			}
			// A full page that is not the whole tile: the tile needs splitting.
			if mayShort && (matched > got || (matched < 0 && expected < 0 && got >= count)) {
				return r, &shortPage{got: got, matched: matched}
			}
			if page != nil && got > 0 && got < count && start+got < page.Total {
				// The server capped this page below its planned size: the rest of the
				// page is another page, or those features would never be asked for.
				rest, _ := json.Marshal(spec{Depth: page.Depth, Page: true, Start: start + got, Size: count - got, Total: page.Total})
				tile, _, _ := strings.Cut(u.Key, "/p")
				b := bbox
				r.Children = []tasks.Unit{{Key: fmt.Sprintf("%s/p%d", tile, start+got), BBox: &b, Spec: rest}}
				env.Logger.Warn("page came back short; asking for the rest", "unit", u.Key, "got", got, "size", count)
			}
			r.Bytes = body.n
			return r, nil
		})
		if err != nil {
			var short *shortPage
			if src.err != nil && !errors.As(err, &short) && !errors.Is(err, io.ErrUnexpectedEOF) && cutOff(resp.Body) {
				// A decode error followed by a broken connection is a body cut off
				// mid-stream, whatever bytes came before the cut.
				return retry.Transient(dlq.ClassTruncated, fmt.Errorf("body cut off mid-stream after %d bytes: %w", body.n, err))
			}
			return classify(err, src)
		}
		return nil
	})
	return res, err
}

// cutOff drains what is left of a body after a decode error and tells whether the
// connection then broke instead of ending cleanly.
func cutOff(body io.Reader) bool {
	_, err := io.Copy(io.Discard, io.LimitReader(body, 4<<20))
	return err != nil
}

// classify marks an error from writing a response for the retry handler.
func classify(err error, src *featureSource) error {
	var sp *shortPage
	var ex *spatial.ExceptionReport
	var nf *spatial.NotFeaturesError
	var pe *tasks.PropertyError
	switch {
	case errors.As(err, &sp):
		return retry.Permanent(dlq.ClassParse, err) // not a failure: Execute splits
	case errors.Is(err, io.ErrUnexpectedEOF):
		return retry.Transient(dlq.ClassTruncated, err)
	case errors.As(err, &ex):
		if transientException(ex) {
			return retry.Transient(dlq.ClassExceptionReport, err)
		}
		return retry.Permanent(dlq.ClassExceptionReport, err)
	case errors.As(err, &nf):
		if nf.Kind == "html" {
			// A proxy's error page answered with 200: the server behind it may recover.
			return retry.Transient(dlq.ClassParse, fmt.Errorf("the server answered an HTML page instead of features: %w", err))
		}
		return retry.Permanent(dlq.ClassParse, err)
	case errors.As(err, &pe):
		return retry.Permanent(dlq.ClassParse, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case src != nil && src.err != nil:
		return retry.Permanent(dlq.ClassParse, err)
	}
	var tmp interface{ Temporary() bool }
	if errors.As(err, &tmp) && tmp.Temporary() {
		// A deadlock or a dropped connection: the whole unit is worth another attempt.
		return retry.Transient(dlq.ClassDatabase, err)
	}
	return retry.Permanent(dlq.ClassDatabase, err)
}

// transientException tells server-side hiccups (a timeout inside the server) from
// requests that can never succeed.
func transientException(ex *spatial.ExceptionReport) bool {
	switch ex.Code {
	case "InvalidParameterValue", "MissingParameterValue", "OperationNotSupported", "OptionNotSupported",
		"VersionNegotiationFailed", "InvalidUpdateSequence", "OperationParsingFailed", "InvalidFormat", "NotFound":
		return false
	}
	low := strings.ToLower(ex.Text)
	return strings.Contains(low, "timeout") || strings.Contains(low, "timed out") ||
		strings.Contains(low, "too many") || strings.Contains(low, "temporar") || strings.Contains(low, "unavailable") ||
		strings.Contains(low, "connection")
}

func checkContentType(resp *http.Response) error {
	ct := strings.ToLower(resp.Header.Get("Content-Type"))
	if strings.HasPrefix(ct, "text/html") {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return retry.Transient(dlq.ClassParse, &spatial.NotFeaturesError{Kind: "html", Snippet: spatial.Snippet(b, 200)})
	}
	return nil
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
				return classify(err, nil)
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
	counter, ok := env.Store.(tasks.FeatureCounter)
	if want < 0 || !ok {
		return nil
	}
	area := p.area
	if env.Area != nil {
		area = intersect(area, *env.Area)
	}
	got, err := counter.CountFeatures(ctx, p.table, area)
	if err != nil {
		return err
	}
	if got < want {
		return fmt.Errorf("INCOMPLETE: the server matched %d features in %s but %d distinct features are stored there (%d missing)",
			want, fmtBound(area), got, want-got)
	}
	env.Logger.Info("complete: every feature the server matched is stored", "number_matched", want, "stored_distinct", got)
	return nil
}

package harvest

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

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// Execute runs one unit: a tile is counted (or its count estimated), then either
// fetched in one response or split into smaller tiles; a page unit is fetched as planned.
func (e *Engine) Execute(ctx context.Context, env *tasks.Env, u store.Unit) (*tasks.Output, error) {
	var err error
	if u.BBox == nil {
		return nil, retry.Permanent(dlq.ClassInvalid, fmt.Errorf("unit %s has no bbox", u.Key))
	}
	var sp spec
	if len(u.Spec) > 0 {
		if err := json.Unmarshal(u.Spec, &sp); err != nil {
			return nil, retry.Permanent(dlq.ClassInvalid, fmt.Errorf("unit %s: bad spec %s: %w", u.Key, u.Spec, err))
		}
	}
	bbox := *u.BBox
	if l, ok := e.cfg.Protocol.(Lister); ok {
		if len(sp.IDs) > 0 {
			return e.fetchIDs(ctx, env, u, sp, bbox)
		}
		return e.list(ctx, env, l, u, sp, bbox)
	}
	ps := e.pageSize.Load()
	switch {
	case sp.Page:
		out, _, err := e.fetch(ctx, env, u, sp, bbox, sp.Start, cmp.Or(sp.Size, ps), -1, false)
		return out, err
	case sp.Split:
		n := cmp.Or(sp.Count, -1)
		if n < 0 && e.cfg.Caps.Counts {
			if n, err = e.cfg.Protocol.Count(ctx, env, u.Key, bbox); err != nil {
				return nil, err
			}
		}
		return e.split(env, u, sp, bbox, n)
	}
	n, optimistic, err := e.tileCount(ctx, env, u.Key, &sp, bbox, ps)
	if err != nil {
		return nil, err
	}
	switch {
	case n == 0:
		return &tasks.Output{}, nil
	case n > ps:
		return e.split(env, u, sp, bbox, n)
	}
	expected := n
	if optimistic {
		e.optimistic.Add(1)
		expected = -1 // an estimate, not the server's count
	}
	out, overfull, err := e.fetch(ctx, env, u, sp, bbox, 0, ps, expected, true)
	if err != nil || overfull < 0 {
		return out, err
	}
	// The response said at once that the tile holds more than a page: split it now.
	if optimistic {
		e.overflows.Add(1)
	}
	return e.split(env, u, sp, bbox, max(n, overfull))
}

// countSource is where a tile's count comes from before the tile is fetched.
type countSource int

const (
	// countUnknown: the tile cannot be counted; it is fetched, and a full page says
	// there is more.
	countUnknown countSource = iota
	// countExact: the plan counted the tile (the root).
	countExact
	// countEstimate: the tile's share of its parent's count, small enough to fetch the
	// tile at once without counting it; an overfull response says otherwise.
	countEstimate
	// countAsked: the server is asked (RESULTTYPE=hits, returnCountOnly...).
	countAsked
)

// countFrom decides where a tile's count comes from. An estimate is fetched on only
// where a response says reliably how many features matched (WFS 2.0, OGC API -
// Features), which is what tells an overfull tile fetched without counting, and only
// while estimates hold (estimatesHold).
func countFrom(sp spec, ps int64, caps Caps, estimatesHold bool) countSource {
	switch {
	case sp.Exact:
		return countExact
	case sp.Count > 0 && float64(sp.Count) <= fill*float64(ps) && caps.MatchedInResponse && estimatesHold:
		return countEstimate
	case caps.Counts:
		return countAsked
	}
	return countUnknown
}

// tileCount learns how many features a tile holds before it is fetched, as countFrom
// decides: n is -1 when unknown, and optimistic when the tile is fetched on an estimate.
// A box cannot hold more features than the box it was cut from: a count above its
// container's is proven wrong, and no reason to split on; the tile is then marked
// Disowned and its container's count stands.
func (e *Engine) tileCount(ctx context.Context, env *tasks.Env, key string, sp *spec, bbox orb.Bound, ps int64) (n int64, optimistic bool, err error) {
	switch countFrom(*sp, ps, e.cfg.Caps, e.estimatesHold()) {
	case countExact:
		return sp.Count, false, nil
	case countEstimate:
		return -1, true, nil
	case countAsked:
		if n, err = e.cfg.Protocol.Count(ctx, env, key, bbox); err != nil {
			return -1, false, err
		}
		if sp.Up > 0 && n > sp.Up {
			sp.Disowned = true
			env.Logger.Warn("the server counts more features in a tile than in the tile containing it: its counts are not evidence here",
				"unit", key, "counted", n, "container_counted", sp.Up)
			n = sp.Up
		}
		return n, false, nil
	}
	return -1, false, nil
}

// learnPage takes in a page size the server showed it caps its pages at: smaller tiles
// and pages from now on.
func (e *Engine) learnPage(env *tasks.Env, ps, capped int64) {
	if capped > 0 && capped < ps && e.pageSize.CompareAndSwap(ps, capped) {
		env.Logger.Warn("server returns fewer features per page than advertised; using its real page size",
			"advertised", ps, "actual", capped)
	}
}

// estimatesHold tells whether fetching tiles on their estimated count still pays: every
// overflow wastes a page, so once more than one in eight overflows (the data is uneven)
// tiles are counted first again.
func (e *Engine) estimatesHold() bool {
	n := e.optimistic.Load()
	return n < 8 || 8*e.overflows.Load() <= n
}

// split plans a grid of smaller tiles as the unit's children or, where the tile cannot
// be split further (all features on one spot), sorted pages. With a count n, the grid is
// cut at once to tiles of about fill pages each (k x k, k up to 16), instead of halving
// again and again, and each child carries its share of n as an estimate; without one
// (-1), the tile is quartered and its children count themselves. Every unit planned is
// drawn from the task's budget (limits.max_units), never from the server's count.
func (e *Engine) split(env *tasks.Env, u store.Unit, sp spec, bbox orb.Bound, n int64) (*tasks.Output, error) {
	ps := e.pageSize.Load()
	k := 2
	if n > 0 {
		k = min(16, max(2, int(math.Ceil(math.Sqrt(float64(n)/(fill*float64(ps)))))))
	}
	w, h := (bbox.Max[0]-bbox.Min[0])/float64(k), (bbox.Max[1]-bbox.Min[1])/float64(k)
	var children []store.Unit
	if sp.Depth < e.cfg.Budget.Depth && w > minTileDeg && h > minTileDeg {
		if err := e.plan(int64(k*k), u.Key); err != nil {
			return nil, err
		}
		var est int64
		if n > 0 {
			est = max(1, (n+int64(k*k)-1)/int64(k*k))
		}
		up := n
		if sp.Disowned {
			up = 0 // a count proven wrong bounds nothing
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
				cs, _ := json.Marshal(spec{Depth: sp.Depth + 1, Count: est, Up: max(up, 0), Print: sp.Print})
				children = append(children, store.Unit{Key: fmt.Sprintf("%s.%d.%d", u.Key, i, j), BBox: &b, Spec: cs})
			}
		}
		return &tasks.Output{Children: children}, nil
	}
	if n < 0 {
		return nil, &tasks.IncompleteError{Where: u.Key, Missing: -1,
			Reason: "the tile cannot be split further, holds more than one response, and the server cannot count it"}
	}
	if !e.cfg.Caps.Pages {
		return nil, &tasks.IncompleteError{Where: u.Key, Missing: max(n-ps, 0),
			Reason: fmt.Sprintf("the tile cannot be split further and holds %d features, more than one response (%d), and this server cannot be asked for the rest of a response", n, ps)}
	}
	pages := (n + ps - 1) / ps
	if limit := e.cfg.Budget.PagesPerTile; pages > limit {
		return nil, &tasks.BudgetError{Key: "limits.max_pages_per_tile", Limit: limit,
			What: fmt.Sprintf("the server counts %d features in tile %s, which cannot be split further: %d pages of %d", n, u.Key, pages, ps)}
	}
	if err := e.plan(pages, u.Key); err != nil {
		return nil, err
	}
	if !e.cfg.Caps.Sorts && e.warnedOrd.CompareAndSwap(false, true) {
		env.Logger.Warn("paging a tile that cannot be split, on a server without sorting: pages may overlap or miss features", "unit", u.Key)
	}
	for start := int64(0); start < n; start += ps {
		b := bbox
		cs, _ := json.Marshal(spec{Depth: sp.Depth, Page: true, Start: start, Size: ps, Total: n, Disowned: sp.Disowned})
		children = append(children, store.Unit{Key: fmt.Sprintf("%s/p%d", u.Key, start), BBox: &b, Spec: cs})
	}
	return &tasks.Output{Children: children}, nil
}

// plan draws n units from the task's budget, or says which limit they would cross.
func (e *Engine) plan(n int64, unit string) error {
	limit := e.cfg.Budget.Units
	if total := e.planned.Add(n); total > limit {
		e.planned.Add(-n)
		return &tasks.BudgetError{Key: "limits.max_units", Limit: limit,
			What: fmt.Sprintf("tile %s would plan %d more units, %d in all for this task", unit, n, total)}
	}
	return nil
}

// fetch downloads one page of a tile into a spool and returns it as the unit's output,
// with the ledger the runner judges it by once written (tasks.Decide). expected is the
// tile's count, or -1. With mayShort (a tile, not a page) a response whose head says the
// tile holds more than one response is abandoned before the rest is downloaded: fetch
// then returns no output and the count the response gave (overfull), for Execute to
// split on; otherwise overfull is -1.
func (e *Engine) fetch(ctx context.Context, env *tasks.Env, u store.Unit, sp spec, bbox orb.Bound,
	start, count, expected int64, mayShort bool) (out *tasks.Output, overfull int64, err error) {
	// Pages are sorted where the server sorts, so that they neither overlap nor leave
	// gaps; a probe for the rest of a tile asks in the order the tile was fetched in.
	q := Query{Box: bbox, Start: start, Count: count, Sorted: !mayShort && !sp.Probe}
	ev := tasks.Evidence{Kind: tasks.AskTile, Start: start, Size: count, Total: sp.Total,
		Counted: expected, CountsInResponse: e.cfg.Caps.MatchedInResponse, Pages: e.cfg.Caps.Pages,
		CountDisowned: sp.Disowned, NextTrusted: e.nextTrusted(u.Key), Estimated: mayShort && expected < 0 && sp.Count > 0 && !sp.Exact}
	switch {
	case sp.Probe:
		ev.Kind = tasks.AskProbe
	case !mayShort:
		ev.Kind = tasks.AskPage
	}
	if !e.cfg.Geographic {
		// Without lon/lat coordinates to hold against the box, a response that repeats
		// its parent's is what shows a server ignoring the box.
		ev.ParentPrint = sp.Print
	}
	var body *tasks.Spool
	overfull = -1
	err = env.HTTP.Do(ctx, e.cfg.Protocol.Request(env, u.Key, q), func(resp *http.Response) error {
		body.Close() // an earlier attempt's
		body, overfull = env.NewSpool(), -1
		if err := e.cfg.Protocol.CheckResponse(resp); err != nil {
			return err
		}
		// The head of the response is decoded as it arrives: an exception report, an
		// HTML page or (for a tile) a numberMatched above the page shows before the rest
		// is downloaded. The rest is spooled as it is.
		head := e.source(env, u.Key, body.Tee(resp.Body), bbox)
		if _, err := head.Next(); err != nil && err != io.EOF {
			if _, sink := store.AsFault(err); sink {
				return err // the spool's disk, not the server
			}
			if !errors.Is(err, io.ErrUnexpectedEOF) && cutOff(resp.Body) {
				// A decode error followed by a broken connection is a body cut off
				// mid-stream, whatever bytes came before the cut.
				return retry.Transient(dlq.ClassTruncated, fmt.Errorf("body cut off mid-stream: %w", err))
			}
			return e.cfg.Protocol.Classify(err)
		}
		if m := head.dec.Meta().NumberMatched; mayShort && e.cfg.Caps.MatchedInResponse && m > count {
			hv := ev
			hv.Matched = m
			if tasks.Decide(hv).Kind == tasks.Split {
				overfull = m
				return nil // the rest of the body is not worth downloading
			}
		}
		_, err := body.ReadFrom(resp.Body)
		return err // a cut-off body is classed truncated by the handler, a full disk as a sink fault
	})
	if err != nil || overfull >= 0 {
		body.Close()
		return nil, overfull, err
	}
	return &tasks.Output{
		Table:    e.cfg.Table,
		Counts:   store.Counts{Bytes: body.Len()},
		Response: &tasks.Response{Body: body, Decoding: decoding{e: e, env: env, unit: u.Key, bbox: bbox}, Evidence: ev},
	}, -1, nil
}

// decoding opens a spooled response of the engine's for the sink.
type decoding struct {
	e     *Engine
	env   *tasks.Env
	unit  string
	bbox  orb.Bound
	asked []string // a batch's ids
}

// Open implements tasks.Decoding.
func (d decoding) Open(body io.Reader) tasks.Stream {
	s := d.e.source(d.env, d.unit, body, d.bbox)
	if r, ok := s.dec.(spatial.FeatureReuser); ok {
		// The sink is a store's WriteFeatures, done with each feature before the next.
		r.ReuseFeatures()
	}
	if len(d.asked) > 0 {
		s.asked = make(map[string]bool, len(d.asked))
		for _, id := range d.asked {
			s.asked[id] = false
		}
	}
	return d.e.cfg.Transform.Stream(s, d.bbox, d.e.area(d.env))
}

// Follow implements tasks.Follower for the tasks on the engine: a split executes the tile
// again as a split (with what its response showed: its count, its fingerprint), and the
// rest of a short tile or page is another page. It learns the page size a server caps at.
func (e *Engine) Follow(env *tasks.Env, u store.Unit, ev tasks.Evidence, v tasks.Verdict) (json.RawMessage, []store.Unit) {
	var sp spec
	_ = json.Unmarshal(u.Spec, &sp) // Execute read it already
	if v.CappedAt > 0 && (ev.Kind != tasks.AskTile || e.takeNext(u.Key)) {
		e.learnPage(env, e.pageSize.Load(), v.CappedAt)
	}
	switch {
	case v.Kind == tasks.PageOn && ev.Kind == tasks.AskBatch:
		e.planned.Add(1)
		rest, _ := json.Marshal(spec{Depth: sp.Depth, IDs: ev.Unanswered})
		b := *u.BBox
		// The rest's key extends the batch's, so it can never be the batch's own.
		return nil, []store.Unit{{Key: fmt.Sprintf("%s/r%s", u.Key, ev.Unanswered[0]), BBox: &b, Spec: rest}}
	case v.Kind == tasks.Split:
		if ev.Estimated {
			// Fetched on an estimate, it held more than a page: another overflow, which
			// tells whether estimates still pay (estimatesHold).
			e.overflows.Add(1)
		}
		redo, _ := json.Marshal(spec{Depth: sp.Depth, Split: true, Count: v.Count, Up: sp.Up, Disowned: sp.Disowned, Print: ev.Print})
		return redo, nil
	case v.Kind == tasks.PageOn:
		total := sp.Total
		if ev.Kind == tasks.AskTile {
			total = max(ev.Matched, ev.Counted)
		}
		e.planned.Add(1)
		rest, _ := json.Marshal(spec{Depth: sp.Depth, Page: true, Start: v.Start, Size: v.Size, Total: total,
			Probe: ev.Kind != tasks.AskPage, Disowned: sp.Disowned})
		tile, _, _ := strings.Cut(u.Key, "/p")
		b := *u.BBox
		return nil, []store.Unit{{Key: fmt.Sprintf("%s/p%d", tile, v.Start), BBox: &b, Spec: rest}}
	}
	return nil, nil
}

// cutOff drains what is left of a body after a decode error and tells whether the
// connection then broke instead of ending cleanly.
func cutOff(body io.Reader) bool {
	_, err := io.Copy(io.Discard, io.LimitReader(body, 4<<20))
	return err != nil
}

// nextTrusted tells whether a short response of unit key with a next link and no count is
// taken as a page the server caps: only for one unit per task, since some servers write a
// next link on every last page, and taking each would split and shrink the page without
// end.
func (e *Engine) nextTrusted(key string) bool {
	e.nextMu.Lock()
	defer e.nextMu.Unlock()
	return e.nextUnit == "" || e.nextUnit == key
}

// takeNext makes unit key the one whose short page with a next link was taken as a capped
// page; it tells whether it is (the first to ask, or the same unit judged again).
func (e *Engine) takeNext(key string) bool {
	e.nextMu.Lock()
	defer e.nextMu.Unlock()
	if e.nextUnit == "" {
		e.nextUnit = key
	}
	return e.nextUnit == key
}

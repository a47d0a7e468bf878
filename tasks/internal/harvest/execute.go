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
	ps := e.pageSize.Load()
	switch {
	case sp.Page:
		return e.fetch(ctx, env, u, sp, bbox, sp.Start, cmp.Or(sp.Size, ps), -1, false)
	case sp.Split:
		n := cmp.Or(sp.Count, -1)
		if n < 0 && e.cfg.Caps.Counts {
			if n, err = e.cfg.Protocol.Count(ctx, env, u.Key, bbox); err != nil {
				return nil, err
			}
		}
		return e.split(env, u, sp, bbox, n)
	}
	// How many features does the tile hold? Known exactly (the plan counted the root),
	// estimated from the parent's count (small enough: fetch at once, a full page says
	// otherwise), or asked of the server with RESULTTYPE=hits.
	n := int64(-1)
	optimistic := false
	switch {
	case sp.Exact:
		n = sp.Count
	case sp.Count > 0 && float64(sp.Count) <= fill*float64(ps) && e.cfg.Caps.MatchedInResponse && e.estimatesHold():
		// Only WFS 2.0 says reliably in the response how many features matched, which is
		// what tells an overfull tile fetched without counting.
		optimistic = true
	case e.cfg.Caps.Counts:
		if n, err = e.cfg.Protocol.Count(ctx, env, u.Key, bbox); err != nil {
			return nil, err
		}
	}
	switch {
	case n == 0:
		return &tasks.Output{}, nil
	case n > ps:
		return e.split(env, u, sp, bbox, n)
	}
	if optimistic {
		e.optimistic.Add(1)
	}
	out, err := e.fetch(ctx, env, u, sp, bbox, 0, ps, n, true)
	var short *shortPage
	if !errors.As(err, &short) {
		return out, err
	}
	// The response said at once that the tile holds more than a page: split it now.
	return e.split(env, u, sp, bbox, e.learn(env, short, ps, n))
}

// learn takes in a response that held less than its tile: an estimate that was wrong
// (counted, so estimates stop when the data is uneven), or a server that caps pages below
// what it advertised, whose real page size is then used. It returns the tile's count as
// best known, -1 when unknown.
func (e *Engine) learn(env *tasks.Env, short *shortPage, ps, n int64) int64 {
	if short.optimistic {
		e.overflows.Add(1)
	}
	if short.got > 0 && short.got < ps {
		if e.pageSize.CompareAndSwap(ps, short.got) {
			env.Logger.Warn("server returns fewer features per page than advertised; using its real page size",
				"advertised", ps, "actual", short.got)
		}
	}
	return max(n, short.matched)
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
// (-1), the tile is quartered and its children count themselves.
func (e *Engine) split(env *tasks.Env, u store.Unit, sp spec, bbox orb.Bound, n int64) (*tasks.Output, error) {
	ps := e.pageSize.Load()
	k := 2
	if n > 0 {
		k = min(16, max(2, int(math.Ceil(math.Sqrt(float64(n)/(fill*float64(ps)))))))
	}
	w, h := (bbox.Max[0]-bbox.Min[0])/float64(k), (bbox.Max[1]-bbox.Min[1])/float64(k)
	var children []store.Unit
	if sp.Depth < maxDepth && w > minTileDeg && h > minTileDeg && e.maySplit(env, u.Key, k*k, n) {
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
				children = append(children, store.Unit{Key: fmt.Sprintf("%s.%d.%d", u.Key, i, j), BBox: &b, Spec: cs})
			}
		}
		return &tasks.Output{Children: children}, nil
	}
	if n < 0 {
		return nil, retry.Permanent(dlq.ClassParse, fmt.Errorf("tile %s cannot be split further and the server cannot count it", u.Key))
	}
	if !e.cfg.Caps.Pages {
		return nil, retry.Permanent(dlq.ClassParse, fmt.Errorf("tile %s cannot be split further and holds %d features, more than one response (%d), and this server cannot be asked for the rest of a response", u.Key, n, ps))
	}
	pages := (n + ps - 1) / ps
	if budget := e.cfg.SplitBudget(e.expected.Load(), ps); e.splitTiles.Add(pages) > budget {
		// A count no real tile has (a server counting wrong by orders of magnitude):
		// paging it would ask without end, as splitting would have.
		e.splitTiles.Add(-pages)
		return nil, retry.Permanent(dlq.ClassParse, fmt.Errorf("the server counts %d features in tile %s: paging it would take %d requests, past the task's budget of %d units (its counts may be wrong)",
			n, u.Key, pages, budget))
	}
	if !e.cfg.Caps.Sorts && e.warnedOrd.CompareAndSwap(false, true) {
		env.Logger.Warn("paging a tile that cannot be split, on a server without sorting: pages may overlap or miss features", "unit", u.Key)
	}
	for start := int64(0); start < n; start += ps {
		b := bbox
		cs, _ := json.Marshal(spec{Depth: sp.Depth, Page: true, Start: start, Size: ps, Total: n})
		children = append(children, store.Unit{Key: fmt.Sprintf("%s/p%d", u.Key, start), BBox: &b, Spec: cs})
	}
	return &tasks.Output{Children: children}, nil
}

// maySplit takes tiles from the task's split budget; when it is spent (once
// n, the tile's count, is known, since paging needs it) the tile is paged instead.
func (e *Engine) maySplit(env *tasks.Env, unit string, tiles int, n int64) bool {
	budget := e.cfg.SplitBudget(e.expected.Load(), e.pageSize.Load())
	if e.splitTiles.Add(int64(tiles)) <= budget || n < 0 {
		return true
	}
	e.splitTiles.Add(-int64(tiles))
	if e.warnedSplit.CompareAndSwap(false, true) {
		env.Logger.Warn("this task has planned as many tiles as any real layer needs and still finds overfull ones: paging the rest instead of splitting (the server's counts may be wrong)",
			"unit", unit, "tiles_planned", e.splitTiles.Load(), "budget", budget)
	}
	return false
}

// shortPage says a response held fewer features than the server matched: the tile must
// be split or paged instead.
type shortPage struct {
	got, matched int64
	optimistic   bool // the tile was fetched on an estimated count
}

func (e *shortPage) Error() string {
	return fmt.Sprintf("the server returned %d of %d features", e.got, e.matched)
}

// fetch downloads one page of a tile into a spool and returns it as the unit's output.
// expected is the tile's hits count, or -1. With mayShort (a tile, not a page), a
// response holding less than the tile's features makes the unit split the tile instead:
// said by the response's head (fetch returns *shortPage), or found once its features are
// written (the output's Check asks the runner to execute the unit again as a split). A
// page unit (sp.Page) that comes back short while its tile has more plans the rest as
// another page.
func (e *Engine) fetch(ctx context.Context, env *tasks.Env, u store.Unit, sp spec, bbox orb.Bound,
	start, count, expected int64, mayShort bool) (*tasks.Output, error) {
	// Pages are sorted where the server sorts, so that they neither overlap nor leave
	// gaps; a probe for the rest of a tile asks in the order the tile was fetched in.
	q := Query{Box: bbox, Start: start, Count: count, Sorted: !mayShort && !sp.Probe}
	// A tile fetched without a count is one fetched on an estimate (Execute counts
	// tiles whenever the server can count and the estimates stopped holding).
	optimistic := mayShort && expected < 0 && e.cfg.Caps.Counts
	var body *tasks.Spool
	err := env.HTTP.Do(ctx, e.cfg.Protocol.Request(env, u.Key, q), func(resp *http.Response) error {
		body.Close() // an earlier attempt's
		body = env.NewSpool()
		if err := e.cfg.Protocol.CheckResponse(resp); err != nil {
			return err
		}
		// The head of the response is decoded as it arrives: an exception report, an
		// HTML page or (for a tile fetched on an estimate) a numberMatched above the page
		// shows before the rest is downloaded. The rest is spooled as it is.
		head := e.source(env, u.Key, body.Tee(resp.Body), bbox)
		if mayShort && e.cfg.Caps.MatchedInResponse {
			head.limit = count
		}
		if _, err := head.Next(); err != nil && err != io.EOF {
			if _, sink := store.AsFault(err); sink {
				return err // the spool's disk, not the server
			}
			var short *shortPage
			if errors.As(err, &short) {
				short.optimistic = optimistic
				return retry.Permanent(dlq.ClassParse, short) // not a failure: Execute splits
			}
			if !errors.Is(err, io.ErrUnexpectedEOF) && cutOff(resp.Body) {
				// A decode error followed by a broken connection is a body cut off
				// mid-stream, whatever bytes came before the cut.
				return retry.Transient(dlq.ClassTruncated, fmt.Errorf("body cut off mid-stream: %w", err))
			}
			return e.cfg.Protocol.Classify(err)
		}
		_, err := body.ReadFrom(resp.Body)
		return err // a cut-off body is classed truncated by the handler, a full disk as a sink fault
	})
	if err != nil {
		body.Close()
		var short *shortPage
		if errors.As(err, &short) {
			return nil, short
		}
		return nil, err
	}
	var last *featureSource
	out := &tasks.Output{
		Table:   e.cfg.Table,
		Counts:  store.Counts{Bytes: body.Len()},
		Release: body.Close,
		Features: func() (store.FeatureSource, error) {
			r, err := body.Reader()
			if err != nil {
				return nil, err
			}
			last = e.source(env, u.Key, r, bbox)
			return last, nil
		},
		Rejected: func() *tasks.RejectedError {
			if last == nil || last.refused.Total == 0 {
				return nil
			}
			rej := last.refused
			return &rej
		},
	}
	out.Check = func(w store.Counts) (*tasks.Verdict, error) {
		// Features the decoder refused (curves) were in the response: they count as
		// received, or one refusal would make the tile look short forever.
		got := w.Total() + int64(last.refused.Total)
		matched := last.meta().NumberMatched
		if !e.cfg.Caps.MatchedInResponse && matched <= got {
			// A count that may be of what this response holds, not what matched
			// (WFS 1.x numberOfFeatures): only a larger number proves the page short.
			matched = -1
		}
		if expected >= 0 && start == 0 && got < expected {
			matched = max(matched, expected)
		}
		// A response short of the tile's count that is not a full page: the server gave
		// what it has for the tile, and counts more than it holds (a count from an
		// estimate, or a join repeating rows) or caps its pages below the size asked.
		// Splitting would find the same on every smaller tile, to no end. Keep what came
		// and ask once for the rest: nothing back confirms an inflated count (and after
		// a few confirmations the task stops asking); features back are a capped page,
		// paged on from there.
		if mayShort && matched > got && matched <= count && got < count && !e.cfg.Caps.Pages {
			// The rest cannot be asked for on this server: smaller tiles can. (Nothing is
			// learnt of its page size from one short answer: its count may be high.)
			redo, _ := json.Marshal(spec{Depth: sp.Depth, Split: true, Count: matched})
			return &tasks.Verdict{Redo: redo}, nil
		}
		if mayShort && matched > got && matched <= count && got < count {
			e.miscounted.Add(matched - got)
			if got == 0 || e.inflated.Load() >= inflatedProofs {
				e.reportMiscount(env, u.Key, matched, got)
				return &tasks.Verdict{Short: matched - got}, nil
			}
			rest, _ := json.Marshal(spec{Depth: sp.Depth, Page: true, Start: got, Size: count - got, Total: matched, Probe: true})
			b := bbox
			return &tasks.Verdict{Short: matched - got,
				Children: []store.Unit{{Key: fmt.Sprintf("%s/p%d", u.Key, got), BBox: &b, Spec: rest}}}, nil
		}
		if sp.Probe && got > 0 {
			// A tile's response came back short and its rest holds features: the server
			// caps its pages at what that response held. Smaller tiles from now on.
			e.learn(env, &shortPage{got: start, matched: sp.Total}, e.pageSize.Load(), -1)
		}
		if sp.Probe && got == 0 && start < sp.Total {
			// Asked for the rest of a tile the server counted more features in: there is
			// none. The count was high, not the page short.
			e.inflated.Add(1)
			tile, _, _ := strings.Cut(u.Key, "/p")
			e.reportMiscount(env, tile, sp.Total, start)
			return nil, nil
		}
		// A full page that is not the whole tile: the tile needs splitting.
		// Without a count, a full page, or a next link (a server capping its pages below
		// the size asked, unannounced), says the tile holds more.
		// A next link is taken once per task: some servers write one on every last page,
		// and taking each would split and shrink the page without end.
		capped := got > 0 && got < count && last.meta().Next != "" && e.takeNext(u.Key)
		if capped {
			env.Logger.Warn("a response short of the page asked for has a next link and no count: the server caps its pages; smaller pages from now on",
				"unit", u.Key, "asked", count, "got", got)
		}
		more := matched < 0 && expected < 0 && (got >= count || capped)
		if mayShort && (matched > got || more) {
			n := e.learn(env, &shortPage{got: got, matched: matched, optimistic: optimistic}, count, expected)
			redo, _ := json.Marshal(spec{Depth: sp.Depth, Split: true, Count: max(n, 0)})
			return &tasks.Verdict{Redo: redo}, nil
		}
		if sp.Page && got > 0 && got < count && start+got < sp.Total {
			// The server capped this page below its planned size: the rest of the page
			// is another page, or those features would never be asked for.
			rest, _ := json.Marshal(spec{Depth: sp.Depth, Page: true, Start: start + got, Size: count - got, Total: sp.Total, Probe: sp.Probe})
			tile, _, _ := strings.Cut(u.Key, "/p")
			b := bbox
			env.Logger.Warn("page came back short; asking for the rest", "unit", u.Key, "got", got, "size", count)
			return &tasks.Verdict{Children: []store.Unit{{Key: fmt.Sprintf("%s/p%d", tile, start+got), BBox: &b, Spec: rest}}}, nil
		}
		return nil, nil
	}
	return out, nil
}

// reportMiscount says, once per task, that the server counts more features than it
// returns; Finish says how many in all.
func (e *Engine) reportMiscount(env *tasks.Env, tile string, matched, got int64) {
	if e.warnedCount.CompareAndSwap(false, true) {
		env.Logger.Warn("the server counts more features than it returns: keeping what it returns, not splitting further",
			"unit", tile, "counted", matched, "returned", got)
	}
}

// cutOff drains what is left of a body after a decode error and tells whether the
// connection then broke instead of ending cleanly.
func cutOff(body io.Reader) bool {
	_, err := io.Copy(io.Discard, io.LimitReader(body, 4<<20))
	return err != nil
}

// takeNext tells whether unit key is the one unit of the task whose short page with a next
// link is taken as a capped page: the first to ask, and the same unit when its output is
// judged again (after a store fault).
func (e *Engine) takeNext(key string) bool {
	e.nextMu.Lock()
	defer e.nextMu.Unlock()
	if e.nextUnit == "" {
		e.nextUnit = key
	}
	return e.nextUnit == key
}

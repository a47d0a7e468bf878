package harvest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// Lister is a Protocol that can list the ids of a box's features and be asked for
// features by id (Query.IDs): ArcGIS's returnIdsOnly and objectIds, the complete,
// order-free way. An engine whose protocol is a Lister harvests a tile by listing its ids
// (cut into smaller tiles where a listing is cut short or too long), then fetches them in
// batches of a page.
type Lister interface {
	Protocol
	// List returns the ids of the features in box, reading at most max+1 of them, and
	// whether the server flagged the listing as cut short.
	List(ctx context.Context, env *tasks.Env, unit string, box orb.Bound, max int64) (ids []string, exceeded bool, err error)
}

// list executes a tile of a Lister: its ids are listed and judged (tasks.Decide), then
// planned as batches, or the tile is quartered.
func (e *Engine) list(ctx context.Context, env *tasks.Env, l Lister, u store.Unit, sp spec, bbox orb.Bound) (*tasks.Output, error) {
	limit := e.cfg.Budget.ListedIDs
	ids, exceeded, err := l.List(ctx, env, u.Key, bbox, limit)
	if err != nil {
		return nil, err
	}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	ev := tasks.Evidence{Kind: tasks.AskList, Size: limit, Returned: int64(len(ids)),
		Exceeded: exceeded, ParentCap: sp.Cap, ParentPrint: sp.Print, Print: printOf(ids)}
	if ev.Returned > limit {
		// Before cutting the tile for a listing this long, check a sample of it by id: a
		// listing of ids that do not exist would have smaller tiles list them again.
		if ev.Sampled, ev.SampleAnswered, err = e.sample(ctx, env, u.Key, bbox, ids); err != nil {
			return nil, err
		}
	}
	v := tasks.Decide(ev)
	if v.Reason != "" {
		env.Logger.Debug("id listing judged", "unit", u.Key, "verdict", v.Kind, "why", v.Reason)
	}
	switch v.Kind {
	case tasks.Split:
		return e.quarter(env, u, sp, bbox, ev, v)
	case tasks.Incomplete:
		// The ids listed are real: fetch them, and leave the rest of the tile as a dead
		// letter of its own, which a replay lists again.
		out, err := e.batches(u, sp, bbox, ids[:min(int64(len(ids)), limit)])
		if err != nil {
			return nil, err
		}
		again, _ := json.Marshal(spec{Depth: sp.Depth})
		b := bbox
		out.Failed = append(out.Failed, tasks.Failure{Unit: store.Unit{Key: u.Key + "/rest", BBox: &b, Spec: again}, Err: v.Err(u.Key)})
		return out, nil
	}
	return e.batches(u, sp, bbox, ids)
}

// quarter cuts a tile whose listing was cut short into four, each to list its own ids.
func (e *Engine) quarter(env *tasks.Env, u store.Unit, sp spec, b orb.Bound, ev tasks.Evidence, v tasks.Verdict) (*tasks.Output, error) {
	if sp.Depth >= e.cfg.Budget.Depth || b.Max[0]-b.Min[0] < minTileDeg || b.Max[1]-b.Min[1] < minTileDeg {
		return nil, &tasks.BudgetError{Key: "limits.max_split_depth", Limit: int64(e.cfg.Budget.Depth),
			What: fmt.Sprintf("tile %s cannot be cut further and %s", u.Key, v.Reason)}
	}
	if err := e.plan(4, u.Key); err != nil {
		return nil, err
	}
	var cut int64 // the cut the server showed, for the children to hold their flags to
	if ev.Exceeded && ev.Returned <= ev.Size {
		cut = ev.Returned
	}
	c := b.Center()
	var children []store.Unit
	for i, q := range []orb.Bound{
		{Min: b.Min, Max: c}, {Min: orb.Point{c[0], b.Min[1]}, Max: orb.Point{b.Max[0], c[1]}},
		{Min: orb.Point{b.Min[0], c[1]}, Max: orb.Point{c[0], b.Max[1]}}, {Min: c, Max: b.Max},
	} {
		cs, _ := json.Marshal(spec{Depth: sp.Depth + 1, Cap: cut, Print: ev.Print})
		children = append(children, store.Unit{Key: fmt.Sprintf("%s.%d", u.Key, i), BBox: &q, Spec: cs})
	}
	env.Logger.Debug("the id listing was cut short; quartering the tile", "unit", u.Key, "ids", ev.Returned, "why", v.Reason)
	return &tasks.Output{Children: children}, nil
}

// batches plans a tile's ids as batches of a page each. A feature crossing two tiles is
// listed by both and fetched twice, once per tile: its payload is one row.
func (e *Engine) batches(u store.Unit, sp spec, b orb.Bound, ids []string) (*tasks.Output, error) {
	ps := e.pageSize.Load()
	n := (int64(len(ids)) + ps - 1) / ps
	if err := e.plan(n, u.Key); err != nil {
		return nil, err
	}
	var children []store.Unit
	for start := int64(0); start < int64(len(ids)); start += ps {
		batch := ids[start:min(start+ps, int64(len(ids)))]
		cs, _ := json.Marshal(spec{Depth: sp.Depth, IDs: batch})
		bb := b
		children = append(children, store.Unit{Key: fmt.Sprintf("%s/o%s", u.Key, batch[0]), BBox: &bb, Spec: cs})
	}
	return &tasks.Output{Children: children}, nil
}

// fetchIDs downloads one batch of features asked for by id into a spool.
func (e *Engine) fetchIDs(ctx context.Context, env *tasks.Env, u store.Unit, sp spec, bbox orb.Bound) (*tasks.Output, error) {
	var body *tasks.Spool
	err := env.HTTP.Do(ctx, e.cfg.Protocol.Request(env, u.Key, Query{Box: bbox, IDs: sp.IDs}), func(resp *http.Response) error {
		body.Close()
		body = env.NewSpool()
		if err := e.cfg.Protocol.CheckResponse(resp); err != nil {
			return err
		}
		// The head is decoded as it arrives: an error object answered with 200 shows
		// before the rest is spooled.
		head := e.source(env, u.Key, body.Tee(resp.Body), bbox)
		if _, err := head.Next(); err != nil && err != io.EOF {
			if _, sink := store.AsFault(err); sink {
				return err
			}
			return e.cfg.Protocol.Classify(err)
		}
		_, err := body.ReadFrom(resp.Body)
		return err
	})
	if err != nil {
		body.Close()
		return nil, err
	}
	return &tasks.Output{
		Table:  e.cfg.Table,
		Counts: store.Counts{Bytes: body.Len()},
		Response: &tasks.Response{Body: body, Decoding: decoding{e: e, env: env, unit: u.Key, bbox: bbox, asked: sp.IDs},
			Evidence: tasks.Evidence{Kind: tasks.AskBatch, Size: int64(len(sp.IDs))}},
	}, nil
}

// listingSample is how many ids of an overlong listing are asked for by id to check it.
const listingSample = 100

// sample asks for listingSample ids spread over a listing by id and counts those the
// server answers; the features are not kept.
func (e *Engine) sample(ctx context.Context, env *tasks.Env, unit string, bbox orb.Bound, ids []string) (asked, answered int64, err error) {
	n := min(int64(len(ids)), listingSample, e.pageSize.Load())
	some := make([]string, 0, n)
	for i := range n {
		some = append(some, ids[i*int64(len(ids))/n])
	}
	err = env.HTTP.Do(ctx, e.cfg.Protocol.Request(env, unit+"/sample", Query{Box: bbox, IDs: some}), func(resp *http.Response) error {
		answered = 0
		if err := e.cfg.Protocol.CheckResponse(resp); err != nil {
			return err
		}
		s := e.source(env, unit, resp.Body, bbox)
		s.asked = make(map[string]bool, len(some))
		for _, id := range some {
			s.asked[id] = false
		}
		for {
			_, err := s.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return e.cfg.Protocol.Classify(err)
			}
		}
		for _, ok := range s.asked {
			if ok {
				answered++
			}
		}
		return nil
	})
	return int64(len(some)), answered, err
}

// printOf is an order-free fingerprint of ids; 0 for none.
func printOf(ids []string) uint64 {
	var p uint64
	for _, id := range ids {
		p += idHash(id)
	}
	if len(ids) == 0 {
		return 0
	}
	return p | 1
}

// Package harvest is the engine every feature source's task shares (WFS, OGC API -
// Features): it harvests one layer over an area completely by tiling instead of trusting
// a server's paging. The area's features are counted, tiles are split by bbox until each
// fits one response, a tile that cannot be split (features stacked on one spot) is paged,
// sorted where the server sorts, and the distinct features stored are compared with the
// server's count at the end. A Protocol says how to count, ask for and decode features;
// the engine decides what to ask for.
package harvest

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

	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// Protocol is how one kind of feature service is counted, asked and decoded. Its methods
// are called concurrently by the units of a task.
type Protocol interface {
	// Count returns how many features box holds, -1 when the server cannot say.
	Count(ctx context.Context, env *tasks.Env, unit string, box orb.Bound) (int64, error)
	// Request is the request for one response of features: those in q.Box, from
	// q.Start, at most q.Count.
	Request(env *tasks.Env, unit string, q Query) retry.Request
	// CheckResponse refuses a response that is not features (an HTML error page)
	// before its body is read, with an error for the retry handler.
	CheckResponse(resp *http.Response) error
	// Decode reads a response's features as they arrive.
	Decode(env *tasks.Env, body io.Reader) Decoder
	// Classify marks an error decoding the head of a response for the retry handler
	// (retry.Permanent or retry.Transient with a dlq class).
	Classify(err error) error
}

// Query is one response asked for.
type Query struct {
	Box          orb.Bound // lon/lat
	Start, Count int64
	// Sorted asks for a stable order, where the protocol can ask for one: the pages of a
	// tile that cannot be split must neither overlap nor leave gaps.
	Sorted bool
	// IDs, when set, asks for exactly these features by id (a Lister's batch); Box,
	// Start and Count are then unused.
	IDs []string
}

// Decoder yields the features of one response; Meta is complete once Next returned
// io.EOF (the counts may come after the features).
type Decoder interface {
	Next() (*spatial.Feature, error)
	Meta() spatial.Meta
}

// Caps is what the server can do, as far as the harvest cares.
type Caps struct {
	// Counts says Protocol.Count works.
	Counts bool
	// MatchedInResponse says a response's numberMatched counts the whole query (WFS 2.0,
	// OGC API - Features), so a tile can be fetched on an estimate and a response that
	// holds less than its tile is told by its head.
	MatchedInResponse bool
	// Sorts says Query.Sorted gives a stable order; without it, paging a tile may
	// overlap or miss features (logged).
	Sorts bool
	// Pages says Query.Start is honoured. Without it a tile that cannot be split and
	// holds more than a page fails, saying so.
	Pages bool
}

// Config is what a task gives the engine once it has negotiated with the server.
type Config struct {
	Protocol Protocol
	Caps     Caps
	Table    *store.FeatureTable
	// Area is the task's own area, lon/lat.
	Area orb.Bound
	// PageSize is the features per response asked for; lowered when the server turns out
	// to answer fewer.
	PageSize int64
	// Geographic says the stored CRS is lon/lat: the first coordinates of a response are
	// checked against its box (servers that write latitude first against their own
	// declaration are caught), and coordinates outside -180..180, -90..90 refused.
	Geographic bool
	// Budget bounds the units the task plans, the pages of a tile and the depth of its
	// splitting; zero fields keep tasks' defaults.
	Budget tasks.Budget
	// MaxDeleteFraction is a mirror table's safety rail (tasks.FeatureTarget).
	MaxDeleteFraction float64
	// Lookup asks the server for features by id before a mirror deletes a row it did not
	// see (tasks.Harvest.Lookup); nil when the source cannot be asked. DeleteAfter is the
	// target's tasks.FeatureTarget.AbsentRuns.
	Lookup      tasks.IDLookup
	DeleteAfter int
	// Transform filters and reshapes every feature between decoding and the table, and
	// those found by id (tasks.Transform); nil changes nothing.
	Transform *tasks.Transformer
}

// Defaults of the harvest.
const (
	// minTileDeg is the smallest tile side worth splitting further.
	minTileDeg = 1e-7
	// fill is the share of a page a tile is cut to hold, leaving room for uneven density
	// so that tiles estimated from their parent's count can be fetched without counting
	// first.
	fill = 0.7
)

// Engine harvests one layer for one task. Make one with New once the task has
// negotiated; its methods are safe for concurrent use by the task's units.
type Engine struct {
	cfg Config

	pageSize   atomic.Int64 // lowered when the server turns out to cap pages below the size asked
	expected   atomic.Int64 // numberMatched of the whole area, -1 unknown
	warnedOrd  atomic.Bool
	warnedSwap atomic.Bool
	// nextUnit is the unit whose short page with a next link (and no count) was taken as
	// a page the server caps; one per task.
	nextMu   sync.Mutex
	nextUnit string
	// optimistic counts tiles fetched on an estimated count, overflows those that held
	// more than a page after all: uneven data makes estimates wrong.
	optimistic, overflows atomic.Int64
	// planned counts the units the task planned, against its budget.
	planned atomic.Int64
}

// New returns the engine of a task configured with cfg.
func New(cfg Config) *Engine {
	cfg.Budget = cfg.Budget.OrDefault()
	cfg.Lookup = cfg.Transform.Lookup(cfg.Lookup)
	e := &Engine{cfg: cfg}
	e.pageSize.Store(max(cfg.PageSize, 1))
	e.expected.Store(-1)
	return e
}

// PageSize is the features per response the engine asks for now.
func (e *Engine) PageSize() int64 { return e.pageSize.Load() }

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
	// the server's count without being full.
	Probe bool `json:"pr,omitempty"`
	// Up is the count of the tile this one was cut from, 0 unknown: a box cannot hold
	// more features than its container, so a larger count of this tile is proven wrong
	// (Disowned).
	Up       int64 `json:"u,omitempty"`
	Disowned bool  `json:"dw,omitempty"`
	// Print is the fingerprint of the full response of the tile this one was cut from
	// (or, on a split, of the tile's own): a server ignoring the box answers the same.
	Print uint64 `json:"f,omitempty"`
	// IDs make the unit a batch of features asked for by id (a Lister's); Cap is the
	// length of the flagged listing of the tile this one was cut from.
	IDs []string `json:"ids,omitempty"`
	Cap int64    `json:"c,omitempty"`
}

// Plan returns the task's one root tile over its area (cut to the run's --bbox), counted
// where the server counts; tiles split as they learn how many features they hold.
func (e *Engine) Plan(ctx context.Context, env *tasks.Env) ([]store.Unit, error) {
	area := e.cfg.Area
	if env.Area != nil {
		if !area.Intersects(*env.Area) {
			return nil, &tasks.OutsideArea{Area: area}
		}
		area = Intersect(area, *env.Area)
	}
	e.expected.Store(-1)
	if e.cfg.Caps.Counts {
		n, err := e.cfg.Protocol.Count(ctx, env, "plan", area)
		switch {
		case err != nil:
			env.Logger.Warn("could not count the area's features; completeness will not be checked", "err", err)
		case n >= 0:
			e.expected.Store(n)
			env.Logger.Info("server count for the area", "number_matched", n, "bbox", FormatBound(area))
		}
	}
	root := spec{}
	if n := e.expected.Load(); n >= 0 {
		root = spec{Count: n, Exact: true} // the root tile need not be counted twice
	}
	sp, _ := json.Marshal(root)
	return []store.Unit{{Key: "q", BBox: &area, Spec: sp}}, nil
}

// Finish builds the indexes deferred while a new table was first filled, then compares
// the server's count for the area with the distinct features stored there (a shortfall is
// a *tasks.IncompleteError, which ends the task incomplete), and ends the changes of a keyed table
// (tasks.FinishChanges: a mirror's deletions, on evidence of a complete harvest).
func (e *Engine) Finish(ctx context.Context, env *tasks.Env) error {
	want := e.expected.Load()
	table := e.cfg.Table
	if err := env.Features.FinishFeatureTable(ctx, table); err != nil {
		return err
	}
	if want < 0 {
		// A replay plans nothing: the count is the one the run planned with, so
		// that a replay is held to the same evidence as the run (any mode).
		var err error
		if want, err = e.plannedCount(ctx, env); err != nil {
			return err
		}
	}
	area := e.area(env)
	filtered, err := env.Records.FilteredFeatures(ctx, env.RunID, env.TaskID)
	if err != nil {
		return err
	}
	var incomplete error
	if want >= 0 && table.Mode != store.ModeMirror {
		// A mirror's rows include those its deletions are about to remove: it
		// compares the features the run saw instead (tasks.FinishChanges).
		if incomplete, err = e.checkStored(ctx, env, area, want, filtered); err != nil {
			return err
		}
	}
	if err := tasks.FinishChanges(ctx, env, tasks.Harvest{Table: table, Area: area, Expected: want,
		MaxDeleteFraction: e.cfg.MaxDeleteFraction, Lookup: e.cfg.Lookup, DeleteAfter: e.cfg.DeleteAfter, Filtered: filtered}); err != nil {
		return err
	}
	return incomplete
}

// area is the area the run harvests: the task's, cut to the run's --bbox.
func (e *Engine) area(env *tasks.Env) orb.Bound {
	if env.Area != nil {
		return Intersect(e.cfg.Area, *env.Area)
	}
	return e.cfg.Area
}

// plannedCount is the server's count the task's root unit was planned with; -1 when the
// server gave none.
func (e *Engine) plannedCount(ctx context.Context, env *tasks.Env) (int64, error) {
	u, _, err := env.Records.Unit(ctx, store.UnitRef{RunID: env.RunID, TaskID: env.TaskID, Key: "q"})
	if errors.Is(err, store.ErrNotFound) {
		return -1, nil
	}
	if err != nil {
		return -1, err
	}
	var sp spec
	if json.Unmarshal(u.Spec, &sp) != nil || !sp.Exact {
		return -1, nil
	}
	return sp.Count, nil
}

// checkStored compares the server's count with the distinct features stored in area and
// those transform.where left out (filtered, returned but not stored): an
// *tasks.IncompleteError (not a failure of the check) when fewer are, unexplained.
func (e *Engine) checkStored(ctx context.Context, env *tasks.Env, area orb.Bound, want, filtered int64) (incomplete, err error) {
	table := e.cfg.Table
	got, err := env.Features.CountFeatures(ctx, table, area)
	if errors.Is(err, store.ErrNoTransform) {
		env.Logger.Warn("completeness not checked: this store cannot bring the area into the table's CRS; request EPSG:4326 or use PostGIS to have it checked",
			"number_matched", want, "srid", table.SRID)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	merged, err := env.Records.MergedFeatures(ctx, env.RunID, env.TaskID)
	if err != nil {
		return nil, err
	}
	if merged > 0 {
		// Append mode keys a row on the payload (geometry and properties): features
		// the server lists under distinct ids with one payload are one row.
		env.Logger.Warn("distinct features with equal payloads (geometry and properties) are stored once: append mode keys rows on the payload",
			"features", merged)
		got += merged
	}
	if filtered > 0 {
		env.Logger.Info("features returned and left out by transform.where count as harvested", "filtered", filtered)
		got += filtered
	}
	// Features the server claimed and an observation proved not to exist (asked for by
	// id, or a count the server itself contradicted), as the units recorded them,
	// wherever they ran (a distributed run's workers).
	proven, err := env.Records.ShortFeatures(ctx, env.RunID, env.TaskID)
	if err != nil {
		return nil, err
	}
	return Shortfall(env, area, want, got, proven), nil
}

// Shortfall compares the server's count of area (want) with the distinct features stored
// there (got): nil when every feature counted is stored, or when the shortfall is no more
// than the features proven not to exist (logged, with the evidence); otherwise an
// *tasks.IncompleteError. A server's count is never taken as wrong without such proof.
func Shortfall(env *tasks.Env, area orb.Bound, want, got, proven int64) error {
	switch {
	case got >= want:
		env.Logger.Info("complete: every feature the server counted is stored", "counted", want, "stored_distinct", got)
		return nil
	case want-got <= proven:
		env.Logger.Warn("complete: the features the server counted beyond those stored were proven not to exist (asked for by id, or counts the server contradicted)",
			"counted", want, "stored_distinct", got, "proven_absent", proven)
		return nil
	}
	return &tasks.IncompleteError{Where: FormatBound(area), Missing: want - got - proven,
		Reason: fmt.Sprintf("the server counted %d features in the area, %d distinct are stored and %d were proven not to exist", want, got, proven)}
}

// FormatBound writes a box as minx,miny,maxx,maxy.
func FormatBound(b orb.Bound) string {
	return fmt.Sprintf("%g,%g,%g,%g", b.Min[0], b.Min[1], b.Max[0], b.Max[1])
}

// Intersect is the box common to a and b.
func Intersect(a, b orb.Bound) orb.Bound {
	return orb.Bound{
		Min: orb.Point{math.Max(a.Min[0], b.Min[0]), math.Max(a.Min[1], b.Min[1])},
		Max: orb.Point{math.Min(a.Max[0], b.Max[0]), math.Min(a.Max[1], b.Max[1])},
	}
}

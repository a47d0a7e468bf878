package tasks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// IDLookup asks a source for features by id: the only evidence that a feature the
// listing left out is gone (a listing filtered by an access rule or a view can drop
// features its server still serves). Implementations are per source (tasks/wfs,
// tasks/ogcapi, tasks/arcgis) and safe for concurrent use.
type IDLookup interface {
	// LookupIDs asks the server, in one request, for the features with these ids (at
	// most BatchSize of them) and returns those it still serves, as the harvest would
	// have stored them. An id the server answers absent for (empty, 404) is left out; an
	// error means the ids' fate is unknown.
	LookupIDs(ctx context.Context, env *Env, ids []string) ([]*spatial.Feature, error)
	// BatchSize is how many ids one request may ask for; at least 1.
	BatchSize() int
}

// DefaultLookupRequests bounds the requests one finish spends asking the server for the
// features its listing left out; ids beyond it are treated as a source that cannot be
// asked treats them (FeatureTarget.DeleteAfter).
const DefaultLookupRequests = 200

// confirmedUnit is the key of the unit a finish writes the features it found by id as.
const confirmedUnit = "confirmed-by-id"

// Harvest is what a feature task's finish knows of the harvest it just ended, as
// FinishChanges needs it to decide about deletions.
type Harvest struct {
	Table *store.FeatureTable
	// Area is the lon/lat area harvested: the task's area, cut to the run's --bbox.
	Area orb.Bound
	// Expected is the server's count of the area's features; -1 when it gave none.
	Expected int64
	// MaxDeleteFraction is the target's safety rail (FeatureTarget.DeleteFraction).
	MaxDeleteFraction float64
	// Lookup asks the server for features by id before a mirror deletes them; nil when
	// the source cannot be asked (then DeleteAfter applies to every row).
	Lookup IDLookup
	// DeleteAfter is how many consecutive complete runs a row must be absent from before
	// it is deleted, where the server could not be asked about it
	// (FeatureTarget.AbsentRuns). Zero means DefaultDeleteAfter.
	DeleteAfter int
	// LookupRequests bounds the requests Lookup may make. Zero means
	// DefaultLookupRequests.
	LookupRequests int
	// Filtered is how many distinct features the run's units left out by
	// transform.where: returned by the server, so seen as far as the evidence of a
	// complete harvest goes, but not stored (their rows are unseen, and deleted).
	Filtered int64
}

// FinishChanges ends the changes a feature task made to a keyed table (mirror mode, or
// history); other tables are left alone. In mirror mode, features absent from the run are
// deleted only on evidence: every unit of the task done (env.UnitsLeft is 0), the server's
// count known, as many distinct features seen as it counted, and for each row the run
// did not see, the server's own word that it is gone (h.Lookup answered nothing for its
// id) or, where it could not be asked, its absence from h.DeleteAfter consecutive
// complete runs. A row the server still serves by id is kept (and stored if it changed),
// and the inconsistency of its listing is reported on the task. Otherwise nothing is
// deleted and the task's record says why; a replay that completes the task calls this
// again and applies them then. A deletion larger than the safety rail allows fails with
// *store.MassDeleteError, having deleted nothing; a run that saw fewer distinct
// features than the server counted ends with an *IncompleteError, having deleted nothing.
func FinishChanges(ctx context.Context, env *Env, h Harvest) error {
	t := h.Table
	if t == nil || !t.Keyed() {
		return nil
	}
	c := store.TaskChanges{History: t.History, Seen: -1}
	var stopped error
	if t.Mode == store.ModeMirror {
		var err error
		if c.Seen, err = env.Mirror.SeenFeatures(ctx, t, env.RunID, env.TaskID); err != nil {
			return err
		}
		var found int
		if c.Note, found, stopped, err = deleteUnseen(ctx, env, h, c.Seen); err != nil {
			return err
		}
		if found > 0 {
			if c.Seen, err = env.Mirror.SeenFeatures(ctx, t, env.RunID, env.TaskID); err != nil {
				return err // the rows found by id count as seen
			}
		}
	}
	if err := env.Mirror.NoteChanges(ctx, env.RunID, env.TaskID, c); err != nil {
		return err
	}
	return stopped
}

// deleteUnseen applies a mirror's deletions when the evidence allows; it returns what it
// decided, for the task's record, and how many unseen rows the server still served by id
// (stored as seen). What the evidence allows is decided by deletionGate
// (before the server is asked anything) and chooseDeletions (after): this function only
// gathers the evidence and carries the decisions out.
func deleteUnseen(ctx context.Context, env *Env, h Harvest, seen int64) (note string, found int, stopped, err error) {
	withhold := func(why string) string {
		env.Logger.Warn("mirror: nothing deleted: "+why, "table", h.Table.Name)
		return "deletions withheld: " + why
	}
	// Whatever this run decides, earlier runs' keys can no longer apply: it supersedes them.
	if err := env.Mirror.ForgetSeen(ctx, env.Flow, env.TaskID, env.RunID); err != nil {
		return "", 0, nil, err
	}
	// Rows this run saw exist, whatever else it concludes: their absence streaks end.
	absence := store.Absence{Flow: env.Flow, Task: env.TaskID, RunID: env.RunID}
	if _, err := env.Mirror.NoteAbsent(ctx, h.Table, absence); err != nil {
		return "", 0, nil, err
	}
	later, err := env.Mirror.LaterRun(ctx, env.Flow, env.TaskID, env.RunID)
	if err != nil {
		return "", 0, nil, err
	}
	seen += h.Filtered // returned by the server: observed, though not stored
	g := deletionGate(env.UnitsLeft, h.Expected, seen, later, h.Area)
	if g.forget {
		// No replay can cure it: the keys the run saw are of no use.
		if err := env.Mirror.ForgetSeen(ctx, env.Flow, env.TaskID, env.RunID+1); err != nil {
			return "", 0, nil, err
		}
	}
	if g.why != "" {
		if g.incomplete != nil {
			return withhold(g.why), 0, g.incomplete, nil
		}
		return withhold(g.why), 0, nil, nil // not a nil *IncompleteError in an error
	}
	if seen > h.Expected {
		env.Logger.Warn("mirror: the run saw more distinct features than the server counted (ids that change between requests, or a count that runs low)",
			"counted", h.Expected, "seen", seen)
	}
	unseen, err := env.Mirror.UnseenFeatures(ctx, h.Table, store.UnseenQuery{RunID: env.RunID, Task: env.TaskID, Area: h.Area, Partial: env.Area != nil})
	if errors.Is(err, store.ErrNoTransform) {
		return withhold("this store cannot tell which stored features lie in the area (" + err.Error() + ")"), 0, nil, nil
	}
	if err != nil {
		return "", 0, nil, err
	}
	v, err := confirmGone(ctx, env, h, unseen.Features)
	if err != nil {
		return "", 0, nil, err
	}
	if v.kept > 0 {
		env.Logger.Warn(fmt.Sprintf("mirror: the server's listing left out %d features it still serves by id: kept (and stored where they changed)", v.kept),
			"table", h.Table.Name, "counted", h.Expected, "seen", seen, "kept", v.kept, "updated", v.written.Updated)
	}
	absence.Keys = v.unasked
	runs, err := env.Mirror.NoteAbsent(ctx, h.Table, absence)
	if err != nil {
		return "", 0, nil, err
	}
	d := chooseDeletions(v, runs, deletionRules{After: cmp.Or(h.DeleteAfter, DefaultDeleteAfter), Current: unseen.Current,
		MaxFraction: h.MaxDeleteFraction, AllowMass: env.AllowMassDelete, RunID: env.RunID, Table: h.Table.Name})
	if d.waiting > 0 {
		env.Logger.Info("mirror: absent features kept until target.delete_after complete runs have missed them", "table", h.Table.Name, "kept", d.waiting)
	}
	if d.mass != nil {
		env.Logger.Error("mirror: "+d.mass.Error(), "table", h.Table.Name)
		return strings.Join(d.notes, "; "), v.kept, d.mass, nil
	}
	deleted, err := env.Mirror.DeleteFeatures(ctx, h.Table, store.DeleteKeys{RunID: env.RunID, Task: env.TaskID, Keys: d.del})
	if err != nil {
		return "", 0, nil, err
	}
	verb := "deleted"
	if h.Table.History {
		verb = "closed"
	}
	env.Logger.Info("mirror: complete harvest; features absent upstream "+verb,
		"table", h.Table.Name, "counted", h.Expected, "seen", seen, verb, deleted, "confirmed_gone", len(v.gone),
		"lookup_requests", v.requests, "table_features", unseen.Current)
	head := fmt.Sprintf("complete (%d counted, %d seen): %d of %d features %s", h.Expected, seen, deleted, unseen.Current, verb)
	return strings.Join(append([]string{head}, d.notes...), "; "), v.kept, nil, nil
}

// gate is what a mirror's evidence allows before the server is asked about any row: go
// on (why is empty), or withhold every deletion for the reason why.
type gate struct {
	why string
	// forget says the keys the run saw can serve no replay either (the server gave no
	// count, or a later run supersedes this one).
	forget bool
	// incomplete is set when the run saw fewer distinct features than the server
	// counted: the task ends incomplete.
	incomplete *IncompleteError
}

// deletionGate decides from a run's evidence alone whether a mirror may delete at all:
// every unit of the task done, the server's count of the area known, at least as many
// distinct features seen as it counted, and no later run of the task since (later is
// that run's id, 0 for none).
func deletionGate(unitsLeft, expected, seen, later int64, area orb.Bound) gate {
	switch {
	case unitsLeft > 0:
		return gate{why: fmt.Sprintf("%d units of the task are not done (dead letters, or not run); they apply once the units are replayed", unitsLeft)}
	case expected < 0:
		return gate{forget: true, why: "the server gave no count of the area, so a feature's absence cannot be told from a partial harvest"}
	case seen < expected:
		return gate{why: fmt.Sprintf("the server counted %d features in the area but the run saw %d distinct (%d missing)", expected, seen, expected-seen),
			incomplete: &IncompleteError{Where: fmt.Sprintf("%g,%g,%g,%g", area.Min[0], area.Min[1], area.Max[0], area.Max[1]),
				Missing: expected - seen, Reason: fmt.Sprintf("the server counted %d features but the run saw %d distinct; nothing deleted", expected, seen)}}
	case later > 0:
		return gate{forget: true, why: fmt.Sprintf("run %d of this task has run since; deleting on this run's evidence could remove what it stored", later)}
	}
	return gate{}
}

// deletionRules are the limits chooseDeletions applies.
type deletionRules struct {
	After       int     // complete runs a row not asked about must be absent from
	Current     int64   // the table's current rows in the area
	MaxFraction float64 // the safety rail: target.max_delete_fraction
	AllowMass   bool    // --allow-mass-delete
	RunID       int64
	Table       string
}

// deletions is what chooseDeletions decided.
type deletions struct {
	del     []string // keys to delete (or close)
	waiting int      // absent rows kept until they are absent from r.After runs
	// mass is set when del is more than the safety rail allows: nothing is deleted.
	mass  *store.MassDeleteError
	notes []string // for the task's record
}

// chooseDeletions decides which unseen rows go, from what asking the server by id showed
// (v) and, for the rows it was not asked about, how many consecutive complete runs each
// has been absent from (runs): a row goes when the server answered absent for its id, or
// when it could not be asked and has been absent from r.After runs; all of them, or none
// when they are more than the safety rail allows.
func chooseDeletions(v confirmation, runs map[string]int, r deletionRules) deletions {
	var d deletions
	if v.kept > 0 {
		d.notes = append(d.notes, fmt.Sprintf("the server's listing left out %d features it still serves by id (kept, %d changed)", v.kept, v.written.Updated))
	}
	d.del = append(d.del, v.gone...)
	for _, k := range v.unasked {
		if runs[k] >= r.After {
			d.del = append(d.del, k)
		} else {
			d.waiting++
		}
	}
	if d.waiting > 0 {
		d.notes = append(d.notes, fmt.Sprintf("%d absent features not asked for by id are kept until absent from %d complete runs (target.delete_after)", d.waiting, r.After))
	}
	if n := int64(len(d.del)); n > 0 && float64(n) > r.MaxFraction*float64(r.Current) && !r.AllowMass {
		d.mass = &store.MassDeleteError{RunID: r.RunID, Table: r.Table, Candidates: n, Current: r.Current, MaxFraction: r.MaxFraction}
		d.notes = append(d.notes, "deletions stopped: "+d.mass.Error())
		d.del = nil
	}
	return d
}

// confirmation is what asking the server by id showed of the rows a run did not see.
type confirmation struct {
	gone     []string     // keys the server answered absent for
	unasked  []string     // keys it was not (or could not be) asked about
	kept     int          // rows it still serves
	written  store.Counts // what storing those did
	requests int
}

// confirmGone asks h.Lookup for the features behind the rows a run did not see, in
// batches, within the request budget, and stores those it still serves.
func confirmGone(ctx context.Context, env *Env, h Harvest, unseen []store.UnseenFeature) (confirmation, error) {
	var v confirmation
	if h.Lookup == nil || len(h.Table.Key) > 0 {
		// Keyed on properties, a row's key is not the server's id.
		for _, f := range unseen {
			v.unasked = append(v.unasked, f.Key)
		}
		return v, nil
	}
	byID := make(map[string]string, len(unseen)) // feature id -> key
	var ids []string
	for _, f := range unseen {
		if f.FeatureID == "" {
			v.unasked = append(v.unasked, f.Key)
			continue
		}
		byID[f.FeatureID] = f.Key
		ids = append(ids, f.FeatureID)
	}
	size, budget := max(h.Lookup.BatchSize(), 1), cmp.Or(h.LookupRequests, DefaultLookupRequests)
	var found []*spatial.Feature
	for start := 0; start < len(ids); start += size {
		batch := ids[start:min(start+size, len(ids))]
		if v.requests >= budget {
			env.Logger.Warn("mirror: the budget of requests by id is spent; the rest wait for target.delete_after complete runs",
				"requests", v.requests, "not_asked", len(ids)-start)
			for _, id := range ids[start:] {
				v.unasked = append(v.unasked, byID[id])
			}
			break
		}
		v.requests++
		fs, err := h.Lookup.LookupIDs(ctx, env, batch)
		if err != nil {
			if ctx.Err() != nil {
				return v, ctx.Err()
			}
			env.Logger.Warn("mirror: asking the server for features by id failed; those not confirmed gone wait for target.delete_after complete runs",
				"err", err, "not_asked", len(ids)-start)
			for _, id := range ids[start:] {
				v.unasked = append(v.unasked, byID[id])
			}
			break
		}
		served := make(map[string]bool, len(fs))
		for _, f := range fs {
			if _, ok := byID[f.ID]; ok && !served[f.ID] {
				served[f.ID] = true
				found = append(found, f)
			}
		}
		for _, id := range batch {
			if !served[id] {
				v.gone = append(v.gone, byID[id])
			}
		}
	}
	v.kept = len(found)
	if len(found) > 0 {
		ref := store.UnitRef{RunID: env.RunID, TaskID: env.TaskID, Key: confirmedUnit}
		var err error
		if v.written, err = env.Mirror.WriteConfirmed(ctx, ref, h.Table, &featureList{fs: found}); err != nil {
			return v, fmt.Errorf("storing the %d features the server still serves by id: %w", len(found), err)
		}
	}
	return v, nil
}

// featureList is a store.FeatureSource over features in memory.
type featureList struct {
	fs []*spatial.Feature
	i  int
}

// Next implements store.FeatureSource.
func (l *featureList) Next() (*spatial.Feature, error) {
	if l.i >= len(l.fs) {
		return nil, io.EOF
	}
	l.i++
	return l.fs[l.i-1], nil
}

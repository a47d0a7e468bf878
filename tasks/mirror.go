package tasks

import (
	"context"
	"errors"
	"fmt"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/store"
)

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
}

// FinishChanges ends the changes a feature task made to a keyed table (mirror mode, or
// history); other tables are left alone. In mirror mode, features absent from the run are
// deleted only on evidence that the harvest was complete: every unit of the task done
// (env.UnitsLeft is 0), the server's count known, and as many distinct features seen as
// it counted. Otherwise nothing is deleted and the task's record says why; a replay that
// completes the task calls this again and applies them then. A deletion larger than the
// safety rail allows fails with *store.MassDeleteError, having deleted nothing; a run that
// saw fewer distinct features than the server counted ends with an *IncompleteError, having
// deleted nothing.
func FinishChanges(ctx context.Context, env *Env, h Harvest) error {
	t := h.Table
	if t == nil || !t.Keyed() {
		return nil
	}
	c := store.TaskChanges{History: t.History, Seen: -1}
	var stopped error
	if t.Mode == store.ModeMirror {
		var err error
		if c.Seen, err = env.Store.SeenFeatures(ctx, t, env.RunID, env.TaskID); err != nil {
			return err
		}
		if c.Note, stopped, err = deleteUnseen(ctx, env, h, c.Seen); err != nil {
			return err
		}
	}
	if err := env.Store.NoteChanges(ctx, env.RunID, env.TaskID, c); err != nil {
		return err
	}
	return stopped
}

// deleteUnseen applies a mirror's deletions when the evidence allows; it returns what it
// decided, for the task's record.
func deleteUnseen(ctx context.Context, env *Env, h Harvest, seen int64) (note string, stopped, err error) {
	withhold := func(why string) (string, error, error) {
		note := "deletions withheld: " + why
		env.Logger.Warn("mirror: nothing deleted: "+why, "table", h.Table.Name)
		return note, nil, nil
	}
	// Whatever this run decides, earlier runs' keys can no longer apply: it supersedes them.
	if err := env.Store.ForgetSeen(ctx, env.Flow, env.TaskID, env.RunID); err != nil {
		return "", nil, err
	}
	switch {
	case env.UnitsLeft > 0:
		return withhold(fmt.Sprintf("%d units of the task are not done (dead letters, or not run); they apply once the units are replayed", env.UnitsLeft))
	case h.Expected < 0:
		// No replay can cure that: the keys the run saw are of no use.
		if err := env.Store.ForgetSeen(ctx, env.Flow, env.TaskID, env.RunID+1); err != nil {
			return "", nil, err
		}
		return withhold("the server gave no count of the area, so a feature's absence cannot be told from a partial harvest")
	}
	if seen < h.Expected {
		// Nothing deleted, and the task ends incomplete: the evidence does not add up.
		note, _, _ := withhold(fmt.Sprintf("the server counted %d features in the area but the run saw %d distinct (%d missing)",
			h.Expected, seen, h.Expected-seen))
		return note, &IncompleteError{Where: fmt.Sprintf("%g,%g,%g,%g", h.Area.Min[0], h.Area.Min[1], h.Area.Max[0], h.Area.Max[1]),
			Missing: h.Expected - seen, Reason: fmt.Sprintf("the server counted %d features but the run saw %d distinct; nothing deleted", h.Expected, seen)}, nil
	}
	if seen > h.Expected {
		env.Logger.Warn("mirror: the run saw more distinct features than the server counted (ids that change between requests, or a count that runs low)",
			"counted", h.Expected, "seen", seen)
	}
	d := store.Deletion{RunID: env.RunID, Flow: env.Flow, Task: env.TaskID, Area: h.Area, Partial: env.Area != nil,
		MaxFraction: h.MaxDeleteFraction, AllowMass: env.AllowMassDelete}
	res, err := env.Store.DeleteUnseen(ctx, h.Table, d)
	if errors.Is(err, store.ErrNoTransform) {
		return withhold("this store cannot tell which stored features lie in the area (" + err.Error() + ")")
	}
	if err != nil {
		return "", nil, err
	}
	switch {
	case res.SupersededBy > 0:
		return withhold(fmt.Sprintf("run %d of this task has run since; deleting on this run's evidence could remove what it stored", res.SupersededBy))
	case res.Stopped:
		e := &store.MassDeleteError{RunID: env.RunID, Table: h.Table.Name, Candidates: res.Candidates, Current: res.Current, MaxFraction: h.MaxDeleteFraction}
		env.Logger.Error("mirror: "+e.Error(), "table", h.Table.Name)
		return "deletions stopped: " + e.Error(), e, nil
	}
	verb := "deleted"
	if h.Table.History {
		verb = "closed"
	}
	env.Logger.Info("mirror: complete harvest; features absent upstream "+verb,
		"table", h.Table.Name, "counted", h.Expected, "seen", seen, verb, res.Deleted, "table_features", res.Current)
	return fmt.Sprintf("complete (%d counted, %d seen): %d of %d features %s", h.Expected, seen, res.Deleted, res.Current, verb), nil, nil
}

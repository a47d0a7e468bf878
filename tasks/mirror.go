package tasks

import (
	"context"
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
// safety rail allows fails with *store.MassDeleteError, having deleted nothing.
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
	switch {
	case env.UnitsLeft > 0:
		return withhold(fmt.Sprintf("%d units of the task are not done (dead letters, or not run); they apply once the units are replayed", env.UnitsLeft))
	case h.Expected < 0:
		return withhold("the server gave no count of the area, so a feature's absence cannot be told from a partial harvest")
	}
	if seen < h.Expected {
		return withhold(fmt.Sprintf("the server counted %d features in the area but the run saw %d distinct (%d missing)",
			h.Expected, seen, h.Expected-seen))
	}
	d := store.Deletion{RunID: env.RunID, Flow: env.Flow, Task: env.TaskID,
		MaxFraction: h.MaxDeleteFraction, AllowMass: env.AllowMassDelete}
	if env.Area != nil {
		area := h.Area
		d.Area = &area
	}
	res, err := env.Store.DeleteUnseen(ctx, h.Table, d)
	if err != nil {
		return "", nil, err
	}
	switch {
	case res.SupersededBy > 0:
		return withhold(fmt.Sprintf("run %d of this task has run since; deleting on this run's evidence could remove what it stored", res.SupersededBy))
	case res.Stopped:
		e := &store.MassDeleteError{Table: h.Table.Name, Candidates: res.Candidates, Current: res.Current, MaxFraction: h.MaxDeleteFraction}
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

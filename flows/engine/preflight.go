package engine

import (
	"context"
	"errors"
	"log/slog"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/tasks"
)

// preflight asks each task of the run that can tell (tasks.Preflight) whether it can run
// on the run's store, before anything is recorded or harvested: a SQL step calling a
// function the store's database does not have fails the run here, not after the
// harvest it follows. It returns every task's refusal.
func preflight(ctx context.Context, f *flows.Flow, opts RunOptions, log *slog.Logger) error {
	selected, err := selectTasks(f, opts.OnlyTasks)
	if err != nil {
		return err
	}
	return checkTasks(ctx, f, selected, opts.Store.Tasks, opts.Area, log)
}

// Preflight is the check a run makes before it starts (every task that can tell whether
// it can run on st), made without running: geoflow validate --database.
func Preflight(ctx context.Context, f *flows.Flow, st tasks.Stores, log *slog.Logger) error {
	all := make(map[string]bool, len(f.Tasks))
	for _, t := range f.Tasks {
		all[t.ID] = true
	}
	return checkTasks(ctx, f, all, st, nil, log)
}

// checkTasks asks the selected tasks of f that can tell (tasks.Preflight) whether they
// can run on st, and returns every refusal.
func checkTasks(ctx context.Context, f *flows.Flow, selected map[string]bool, st tasks.Stores, area *orb.Bound, log *slog.Logger) error {
	var errs []error
	for _, t := range f.Tasks {
		pf, ok := t.Config.(tasks.Preflight)
		if !ok || !selected[t.ID] {
			continue
		}
		env := &tasks.Env{Flow: f.Name, TaskID: t.ID, Logger: log.With("task", t.ID), Stores: st, Area: area}
		if err := pf.Preflight(ctx, env); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

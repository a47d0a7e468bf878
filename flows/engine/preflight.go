package engine

import (
	"context"
	"errors"
	"log/slog"

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
	var errs []error
	for _, t := range f.Tasks {
		pf, ok := t.Config.(tasks.Preflight)
		if !ok || !selected[t.ID] {
			continue
		}
		env := &tasks.Env{Flow: f.Name, TaskID: t.ID, Logger: log.With("task", t.ID), Stores: opts.Store.Tasks, Area: opts.Area}
		if err := pf.Preflight(ctx, env); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

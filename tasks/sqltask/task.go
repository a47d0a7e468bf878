package sqltask

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// unitKey is the key of a SQL step's one unit.
const unitKey = "sql"

var _ tasks.Task = (*Task)(nil)

// Task is a SQL step ready to run. It is safe for concurrent use.
type Task struct {
	id string
	c  *Config
}

// Plan implements tasks.Task: one unit, the whole script. A run with a --bbox runs it too,
// with @bbox set (the unit's bbox is the run's area): the script decides what the area
// means to it.
func (t *Task) Plan(_ context.Context, env *tasks.Env) ([]store.Unit, error) {
	u := store.Unit{Key: unitKey}
	if env.Area != nil {
		a := *env.Area
		u.BBox = &a
	}
	return []store.Unit{u}, nil
}

// Execute implements tasks.Task: it reads the script (the file as it is now: a replay
// runs the file as fixed since the failure) and hands it to the runner with its
// parameters, for the unit's transaction. A script that cannot run (a file gone, a
// statement that would end the transaction, a parameter it does not have) fails the unit
// before anything runs.
func (t *Task) Execute(ctx context.Context, env *tasks.Env, _ store.Unit) (*tasks.Output, error) {
	text, source, err := t.c.script()
	if err != nil {
		return nil, retry.Permanent(dlq.ClassInvalid, err)
	}
	d, err := dialect(ctx, env)
	if err != nil {
		return nil, err
	}
	if d != nil {
		d.Functions = nil // the database says it better than a guess, once it runs
	}
	params := t.c.params(env)
	if ps := problems(text, params.Names(), d); len(ps) > 0 {
		return nil, retry.Permanent(dlq.ClassInvalid, errors.New(ps[0].at(source)))
	}
	return &tasks.Output{SQL: &store.SQLScript{Source: source, Text: text, Params: params}}, nil
}

// params are the values of the script's parameters for a unit of env's run.
func (c *Config) params(env *tasks.Env) store.SQLParams {
	return store.SQLParams{RunID: env.RunID, Flow: env.Flow, Task: env.TaskID, Area: env.Area, Tables: c.tables}
}

// dialect is the SQL env's store runs; nil when it does not say.
func dialect(ctx context.Context, env *tasks.Env) (*store.SQLDialect, error) {
	if env.SQL == nil {
		return nil, nil
	}
	d, err := env.SQL.SQLDialect(ctx)
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// Preflight implements tasks.Preflight: before a run starts, the script is read as the
// store's database reads it, and refused with every problem found, a function the
// database does not have among them (a GeoPackage has no spatial SQL).
func (c *Config) Preflight(ctx context.Context, env *tasks.Env) error {
	d, err := dialect(ctx, env)
	if err != nil || d == nil {
		return err
	}
	text, source, err := c.script()
	if err != nil {
		return fmt.Errorf("task %q: %w", env.TaskID, err)
	}
	ps := problems(text, c.params(env).Names(), d)
	if len(ps) == 0 {
		return nil
	}
	msgs := make([]string, len(ps))
	for i, p := range ps {
		msgs[i] = p.at(source)
	}
	return fmt.Errorf("task %q cannot run on this store:\n  %s", env.TaskID, strings.Join(msgs, "\n  "))
}

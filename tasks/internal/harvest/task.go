package harvest

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// Negotiator is a feature source's own part of a task on the engine: it negotiates with
// the server (capabilities, schema, the target table) and makes the engine. Task calls it
// until it succeeds, never concurrently.
type Negotiator interface {
	Negotiate(ctx context.Context, env *tasks.Env) (*Engine, error)
}

// Task is a task on the engine: a source embeds it, with itself as the Negotiator, and
// its Plan, Execute, Follow and Finish are the engine's. A failed negotiation is not
// kept, so a later call tries again. Its methods are safe for concurrent use.
type Task struct {
	Source Negotiator

	mu  sync.Mutex
	eng *Engine
}

var (
	_ tasks.Task     = (*Task)(nil)
	_ tasks.Follower = (*Task)(nil)
	_ tasks.Finisher = (*Task)(nil)
)

// engine negotiates once, and returns the engine.
func (t *Task) engine(ctx context.Context, env *tasks.Env) (*Engine, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.eng == nil {
		e, err := t.Source.Negotiate(ctx, env)
		if err != nil {
			return nil, err
		}
		t.eng = e
	}
	return t.eng, nil
}

// negotiated is the engine once negotiated, nil before.
func (t *Task) negotiated() *Engine {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.eng
}

// Plan implements tasks.Task: the engine counts the area and plans its root tile.
func (t *Task) Plan(ctx context.Context, env *tasks.Env) ([]store.Unit, error) {
	e, err := t.engine(ctx, env)
	if err != nil {
		return nil, err
	}
	return e.Plan(ctx, env)
}

// Execute implements tasks.Task: the engine fetches, splits, pages or lists the unit.
func (t *Task) Execute(ctx context.Context, env *tasks.Env, u store.Unit) (*tasks.Output, error) {
	e, err := t.engine(ctx, env)
	if err != nil {
		return nil, err
	}
	return e.Execute(ctx, env, u)
}

// Follow implements tasks.Follower: the engine plans what a verdict calls for.
func (t *Task) Follow(env *tasks.Env, u store.Unit, ev tasks.Evidence, v tasks.Verdict) (json.RawMessage, []store.Unit) {
	if e := t.negotiated(); e != nil {
		return e.Follow(env, u, ev, v)
	}
	return nil, nil
}

// Finish implements tasks.Finisher: the engine's indexes, completeness check and a keyed
// table's changes; nothing when the task never negotiated.
func (t *Task) Finish(ctx context.Context, env *tasks.Env) error {
	if e := t.negotiated(); e != nil {
		return e.Finish(ctx, env)
	}
	return nil
}

package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// drain executes units, and the children they plan, with a pool of workers until none
// are left or ctx is cancelled (units in flight then run on under work). ended is called,
// from the workers, after each unit with the state it ended in. A unit that crosses the
// task's budget (*tasks.BudgetError) halts the task: the units still queued are left
// pending, and drain returns that error.
func (r *runner) drain(ctx context.Context, task tasks.Task, env *tasks.Env, units []store.Unit, workers int,
	prog *TaskProgress, ended func(u store.Unit, state store.State)) error {
	q := newQueue(units)
	work := r.stop.Work(ctx)
	var halted atomic.Pointer[tasks.BudgetError]
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				u, ok := q.pop(ctx)
				if !ok {
					return
				}
				if halted.Load() != nil {
					q.finish(nil) // left pending: the task plans no more
					continue
				}
				children, state, cause := r.unit(work, task, env, u, prog, ended)
				ended(u, state)
				var over *tasks.BudgetError
				if errors.As(cause, &over) && halted.CompareAndSwap(nil, over) {
					env.Logger.Error("the task crossed its budget: no further unit of it runs", "err", over)
				}
				prog.addTotal(int64(len(children)))
				q.finish(children)
			}
		}()
	}
	wg.Wait()
	if over := halted.Load(); over != nil {
		return over
	}
	return nil
}

// queue hands units to workers; units may add children while others run. It ends when
// it is empty and nothing is in flight, or when ctx is cancelled.
type queue struct {
	mu       sync.Mutex
	cond     *sync.Cond
	items    []store.Unit
	inflight int
}

func newQueue(items []store.Unit) *queue {
	q := &queue{items: items}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *queue) pop(ctx context.Context) (store.Unit, bool) {
	stop := context.AfterFunc(ctx, func() {
		q.mu.Lock()
		q.cond.Broadcast()
		q.mu.Unlock()
	})
	defer stop()
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && q.inflight > 0 && ctx.Err() == nil {
		q.cond.Wait()
	}
	if ctx.Err() != nil || len(q.items) == 0 {
		q.cond.Broadcast()
		return store.Unit{}, false
	}
	u := q.items[0]
	q.items = q.items[1:]
	q.inflight++
	return u, true
}

func (q *queue) finish(children []store.Unit) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.inflight--
	q.items = append(q.items, children...)
	q.cond.Broadcast()
}

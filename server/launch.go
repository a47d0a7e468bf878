package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/store"
)

// Launcher starts runs and replays for the web UI's API, in the background, with the
// same code as geoflow run and geoflow dlq replay. What it starts lives as long as the
// context given to NewLauncher: cancelling it stops them as a signal stops the CLI (in
// flight units get their grace, the run is recorded interrupted), and Wait waits for
// them to be recorded.
type Launcher struct {
	ctx     context.Context
	catalog *Catalog
	run     flows.RunOptions
	replay  flows.ReplayOptions
	log     *slog.Logger
	wg      sync.WaitGroup
}

// NewLauncher returns a launcher whose runs and replays live until ctx ends. run and
// replay are the options every run and replay gets (Store, HTTP, Logger, Grace; Store
// and Registry are required); catalog finds the flows by name.
func NewLauncher(ctx context.Context, catalog *Catalog, run flows.RunOptions, replay flows.ReplayOptions) (*Launcher, error) {
	if catalog == nil || run.Store == nil || replay.Store == nil || replay.Registry == nil {
		return nil, errors.New("server: a launcher needs a catalog, a store and a task registry")
	}
	return &Launcher{ctx: ctx, catalog: catalog, run: run, replay: replay, log: cmp.Or(run.Logger, slog.Default())}, nil
}

// StartRun validates rq against the flow called name and starts the run, returning its
// id once it is recorded. The error is the flow's or the request's problem (ErrNoFlow,
// a bad --bbox or --task: the CLI's words), or why the run could not start.
func (l *Launcher) StartRun(ctx context.Context, name string, rq flows.Request) (int64, error) {
	f, err := l.catalog.Load(name)
	if err != nil {
		return 0, err
	}
	area, only, err := rq.Resolve(f)
	if err != nil {
		return 0, &RequestError{err}
	}
	started := make(chan int64, 1)
	failed := make(chan error, 1)
	opts := l.run
	opts.Area, opts.OnlyTasks, opts.Trigger = area, only, store.TriggerUI
	opts.Started = func(id int64) { started <- id }
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		res, err := flows.Run(l.ctx, f, opts)
		if err != nil {
			l.log.Error("a run started from the UI could not be carried out", "flow", f.Name, "err", err)
			failed <- err
			return
		}
		l.log.Info("run started from the UI ended", "flow", f.Name, "run", res.RunID, "status", res.Status, "dead", res.DeadLetters())
	}()
	select {
	case id := <-started:
		return id, nil
	case err := <-failed:
		return 0, fmt.Errorf("starting a run of %q: %w", f.Name, err)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Replay replays entries in the background, as geoflow dlq replay does; done, when set,
// is called with the outcome.
func (l *Launcher) Replay(entries []dlq.Entry, done func(*flows.ReplayResult, error)) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		res, err := l.ReplayNow(l.ctx, entries)
		if done != nil {
			done(res, err)
		}
	}()
}

// ReplayNow replays entries and returns the outcome; it ends early (what was not
// replayed stays open) when ctx or the launcher's context ends.
func (l *Launcher) ReplayNow(ctx context.Context, entries []dlq.Entry) (*flows.ReplayResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(l.ctx, cancel)
	defer stop()
	res, err := flows.Replay(ctx, entries, l.replay)
	if err != nil {
		l.log.Error("a replay started from the UI could not be carried out", "entries", len(entries), "err", err)
		return nil, err
	}
	ok := 0
	for _, o := range res.Outcomes {
		if o.OK {
			ok++
		}
	}
	l.log.Info("replay started from the UI ended", "entries", len(entries), "replayed", ok, "units", res.Units, "dead", res.Dead)
	return res, nil
}

// Wait waits for the runs and replays started to end; cancel the launcher's context
// first to make them stop.
func (l *Launcher) Wait() { l.wg.Wait() }

// RequestError is a request the API refuses as given (400), not a failure of the server.
type RequestError struct{ Err error }

func (e *RequestError) Error() string { return e.Err.Error() }
func (e *RequestError) Unwrap() error { return e.Err }

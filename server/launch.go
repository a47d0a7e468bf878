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
	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/store"
)

// Launcher starts runs and replays for the web UI's API, in the background, with the
// same code as geoflow run and geoflow dlq replay. What it starts lives as long as the
// context given to NewLauncher: cancelling it stops them as a signal stops the CLI (in
// flight units get their grace, the run is recorded interrupted). To shut down, cancel
// that context, Close (new work is refused with ErrShuttingDown while the server still
// answers), then Wait for what was started to be recorded. Its methods are safe for
// concurrent use.
type Launcher struct {
	ctx     context.Context
	catalog *Catalog
	run     engine.RunOptions
	replay  engine.ReplayOptions
	log     *slog.Logger

	// mu orders Close against the wg.Add of new work: once closed, nothing is added,
	// so Wait never races an Add from zero.
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// ErrShuttingDown is returned by StartRun, Replay and ReplayNow once the launcher is
// closed; the API answers it with 503.
var ErrShuttingDown = errors.New("server: shutting down: no new run or replay starts; try again once the server is back")

// NewLauncher returns a launcher whose runs and replays live until ctx ends. run and
// replay are the options every run and replay gets (Store, HTTP, Logger, Grace; Store
// and Registry are required); catalog finds the flows by name.
func NewLauncher(ctx context.Context, catalog *Catalog, run engine.RunOptions, replay engine.ReplayOptions) (*Launcher, error) {
	if catalog == nil || run.Store.Runs == nil || replay.Store.Runs == nil || replay.Registry == nil {
		return nil, errors.New("server: a launcher needs a catalog, a store and a task registry")
	}
	return &Launcher{ctx: ctx, catalog: catalog, run: run, replay: replay, log: cmp.Or(run.Logger, slog.Default())}, nil
}

// StartRun validates rq against the flow called name and starts the run, returning its
// id once it is recorded. The error is the flow's or the request's problem (ErrNoFlow,
// a bad --bbox or --task: the CLI's words), or why the run could not start.
func (l *Launcher) StartRun(ctx context.Context, name string, rq flows.Scope) (int64, error) {
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
	if err := l.begin(); err != nil {
		return 0, err
	}
	go func() {
		defer l.wg.Done()
		res, err := engine.Run(l.ctx, f, opts)
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
// is called with the outcome. It fails only with ErrShuttingDown.
func (l *Launcher) Replay(entries []dlq.Entry, done func(*engine.ReplayResult, error)) error {
	if err := l.begin(); err != nil {
		return err
	}
	go func() {
		defer l.wg.Done()
		res, err := l.replayNow(l.ctx, entries)
		if done != nil {
			done(res, err)
		}
	}()
	return nil
}

// ReplayNow replays entries and returns the outcome; it ends early (what was not
// replayed stays open) when ctx or the launcher's context ends. Wait waits for it as
// for the replays in the background: its units must be recorded before the store closes.
func (l *Launcher) ReplayNow(ctx context.Context, entries []dlq.Entry) (*engine.ReplayResult, error) {
	if err := l.begin(); err != nil {
		return nil, err
	}
	defer l.wg.Done()
	return l.replayNow(ctx, entries)
}

func (l *Launcher) replayNow(ctx context.Context, entries []dlq.Entry) (*engine.ReplayResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(l.ctx, cancel)
	defer stop()
	res, err := engine.Replay(ctx, entries, l.replay)
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
	l.log.Info("replay started from the UI ended", "entries", len(entries), "replayed", ok, "units", res.Units, "dead", res.Dead, "not_sent", res.NotSent)
	return res, nil
}

// begin counts one more run or replay for Wait, or refuses it once the launcher is
// closed. Each successful begin is matched by one wg.Done.
func (l *Launcher) begin() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrShuttingDown
	}
	l.wg.Add(1)
	return nil
}

// Close makes the launcher refuse new runs and replays with ErrShuttingDown; those
// started go on until the launcher's context ends. Call it before Wait. Closing twice
// is harmless.
func (l *Launcher) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
}

// Wait waits for the runs and replays started (ReplayNow's included) to end, or for
// ctx to end first: then it returns ctx's cause, and what is still going is left to the
// process's exit. Cancel the launcher's context and Close first, or Wait may wait for
// runs that go on, and for new ones.
func (l *Launcher) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		l.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the runs and replays started from the UI: %w", context.Cause(ctx))
	}
}

// RequestError is a request the API refuses as given (400), not a failure of the server.
type RequestError struct{ Err error }

func (e *RequestError) Error() string { return e.Err.Error() }
func (e *RequestError) Unwrap() error { return e.Err }

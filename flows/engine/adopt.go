package engine

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// Adopter finishes the distributed runs whose starting process is gone. Such a run (its
// geoflow run killed, its machine lost) is recorded running with nobody holding it: the
// pool goes on executing its queued units, but nobody follows it, plans what comes after
// them or records its end. Each of the pool's workers runs an Adopter; the run's own lock
// decides which one takes a run over, so exactly one does, and that one follows and
// finishes it as `geoflow run --resume` would, from the flow the run recorded.
//
// Its fields are set before first use; its methods are safe for concurrent use.
type Adopter struct {
	// Store is the database with its job queue: Runs, Units, DeadLetters and Queue are
	// required.
	Store Stores
	// HTTP is what the adopted runs' tasks plan with (a WFS task counts its features).
	HTTP     tasks.HTTP
	Registry *tasks.Registry
	// Secrets, when set, gets the secrets of the flows parsed (flows.Options.Secrets).
	Secrets *redact.Set
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// By names the adopter in the runs it finishes ("worker w2"); required.
	By string
	// Memory is the process's budget, shared with the units it executes; nil gives each
	// run its flow's.
	Memory *tasks.Memory

	mu sync.Mutex
	// runs are the runs it follows, each with what hands it back.
	runs map[int64]context.CancelCauseFunc
	// unloadable are runs whose flow did not load here: said once, not tried again.
	unloadable map[int64]bool
	wg         sync.WaitGroup
}

// Watch adopts what it can (Adopt) at once and then every interval until ctx ends; then
// it hands back the runs it follows (ErrHandedBack: they read as orphans again, for
// another worker to adopt) and returns once each has let go.
func (a *Adopter) Watch(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if _, err := a.Adopt(ctx); err != nil && ctx.Err() == nil {
			a.log().Warn("looking for runs whose starting process is gone", "err", err)
		}
		select {
		case <-ctx.Done():
			a.handBack()
			return
		case <-tick.C:
		}
	}
}

// Adopt takes over each distributed run whose starting process is gone and that no other
// process has taken over meanwhile, and returns their ids. Each is followed in a
// goroutine of its own until it ends or is handed back; ctx only bounds the taking over.
func (a *Adopter) Adopt(ctx context.Context) ([]int64, error) {
	ids, err := a.Store.Queue.OrphanedRuns(ctx)
	if err != nil {
		return nil, err
	}
	var adopted []int64
	for _, id := range ids {
		if a.adopt(ctx, id) {
			adopted = append(adopted, id)
		}
	}
	return adopted, nil
}

// adopt takes run id over and starts following it; it reports false when another process
// had it first, or it cannot be taken over here (said in the log).
func (a *Adopter) adopt(ctx context.Context, id int64) bool {
	log := a.log().With("run", id)
	a.mu.Lock()
	if a.runs == nil {
		a.runs, a.unloadable = map[int64]context.CancelCauseFunc{}, map[int64]bool{}
	}
	_, following := a.runs[id]
	skip := following || a.unloadable[id]
	a.mu.Unlock()
	if skip {
		return false
	}
	f, err := a.flow(ctx, id)
	if err != nil {
		log.Error("a run whose starting process is gone cannot be adopted here; geoflow run --resume takes it over", "err", err)
		return false
	}
	runCtx, handBack := context.WithCancelCause(context.WithoutCancel(ctx))
	a.mu.Lock()
	a.runs[id] = handBack
	a.mu.Unlock()
	started, refused := make(chan struct{}), make(chan error, 1)
	a.wg.Go(func() {
		defer a.forget(id)
		adopted := false
		_, err := Run(runCtx, f, RunOptions{Store: a.Store, HTTP: a.HTTP, Logger: a.log(), ResumeRun: id, Distributed: true,
			AdoptedBy: a.By, Memory: a.Memory, Started: func(int64) { adopted = true; close(started) }})
		switch {
		case !adopted:
			refused <- err
		case err != nil && !errors.Is(err, ErrHandedBack):
			// Its outcome, done or not, Run logs itself; this is a run it could not end.
			log.Error("following an adopted run", "err", a.mask(err))
		}
	})
	select {
	case <-started:
		log.Warn("adopted a run whose starting process is gone: following it to its end", "flow", f.Name, "by", a.By)
		return true
	case err := <-refused:
		if !errors.Is(err, store.ErrNothingToResume) {
			log.Error("adopting a run whose starting process is gone", "err", a.mask(err))
		}
		return false
	}
}

// flow loads the flow run id recorded, as the worker executing its units does. A run
// whose flow does not load here is remembered, and not tried again.
func (a *Adopter) flow(ctx context.Context, id int64) (*flows.Flow, error) {
	info, err := a.Store.Runs.RunInfo(ctx, id)
	if err != nil {
		return nil, err
	}
	f, err := recordedFlow(info, flows.Options{Registry: a.Registry, Secrets: a.Secrets, LookupEnv: workerEnv})
	if err != nil {
		a.mu.Lock()
		a.unloadable[id] = true
		a.mu.Unlock()
		return nil, a.mask(err)
	}
	return f, nil
}

// forget drops run id from those the adopter follows.
func (a *Adopter) forget(id int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if cancel := a.runs[id]; cancel != nil {
		cancel(nil)
	}
	delete(a.runs, id)
}

// handBack lets go of every run the adopter follows and waits until each has.
func (a *Adopter) handBack() {
	a.mu.Lock()
	for _, cancel := range a.runs {
		cancel(ErrHandedBack)
	}
	a.mu.Unlock()
	a.wg.Wait()
}

func (a *Adopter) log() *slog.Logger { return cmp.Or(a.Logger, slog.Default()) }

// mask keeps the flows' secrets out of the log.
func (a *Adopter) mask(err error) error {
	if err == nil || a.Secrets == nil {
		return err
	}
	return errors.New(a.Secrets.String(err.Error()))
}

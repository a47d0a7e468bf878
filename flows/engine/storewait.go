package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/geoflow/geoflow/flows"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// ErrStoreDown is wrapped by the error a run stops with when its store stayed unavailable
// for longer than its store wait. The run is interrupted, not failed: geoflow run --resume
// continues it once the store is back.
var ErrStoreDown = errors.New("engine: the store stayed unavailable past store_wait")

// The backoff between probes of a store that is down: from storeProbeMin, doubling, to
// storeProbeMax, each wait drawn from its upper half (equal jitter, so waits never shrink
// while the store stays down and units of several runs do not probe in step).
const (
	storeProbeMin = 250 * time.Millisecond
	storeProbeMax = 30 * time.Second
)

// WriteProber is a store that can prove its disk takes writes again: a full disk keeps
// answering reads (and pings), so only a write tells it was freed. It is used instead of
// Ping after a fault of class dlq.ClassDatabase or dlq.ClassDisk when the store offers it.
type WriteProber interface {
	// ProbeWrite writes a little to where the store keeps its data, durably, and
	// removes it; it returns the fault when that fails.
	ProbeWrite(ctx context.Context) error
}

// outage is the runner's view of its store across every unit and every bookkeeping write:
// a store fault starts it, a write that succeeds ends it, and in between the store is
// probed by one waiter at a time with a backoff that grows for as long as the outage
// lasts (a probe that passes does not reset it: a full disk that takes the probe's few
// bytes may refuse a unit's write again). It is logged once when it starts and once when
// it ends, with the faults counted in between, and it ends the run when it outlasts the
// store wait.
type outage struct {
	mu      sync.Mutex
	down    bool
	since   time.Time
	faults  int           // store faults seen since the outage started
	probes  int           // probes made since the outage started
	next    time.Duration // the backoff before the next probe
	last    *store.Fault  // the latest fault, for the log and the run's error
	round   *probeRound   // the probe going on, which later waiters join
	gone    error         // set once the outage outlasted the store wait; final in a run
	stopped bool          // the run has been told to stop
	// stop is the run's: an outage past the store wait stops it, and once its grace is
	// spent nothing waits for the store. Nil for the runners of a replay and of a pool's
	// worker, whose units are each left for a resume instead.
	stop *stopping
}

// probeRound is one wait-then-probe that every waiter of the moment shares.
type probeRound struct {
	done chan struct{}
	ok   bool
}

// storeWait returns the run's store wait.
func (r *runner) storeWait() time.Duration {
	if r.opts.StoreWait > 0 {
		return r.opts.StoreWait
	}
	return flows.DefaultStoreWait
}

// storeGone returns the error the run stops with when its store stayed down past the
// store wait, or nil.
func (r *runner) storeGone() error {
	r.outage.mu.Lock()
	defer r.outage.mu.Unlock()
	return r.outage.gone
}

// leftForResume tells a unit that ends with err while its store is down and the run is
// stopping (the store wait spent, or a signal) from a unit that failed: the store's fault
// is not the unit's, and a dead letter could not be recorded anyway. The unit is left as
// it is recorded, and a resume runs it again.
func (r *runner) leftForResume(work context.Context, err error) bool {
	if _, sink := store.AsFault(err); !sink {
		return false
	}
	return r.storeGone() != nil || work.Err() != nil
}

// halted tells whether the run's in-flight work has been cut.
func (r *runner) halted() bool {
	select {
	case <-r.outage.stop.Cut():
		return true
	default:
		return false
	}
}

// storeAnswered ends an outage: a write went through, so the store is back. It is cheap
// when there is no outage (every unit calls it when it commits).
func (r *runner) storeAnswered(log *slog.Logger) {
	if !r.storeDown.Load() {
		return
	}
	o := &r.outage
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.down || (o.gone != nil && r.outage.stop != nil) {
		return // a run that gave up on its store is stopping; a worker's goes on
	}
	log.Info("the store answers again: a write went through", "down_for", time.Since(o.since).Round(time.Millisecond),
		"faults", o.faults, "probes", o.probes)
	o.down, o.faults, o.probes, o.last, o.gone = false, 0, 0, nil, nil
	r.storeDown.Store(false)
}

// waitStore waits for the store to answer again after fault f and reports whether it
// does; env is the unit's (nil for the run's bookkeeping). While the store is down, one
// waiter at a time sleeps the outage's backoff and probes it: after a database or disk
// fault with the store's write probe when it offers one (see WriteProber), and after a
// database fault with its Ping; a disk fault of a task's own files (a spool, a tile
// directory) on a store without a write probe has no other probe than the unit's next
// write, after the same backoff. Every other waiter of the moment takes that probe's
// answer.
//
// It reports false once ctx is done or the run's in-flight work is cut (a stop's grace
// spent: bookkeeping then makes one attempt, as shutdown has a deadline), or when the
// outage has lasted the run's store wait:
// the run then stops (see storeGone), and every waiter gets false. deadline is the unit's
// own (zero for none): once it has passed, a unit whose fault began a new outage, after
// the store had taken other writes since that deadline, stops waiting, because the store
// answers and only its own writes fail (a deadlock over and over); a unit caught in an
// outage waits for as long as the run does.
func (r *runner) waitStore(ctx context.Context, env *tasks.Env, f *store.Fault, deadline time.Time) bool {
	log := r.log
	if env != nil {
		log = env.Logger
	}
	if r.halted() {
		return false // the run's grace is spent: one attempt, no wait
	}
	o := &r.outage
	o.mu.Lock()
	if o.gone != nil {
		o.mu.Unlock()
		return false
	}
	if !o.down {
		o.down, o.since, o.faults, o.probes, o.next = true, time.Now(), 0, 0, storeProbeMin
		r.storeDown.Store(true)
		log.Warn("the store failed; units wait for it with a growing backoff (the source hosts are not charged)",
			"class", f.Class, "err", f.Error(), "store_wait", r.storeWait())
	}
	o.faults++
	o.last = f
	if !deadline.IsZero() && o.since.After(deadline) {
		o.mu.Unlock()
		return false
	}
	for {
		if o.gone != nil {
			o.mu.Unlock()
			return false
		}
		round, lead := o.round, false
		if round == nil {
			round, lead = &probeRound{done: make(chan struct{})}, true
			o.round = round
		}
		o.mu.Unlock()
		if lead {
			r.probeRound(ctx, log, round, f)
		}
		select {
		case <-round.done:
		case <-ctx.Done():
			return false
		case <-r.outage.stop.Cut():
			return false
		}
		if round.ok {
			return ctx.Err() == nil
		}
		o.mu.Lock()
	}
}

// probeRound sleeps the outage's backoff (never past its store wait), probes the store
// and hands the answer to everyone waiting on round. A probe that fails once the store
// wait is spent ends the outage for good and stops the run.
func (r *runner) probeRound(ctx context.Context, log *slog.Logger, round *probeRound, f *store.Fault) {
	o := &r.outage
	o.mu.Lock()
	d := o.next
	o.next = min(2*o.next, storeProbeMax)
	deadline := o.since.Add(r.storeWait())
	probe := o.probes + 1
	o.mu.Unlock()
	wait := d/2 + rand.N(d/2+1)
	if left := time.Until(deadline); wait > left {
		wait = max(left, 0)
	}
	log.Debug("probing the store", "probe", probe, "probe_in", wait.Round(time.Millisecond), "class", f.Class)
	t := time.NewTimer(wait)
	select {
	case <-ctx.Done():
		t.Stop()
	case <-r.outage.stop.Cut():
		t.Stop()
	case <-t.C:
		round.ok = r.probe(ctx, f) == nil
	}
	o.mu.Lock()
	o.probes++
	o.round = nil
	var stop bool
	if !round.ok && ctx.Err() == nil && !r.halted() && !time.Now().Before(deadline) {
		o.gone = fmt.Errorf("%w: down for %s (%d faults, %d probes), last: %v", ErrStoreDown,
			time.Since(o.since).Round(time.Second), o.faults, o.probes, o.last)
		stop, o.stopped = !o.stopped, true
		log.Error("the store stayed down for the whole store wait: the run stops, interrupted; continue it with geoflow run --resume once the store is back",
			"store_wait", r.storeWait(), "down_for", time.Since(o.since).Round(time.Millisecond), "faults", o.faults, "probes", o.probes,
			"class", o.last.Class, "err", o.last.Error())
	}
	o.mu.Unlock()
	close(round.done)
	if stop {
		r.outage.stop.Stop(o.gone)
	}
}

// probe asks the store whether it takes what failed again.
func (r *runner) probe(ctx context.Context, f *store.Fault) error {
	if p, ok := r.opts.Store.Units.(WriteProber); ok && (f.Class == dlq.ClassDatabase || f.Class == dlq.ClassDisk) {
		if err := p.ProbeWrite(ctx); err != nil {
			return err
		}
	}
	if f.Class == dlq.ClassDatabase {
		return r.opts.Store.Units.Ping(ctx)
	}
	return nil // a task's own disk: the unit's next write is the probe
}

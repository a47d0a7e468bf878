// Package schedule fires geoflow flows on their `schedule:`: it is the engine of
// geoflow serve.
//
// Several instances may run over one store for availability. Each fire, a (flow,
// scheduled time) pair, is claimed in the store before it runs, so exactly one instance
// runs it; the others skip it. Whether the previous run of a flow is still going is judged
// from the store too (a scheduled run holds a lock on its flow; a manual run holds one on
// itself), so `overlap: skip` and `queue` hold across instances. Every claimed
// fire stays recorded with what became of it, which also tells the last fire time that
// `catchup:` counts missed fires from.
package schedule

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/store"
)

// Overlap and catchup policies, as flows spell them.
const (
	OverlapSkip  = "skip"
	OverlapQueue = "queue"
	OverlapAllow = "allow"
	CatchupNone  = "none"
	CatchupLast  = "last"
	CatchupAll   = "all"
)

// TriggerSchedule is the trigger recorded on the runs the scheduler starts.
const TriggerSchedule = "schedule"

// RunFunc runs the fire of flow f scheduled for at. ctx is cancelled when the scheduler
// has stopped and its drain period has passed: the run should then stop gracefully, as
// engine.Run does. The error is for runs that could not be carried out at all.
type RunFunc func(ctx context.Context, f *flows.Flow, at time.Time) (*engine.Result, error)

// Options configure a Scheduler. Zero values mean defaults.
type Options struct {
	// Store is the database that fires are claimed in; required.
	Store store.Fires
	// Dir holds the flow files (*.yaml, *.yml); those with a schedule are fired. Required.
	Dir string
	// Flows tells how flow files are read; its Registry is required.
	Flows flows.Options
	// RunOptions is the template of every run (its Store is required; Trigger is set to
	// "schedule"). Unused when Run is set.
	RunOptions engine.RunOptions
	// Run runs one fire. Defaults to engine.Run with RunOptions.
	Run RunFunc
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics receives fire and run metrics; nil records none.
	Metrics *Metrics
	// Instance names this process in the fires it claims. Defaults to hostname:pid.
	Instance string
	// Drain is how long runs still going at shutdown may go on before their context is
	// cancelled (they then stop as RunOptions.Grace allows). Defaults to 0: cancelled at once.
	Drain time.Duration
	// Watch is how often Dir is checked for changed flow files. Defaults to 2s; negative
	// turns watching off (Reload still works).
	Watch time.Duration
	// QueuePoll is how often a queued fire checks whether the previous run has ended.
	// Defaults to 1s.
	QueuePoll time.Duration
	// FireRetention is how long fires stay recorded (a flow's latest always stays, for
	// catchup). Defaults to 30 days.
	FireRetention time.Duration
	// Clock tells the time fire times are computed from and waits for them. Defaults to
	// the wall clock.
	Clock Clock
}

// Scheduler fires the scheduled flows of a directory. Create it with New and start it
// with Run; Reload and Flows are safe to call from other goroutines while it runs.
type Scheduler struct {
	o       Options
	log     *slog.Logger
	reloads chan chan error

	loops sync.WaitGroup // entry loops
	fires sync.WaitGroup // fires and catchups in flight

	mu      sync.Mutex
	entries map[string]*entry     // by file
	states  map[string]*flowState // by flow name, across versions of the flow
}

// entry is one flow file and the version of it being fired.
type entry struct {
	file    string
	hash    [sha256.Size]byte // of the file last read, valid or not
	flow    *flows.Flow       // the version fired; nil when the file never loaded
	sched   *Schedule
	problem string             // why the file's latest content did not load; "" when it did
	stop    context.CancelFunc // stops the loop; nil when none runs
	last    time.Time          // the last fire time the loop reached
	next    time.Time          // the next fire time; zero when none
}

// flowState is what a process knows of a flow's runs, whichever version started them.
type flowState struct {
	running int
	waiting []time.Time // queued fires, earliest first
}

// New checks opts and returns a Scheduler.
func New(opts Options) (*Scheduler, error) {
	if opts.Store == nil {
		return nil, errors.New("scheduler: no store")
	}
	if opts.Dir == "" {
		return nil, errors.New("scheduler: no flows directory")
	}
	if opts.Flows.Registry == nil {
		return nil, errors.New("scheduler: no task registry")
	}
	if opts.Instance == "" {
		host, _ := os.Hostname()
		opts.Instance = fmt.Sprintf("%s:%d", cmp.Or(host, "localhost"), os.Getpid())
	}
	opts.Watch = cmp.Or(opts.Watch, 2*time.Second)
	opts.QueuePoll = cmp.Or(opts.QueuePoll, time.Second)
	opts.FireRetention = cmp.Or(opts.FireRetention, 30*24*time.Hour)
	if opts.Clock == nil {
		opts.Clock = wallClock{}
	}
	s := &Scheduler{
		o:       opts,
		log:     cmp.Or(opts.Logger, slog.Default()),
		reloads: make(chan chan error),
		entries: map[string]*entry{},
		states:  map[string]*flowState{},
	}
	if s.o.Run == nil {
		s.o.Run = s.runFlow
	}
	return s, nil
}

func (s *Scheduler) runFlow(ctx context.Context, f *flows.Flow, at time.Time) (*engine.Result, error) {
	o := s.o.RunOptions
	o.Trigger = TriggerSchedule
	o.Logger = cmp.Or(o.Logger, s.log).With("scheduled_for", at.Format(time.RFC3339))
	o.ScheduledFor = &at
	return engine.Run(ctx, f, o)
}

// Run loads the flows, makes up missed fires as each flow's catchup says, and fires flows
// until ctx is cancelled. It then stops firing, lets the runs still going finish within
// Drain, cancels the rest (they are recorded interrupted, resumable with geoflow run
// --resume) and returns once every run has ended. The error is non-nil only when the
// flows directory cannot be read at start.
func (s *Scheduler) Run(ctx context.Context) error {
	runCtx, cancelRuns := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRuns()
	if err := s.reload(ctx, runCtx, true); err != nil {
		return err
	}
	var watch <-chan time.Time
	if s.o.Watch > 0 {
		t := time.NewTicker(s.o.Watch)
		defer t.Stop()
		watch = t.C
	}
	prune := time.NewTicker(time.Hour)
	defer prune.Stop()
	s.pruneFires(ctx)
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case done := <-s.reloads:
			done <- s.reload(ctx, runCtx, false)
		case <-watch:
			_ = s.reload(ctx, runCtx, false)
		case <-prune.C:
			s.pruneFires(ctx)
		}
	}
	s.loops.Wait() // no fire starts after this
	ended := make(chan struct{})
	go func() {
		s.fires.Wait()
		close(ended)
	}()
	if s.inFlight() > 0 {
		s.log.Info("stopping: no more fires; waiting for runs still going", "drain", s.o.Drain)
	}
	drain := time.NewTimer(s.o.Drain)
	defer drain.Stop()
	select {
	case <-ended:
	case <-drain.C:
		if n := s.inFlight(); n > 0 {
			s.log.Warn("stopping: runs still going are asked to stop; they will be recorded interrupted", "runs", n)
		}
		cancelRuns()
		<-ended
	}
	s.log.Info("scheduler stopped")
	return nil
}

// Reload reads the flows directory again now, as a changed file would. A flow that no
// longer loads keeps its previous version firing, and the problem is logged. It waits for
// Run to take the request (ctx bounds the wait) and fails when the directory cannot be
// read.
func (s *Scheduler) Reload(ctx context.Context) error {
	done := make(chan error, 1)
	select {
	case s.reloads <- done:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Scheduler) inFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, st := range s.states {
		n += st.running + len(st.waiting)
	}
	return n
}

func (s *Scheduler) pruneFires(ctx context.Context) {
	n, err := s.o.Store.PruneFires(ctx, s.o.Clock.Now().Add(-s.o.FireRetention))
	if err != nil {
		s.log.Error("pruning old scheduled fires", "err", err)
	} else if n > 0 {
		s.log.Info("pruned old scheduled fires", "fires", n)
	}
}

func (s *Scheduler) state(flow string) *flowState {
	st := s.states[flow]
	if st == nil {
		st = &flowState{}
		s.states[flow] = st
	}
	return st
}

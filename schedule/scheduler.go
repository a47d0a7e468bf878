// Package scheduler fires geoflow flows on their `schedule:`: it is the engine of
// geoflow serve.
//
// Several instances may run over one database for availability. Each fire, a (flow,
// scheduled time) pair, is claimed in the database before it runs, so exactly one instance
// runs it; the others skip it. Whether the previous run of a flow is still going is judged
// from the database too (a scheduled run holds an advisory lock on its flow; a manual run
// holds one on itself), so `overlap: skip` and `queue` hold across instances. Every claimed
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
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/store/postgis"
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

const (
	// maxCatchup caps the missed fires `catchup: all` makes up: the latest ones.
	maxCatchup = 100
	// maxQueued caps the fires of one flow waiting their turn in a process (overlap: queue);
	// more are recorded as skipped.
	maxQueued = 16
)

// RunFunc runs the fire of flow f scheduled for at. ctx is cancelled when the scheduler
// has stopped and its drain period has passed: the run should then stop gracefully, as
// flows.Run does. The error is for runs that could not be carried out at all.
type RunFunc func(ctx context.Context, f *flows.Flow, at time.Time) (*flows.Result, error)

// Options configure a Scheduler. Zero values mean defaults.
type Options struct {
	// Store is the database that fires are claimed in; required.
	Store *postgis.Store
	// Dir holds the flow files (*.yaml, *.yml); those with a schedule are fired. Required.
	Dir string
	// Flows tells how flow files are read; its Registry is required.
	Flows flows.Options
	// RunOptions is the template of every run (Store defaults to Store; Trigger is set to
	// "schedule"). Unused when Run is set.
	RunOptions flows.RunOptions
	// Run runs one fire. Defaults to flows.Run with RunOptions.
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
	// Now tells the time fire times are computed from. Defaults to time.Now.
	Now func() time.Time
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
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.RunOptions.Store == nil {
		opts.RunOptions.Store = opts.Store
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

func (s *Scheduler) runFlow(ctx context.Context, f *flows.Flow, at time.Time) (*flows.Result, error) {
	o := s.o.RunOptions
	o.Trigger = TriggerSchedule
	o.Logger = cmp.Or(o.Logger, s.log).With("scheduled_for", at.Format(time.RFC3339))
	o.ScheduledFor = &at
	return flows.Run(ctx, f, o)
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
	n, err := s.o.Store.PruneFires(ctx, s.o.Now().Add(-s.o.FireRetention))
	if err != nil {
		s.log.Error("pruning old scheduled fires", "err", err)
	} else if n > 0 {
		s.log.Info("pruned old scheduled fires", "fires", n)
	}
}

// flowFiles lists the flow files of dir.
func flowFiles(dir string) ([]string, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the flows directory: %w", err)
	}
	var out []string
	for _, de := range des {
		name := de.Name()
		if de.IsDir() || strings.HasPrefix(name, ".") {
			continue
		}
		if ext := filepath.Ext(name); ext == ".yaml" || ext == ".yml" {
			out = append(out, filepath.Join(dir, name))
		}
	}
	sort.Strings(out)
	return out, nil
}

// reload brings the entries in line with the directory. Files are read and hashed each
// time; only changed ones are parsed again. ctx bounds the loops, runCtx the runs.
func (s *Scheduler) reload(ctx, runCtx context.Context, startup bool) error {
	files, err := flowFiles(s.o.Dir)
	if err != nil {
		if startup {
			return err
		}
		s.log.Error("reloading flows: the previous ones run on", "err", err)
		return err
	}
	now := s.o.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	present := map[string]bool{}
	for _, file := range files {
		present[file] = true
		src, err := os.ReadFile(file)
		if err != nil {
			s.setProblem(file, [sha256.Size]byte{}, err)
			continue
		}
		hash := sha256.Sum256(src)
		old := s.entries[file]
		if old != nil && old.hash == hash {
			continue
		}
		f, sched, err := s.parse(file, src)
		if err != nil {
			s.setProblem(file, hash, err)
			continue
		}
		if f.Schedule == "" {
			if old != nil && old.flow != nil {
				s.remove(old, "flow no longer scheduled")
			}
			// Remembered, unlisted, so that it is not parsed again until it changes.
			s.entries[file] = &entry{file: file, hash: hash}
			continue
		}
		e := &entry{file: file, hash: hash, flow: f, sched: sched}
		from := now
		if old != nil && old.flow != nil {
			if old.flow.Name == f.Name && old.last.After(now.Add(-time.Second)) {
				// Do not fire again what the previous version just fired.
				from = old.last
			}
			s.stopEntry(old)
			s.log.Info("flow reloaded", "flow", f.Name, "file", file, "schedule", sched.Spec, "timezone", sched.Location.String())
		} else {
			s.log.Info("flow scheduled", "flow", f.Name, "file", file, "schedule", sched.Spec,
				"timezone", sched.Location.String(), "overlap", f.Overlap, "catchup", f.Catchup)
		}
		s.entries[file] = e
		s.o.Metrics.flowLoaded(f.Name)
		if startup && f.Catchup != CatchupNone {
			s.startCatchup(ctx, runCtx, e, now)
		}
		s.startLoop(ctx, runCtx, e, from)
	}
	for file, e := range s.entries {
		if !present[file] {
			s.remove(e, "flow file removed")
		}
	}
	invalid, scheduled := 0, 0
	for _, e := range s.entries {
		if e.problem != "" {
			invalid++
		}
		if e.flow != nil {
			scheduled++
		}
	}
	s.o.Metrics.invalidFiles(invalid)
	if startup && scheduled == 0 {
		s.log.Warn("no scheduled flows: nothing will fire until a flow file with a schedule: appears", "dir", s.o.Dir)
	}
	return nil
}

// parse reads a flow and its schedule, and rejects a second file naming a flow that
// another file already holds.
func (s *Scheduler) parse(file string, src []byte) (*flows.Flow, *Schedule, error) {
	f, err := flows.Parse(file, src, s.o.Flows)
	if err != nil {
		return nil, nil, err
	}
	for other, e := range s.entries {
		if other != file && e.flow != nil && e.flow.Name == f.Name {
			return nil, nil, fmt.Errorf("%s: flow %q is already defined in %s", file, f.Name, other)
		}
	}
	if f.Schedule == "" {
		return f, nil, nil
	}
	sched, err := ParseSchedule(f.Schedule, f.Timezone)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	return f, sched, nil
}

// setProblem records why file did not load; its previous version, if any, fires on.
// s.mu is held.
func (s *Scheduler) setProblem(file string, hash [sha256.Size]byte, err error) {
	e := s.entries[file]
	if e == nil {
		e = &entry{file: file}
		s.entries[file] = e
	}
	e.hash, e.problem = hash, err.Error()
	msg := strings.ReplaceAll(err.Error(), "\n", "; ")
	if e.flow != nil {
		s.log.Error("flow file does not load: its previous version runs on", "flow", e.flow.Name, "file", file, "problem", msg)
	} else {
		s.log.Error("flow file does not load", "file", file, "problem", msg)
	}
}

// remove stops and forgets an entry. s.mu is held.
func (s *Scheduler) remove(e *entry, why string) {
	s.stopEntry(e)
	delete(s.entries, e.file)
	if e.flow != nil {
		s.log.Info(why, "flow", e.flow.Name, "file", e.file)
		s.o.Metrics.flowRemoved(e.flow.Name)
	}
}

func (s *Scheduler) stopEntry(e *entry) {
	if e.stop != nil {
		e.stop()
		e.stop = nil
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

// startLoop fires e's flow at each of its fire times after from. s.mu is held.
func (s *Scheduler) startLoop(ctx, runCtx context.Context, e *entry, from time.Time) {
	loopCtx, stop := context.WithCancel(ctx)
	e.stop = stop
	s.loops.Add(1)
	go func() {
		defer s.loops.Done()
		s.loop(loopCtx, ctx, runCtx, e, from)
	}()
}

// loop waits for each fire time of e and hands the fire to a goroutine of its own, so a
// long run never delays the next fire. loopCtx ends with this version of the flow, ctx
// with the schedule.
func (s *Scheduler) loop(loopCtx, ctx, runCtx context.Context, e *entry, last time.Time) {
	log := s.log.With("flow", e.flow.Name)
	for {
		now := s.o.Now()
		next := e.sched.Next(later(now, last))
		s.mu.Lock()
		e.next = next
		s.mu.Unlock()
		if next.IsZero() {
			log.Warn("the schedule never fires again", "schedule", e.sched.Spec)
			return
		}
		s.o.Metrics.next(e.flow.Name, float64(next.UnixMilli())/1e3)
		t := time.NewTimer(next.Sub(now))
		select {
		case <-loopCtx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if loopCtx.Err() != nil {
			return
		}
		last = next
		s.mu.Lock()
		e.last = next
		s.mu.Unlock()
		s.fires.Add(1)
		go func() {
			defer s.fires.Done()
			s.fire(ctx, runCtx, e.flow, next, false)
		}()
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// startCatchup makes up the fires of e missed while no instance was up, counted from the
// flow's last recorded fire; a flow that never fired has missed nothing. s.mu is held.
func (s *Scheduler) startCatchup(ctx, runCtx context.Context, e *entry, now time.Time) {
	f := e.flow
	log := s.log.With("flow", f.Name)
	last, ok, err := s.o.Store.LastFire(ctx, f.Name)
	if err != nil {
		log.Error("catchup: cannot read the last fire; no missed fire is made up", "err", err)
		return
	}
	if !ok {
		return
	}
	missed, dropped := e.sched.Between(last, now, maxCatchup)
	if len(missed) == 0 {
		return
	}
	if f.Catchup == CatchupLast {
		dropped += len(missed) - 1
		missed = missed[len(missed)-1:]
	}
	log.Info("catching up on missed fires", "catchup", f.Catchup, "last_fire", last, "fires", len(missed), "left_out", dropped)
	s.fires.Add(1)
	go func() {
		defer s.fires.Done()
		// In order, each after the previous has ended, so they do not skip each other.
		for _, at := range missed {
			if ctx.Err() != nil {
				return
			}
			s.fire(ctx, runCtx, f, at, true)
		}
	}()
}

// fire claims the fire of f at at and, when this process wins it, applies the overlap
// policy and runs it. Everything that happens to the fire is recorded on it.
func (s *Scheduler) fire(ctx, runCtx context.Context, f *flows.Flow, at time.Time, catchup bool) {
	log := s.log.With("flow", f.Name, "scheduled_for", at.Format(time.RFC3339))
	// Bookkeeping outlives shutdown: a claimed fire must say what became of it.
	final := context.WithoutCancel(ctx)
	mark := func(status string, runID int64, msg string) {
		if err := s.o.Store.MarkFire(final, f.Name, at, status, runID, msg); err != nil {
			log.Error("recording the fire", "status", status, "err", err)
		}
	}
	won, err := s.o.Store.ClaimFire(final, f.Name, at, s.o.Instance, catchup)
	if err != nil {
		log.Error("cannot claim the fire; it is left to other instances", "err", err)
		s.o.Metrics.fire(f.Name, "error")
		return
	}
	if !won {
		log.Debug("fire claimed by another instance")
		s.o.Metrics.fire(f.Name, "claimed_elsewhere")
		return
	}
	lock, ok := s.acquire(ctx, f, at, log, mark)
	if !ok {
		return
	}
	defer lock.Release()

	s.mu.Lock()
	s.state(f.Name).running++
	s.mu.Unlock()
	s.o.Metrics.running(f.Name, 1)
	defer func() {
		s.mu.Lock()
		s.state(f.Name).running--
		s.mu.Unlock()
		s.o.Metrics.running(f.Name, -1)
	}()
	mark(postgis.FireRunning, 0, "")
	log.Info("fire", "catchup", catchup)
	res, err := s.o.Run(runCtx, f, at)
	if err != nil {
		log.Error("the scheduled run could not start", "err", err)
		mark(postgis.FireFailed, 0, err.Error())
		s.o.Metrics.fire(f.Name, "failed")
		return
	}
	mark(postgis.FireRan, res.RunID, "")
	s.o.Metrics.fire(f.Name, "ran")
	s.o.Metrics.ObserveRun(f.Name, res)
}

// acquire applies f's overlap policy to a claimed fire. It returns the flow lock to hold
// while the run goes (nil for overlap: allow) and whether to run at all; when not, the fire
// is already recorded as skipped or cancelled.
func (s *Scheduler) acquire(ctx context.Context, f *flows.Flow, at time.Time, log *slog.Logger,
	mark func(status string, runID int64, msg string)) (*postgis.FlowLock, bool) {
	if f.Overlap == OverlapAllow {
		return nil, true
	}
	s.mu.Lock()
	queueing := f.Overlap == OverlapQueue && len(s.state(f.Name).waiting) > 0
	s.mu.Unlock()
	var (
		lock *postgis.FlowLock
		busy = true
		err  error
	)
	if !queueing { // else the fire waits behind those already queued
		lock, busy, err = s.tryLock(ctx, f.Name)
		if err == nil && !busy {
			return lock, true
		}
	}
	if err != nil && ctx.Err() != nil {
		// Shutdown came while the fire was being claimed.
		mark(postgis.FireCancelled, 0, "shutdown came before the fire could start")
		s.o.Metrics.fire(f.Name, postgis.FireCancelled)
		return nil, false
	}
	if f.Overlap != OverlapQueue || err != nil {
		msg := "the previous run of the flow is still going"
		if err != nil {
			msg = "cannot tell whether the previous run is still going: " + err.Error()
			log.Error("fire skipped", "err", err)
		} else {
			log.Warn("fire skipped: the previous run of the flow is still going", "overlap", f.Overlap)
		}
		mark(postgis.FireSkippedOverlap, 0, msg)
		s.o.Metrics.fire(f.Name, postgis.FireSkippedOverlap)
		return nil, false
	}

	// overlap: queue. Fires of one flow take their turn in order within this process.
	s.mu.Lock()
	st := s.state(f.Name)
	if len(st.waiting) >= maxQueued {
		s.mu.Unlock()
		log.Warn("fire skipped: too many fires of the flow are queued", "queued", maxQueued)
		mark(postgis.FireSkippedOverlap, 0, fmt.Sprintf("%d fires already queued", maxQueued))
		s.o.Metrics.fire(f.Name, postgis.FireSkippedOverlap)
		return nil, false
	}
	i, _ := slices.BinarySearchFunc(st.waiting, at, time.Time.Compare)
	st.waiting = slices.Insert(st.waiting, i, at)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		st := s.state(f.Name)
		if i := slices.IndexFunc(st.waiting, at.Equal); i >= 0 {
			st.waiting = slices.Delete(st.waiting, i, i+1)
		}
		s.mu.Unlock()
	}()
	log.Info("fire queued: the previous run of the flow is still going")
	mark(postgis.FireQueued, 0, "")
	t := time.NewTicker(s.o.QueuePoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			log.Info("queued fire cancelled by shutdown")
			mark(postgis.FireCancelled, 0, "shutdown came before the previous run ended")
			s.o.Metrics.fire(f.Name, postgis.FireCancelled)
			return nil, false
		case <-t.C:
		}
		s.mu.Lock()
		first := s.state(f.Name).waiting[0].Equal(at)
		s.mu.Unlock()
		if !first {
			continue
		}
		lock, busy, err := s.tryLock(ctx, f.Name)
		if err != nil {
			if ctx.Err() == nil {
				log.Error("queued fire: checking the previous run", "err", err)
			}
			continue
		}
		if !busy {
			return lock, true
		}
	}
}

// tryLock takes the flow's exclusive lock unless a run of the flow is going anywhere: a
// scheduled one (it holds the lock) or a manual one (recorded running, its run locked).
func (s *Scheduler) tryLock(ctx context.Context, flow string) (lock *postgis.FlowLock, busy bool, err error) {
	lock, ok, err := s.o.Store.TryLockFlow(ctx, flow, false)
	if err != nil || !ok {
		return nil, true, err
	}
	running, err := s.o.Store.FlowRunning(ctx, flow)
	if err != nil || running {
		lock.Release()
		return nil, true, err
	}
	return lock, false, nil
}

// FlowInfo is a scheduled flow as operators see it.
type FlowInfo struct {
	Name     string `json:"name"`
	File     string `json:"file"`
	Schedule string `json:"schedule"`
	Timezone string `json:"timezone"`
	Overlap  string `json:"overlap"`
	Catchup  string `json:"catchup"`
	// NextFires are the next fire times, in the flow's time zone.
	NextFires []time.Time `json:"next_fires"`
	// Running and Queued count this process's runs of the flow; 0 in schedule list.
	Running int `json:"running"`
	Queued  int `json:"queued"`
	// Problem says why the file's latest content did not load; the version described,
	// if any, runs on.
	Problem string `json:"problem,omitempty"`
}

func info(f *flows.Flow, sched *Schedule, file string, now time.Time, n int) FlowInfo {
	fi := FlowInfo{File: file, NextFires: []time.Time{}}
	if f != nil {
		fi.Name, fi.Overlap, fi.Catchup = f.Name, f.Overlap, f.Catchup
	}
	if sched != nil {
		fi.Schedule, fi.Timezone = sched.Spec, sched.Location.String()
		fi.NextFires = sched.NextN(now, n)
	}
	return fi
}

// Flows describes the scheduled flows, and the files that did not load, with the next n
// fire times of each; sorted by flow name.
func (s *Scheduler) Flows(n int) []FlowInfo {
	now := s.o.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []FlowInfo{}
	for _, e := range s.entries {
		if e.flow == nil && e.problem == "" {
			continue // a flow without a schedule
		}
		fi := info(e.flow, e.sched, e.file, now, n)
		fi.Problem = e.problem
		if e.flow != nil {
			if st := s.states[e.flow.Name]; st != nil {
				fi.Running, fi.Queued = st.running, len(st.waiting)
			}
		}
		out = append(out, fi)
	}
	sortInfos(out)
	return out
}

func sortInfos(fis []FlowInfo) {
	sort.Slice(fis, func(i, j int) bool {
		if fis[i].Name != fis[j].Name {
			return fis[i].Name < fis[j].Name
		}
		return fis[i].File < fis[j].File
	})
}

// List reads the flows of dir without a database and describes the scheduled ones with
// their next n fire times after now, for geoflow schedule list. Files that do not load
// are described with their problem.
func List(dir string, opts flows.Options, now time.Time, n int) ([]FlowInfo, error) {
	files, err := flowFiles(dir)
	if err != nil {
		return nil, err
	}
	out := []FlowInfo{}
	names := map[string]string{}
	for _, file := range files {
		f, err := flows.Load(file, opts)
		if err != nil {
			fi := info(nil, nil, file, now, n)
			fi.Problem = err.Error()
			out = append(out, fi)
			continue
		}
		if f.Schedule == "" {
			continue
		}
		sched, err := ParseSchedule(f.Schedule, f.Timezone)
		fi := info(f, sched, file, now, n)
		if err != nil {
			fi.Problem = err.Error()
		} else if other, dup := names[f.Name]; dup {
			fi.Problem = fmt.Sprintf("flow %q is already defined in %s", f.Name, other)
		}
		names[f.Name] = cmp.Or(names[f.Name], file)
		out = append(out, fi)
	}
	sortInfos(out)
	return out, nil
}

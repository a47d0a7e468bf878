package schedule_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/schedule"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/postgis"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/wfs"
)

func TestMain(m *testing.M) { testdb.Main(m) }

func registry() *tasks.Registry {
	r := &tasks.Registry{}
	r.Register(wfs.Kind())
	return r
}

func openStore(t *testing.T) (*postgis.Store, string) {
	t.Helper()
	url := testdb.URL(t)
	ctx := context.Background()
	db, err := postgis.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db, url
}

// flowSpec writes a flow harvesting wfsURL (never fetched when runs are faked).
type flowSpec struct {
	name, schedule, overlap, catchup, wfsURL string
}

func (fs flowSpec) yaml() string {
	s := fmt.Sprintf("name: %s\nschedule: %q\n", fs.name, fs.schedule)
	if fs.overlap != "" {
		s += "overlap: " + fs.overlap + "\n"
	}
	if fs.catchup != "" {
		s += "catchup: " + fs.catchup + "\n"
	}
	url := fs.wfsURL
	if url == "" {
		url = "http://127.0.0.1:1/wfs"
	}
	return s + fmt.Sprintf("tasks:\n  parcels:\n    type: wfs\n    url: %s/wfs\n    typename: parcels\n    target: {table: %s}\n", url, fs.name)
}

func writeFile(t *testing.T, path, src string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

func flowDir(t *testing.T, specs ...flowSpec) string {
	t.Helper()
	dir := t.TempDir()
	for _, fs := range specs {
		writeFile(t, filepath.Join(dir, fs.name+".yaml"), fs.yaml())
	}
	return dir
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// recorder is a fake run: it records each fire and how many ran at once.
type recorder struct {
	mu        sync.Mutex
	fires     []time.Time
	active    int
	maxActive int
}

// run returns runs that take d on clk, or until they are cancelled. A fire is recorded
// once its run waits on clk, so a test that saw it may move clk past its end.
func (r *recorder) run(clk schedule.Clock, d time.Duration) schedule.RunFunc {
	return func(ctx context.Context, f *flows.Flow, at time.Time) (*flows.Result, error) {
		end := clk.After(d)
		r.mu.Lock()
		r.fires = append(r.fires, at)
		r.active++
		r.maxActive = max(r.maxActive, r.active)
		r.mu.Unlock()
		select {
		case <-end:
		case <-ctx.Done():
		}
		r.mu.Lock()
		r.active--
		r.mu.Unlock()
		return &flows.Result{Status: store.Done}, nil
	}
}

func (r *recorder) snapshot() (fires []time.Time, maxActive int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.fires...), r.maxActive
}

// waitFires waits until n fires have started their run.
func (r *recorder) waitFires(t *testing.T, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d fires ran", n), func() bool {
		fires, _ := r.snapshot()
		return len(fires) >= n
	})
}

// eventually waits until ok holds, asking every 10ms; it fails the test after 10s.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func newScheduler(t *testing.T, o schedule.Options) *schedule.Scheduler {
	t.Helper()
	o.Flows = flows.Options{Registry: registry()}
	if o.Logger == nil {
		o.Logger = testLogger(t)
	}
	if o.Watch == 0 {
		o.Watch = -1
	}
	if o.QueuePoll == 0 {
		o.QueuePoll = 50 * time.Millisecond
	}
	s, err := schedule.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// start runs s until the returned stop is called; stop returns how long s took to stop.
func start(t *testing.T, s *schedule.Scheduler) (stop func() time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	var took time.Duration
	stop = func() time.Duration {
		once.Do(func() {
			begin := time.Now()
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("scheduler: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the scheduler did not stop within 30s")
			}
			took = time.Since(begin)
		})
		return took
	}
	t.Cleanup(func() { stop() })
	return stop
}

// fireRows returns the recorded fires of flow as scheduled_for -> status.
func fireRows(t *testing.T, db, flow string) map[time.Time]string {
	t.Helper()
	out := map[time.Time]string{}
	for _, r := range testdb.Rows(t, db, `SELECT scheduled_for, status FROM geoflow_schedule_fires WHERE flow = $1`, flow) {
		out[r[0].(time.Time)] = r[1].(string)
	}
	return out
}

// fireStatus returns the recorded status of flow's fire at when; "" when it is not recorded.
func fireStatus(t *testing.T, db, flow string, when time.Time) string {
	t.Helper()
	rows := testdb.Rows(t, db, `SELECT status FROM geoflow_schedule_fires WHERE flow = $1 AND scheduled_for = $2`, flow, when)
	if len(rows) == 0 {
		return ""
	}
	return rows[0][0].(string)
}

// waitStatus waits until flow's fire at when is recorded with status.
func waitStatus(t *testing.T, db, flow string, when time.Time, status string) {
	t.Helper()
	eventually(t, fmt.Sprintf("the %v fire of %s recorded %s", when, flow, status), func() bool {
		return fireStatus(t, db, flow, when) == status
	})
}

// waitIdle waits until no scheduled run of flow holds its lock, as the next fire will ask:
// a fire is recorded as ran a moment before its run lets go of the flow.
func waitIdle(t *testing.T, st *postgis.Store, flow string) {
	t.Helper()
	eventually(t, "the flow lock of "+flow+" released", func() bool {
		lock, ok, err := st.TryLockFlow(context.Background(), flow, false)
		if err != nil {
			t.Fatal(err)
		}
		lock.Release()
		return ok
	})
}

func countStatus(rows map[time.Time]string, status string) int {
	n := 0
	for _, st := range rows {
		if st == status {
			n++
		}
	}
	return n
}

func TestNew(t *testing.T) {
	tests := []struct {
		name string
		o    schedule.Options
	}{
		{name: "no store", o: schedule.Options{Dir: "x", Flows: flows.Options{Registry: registry()}}},
		{name: "no dir", o: schedule.Options{Store: &postgis.Store{}, Flows: flows.Options{Registry: registry()}}},
		{name: "no registry", o: schedule.Options{Store: &postgis.Store{}, Dir: "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := schedule.New(tt.o); err == nil {
				t.Error("no error")
			}
		})
	}
}

// Two instances over one database, real runs against a WFS: every fire runs exactly once.
func TestTwoInstancesRunEachFireOnce(t *testing.T) {
	t.Parallel()
	st, db := openStore(t)
	wfsSrv := httptest.NewServer(wfsserver.New(wfsserver.Options{Features: 200}))
	defer wfsSrv.Close()
	dir := flowDir(t, flowSpec{name: "parcels", schedule: "@every 1s", wfsURL: wfsSrv.URL})
	clk := newFakeClock(t0)
	var stops []func() time.Duration
	for _, name := range []string{"a", "b"} {
		s := newScheduler(t, schedule.Options{Store: st, Dir: dir, Instance: name, Logger: testLogger(t).With("instance", name),
			RunOptions: flows.RunOptions{HTTP: retry.New(nil), Logger: testLogger(t).With("instance", name), Grace: 5 * time.Second},
			Drain:      10 * time.Second, Clock: clk})
		stops = append(stops, start(t, s))
	}
	// Both instances fire each time at the same instant; each run ends before the next.
	const fires = 3
	for i := 1; i <= fires; i++ {
		clk.fireAt(t, at(float64(i)), 2)
		waitStatus(t, db, "parcels", at(float64(i)), store.FireRan)
		waitIdle(t, st, "parcels")
	}
	for _, stop := range stops {
		stop()
	}
	runs := testdb.Int64(t, db, `SELECT count(*) FROM geoflow_runs WHERE flow = 'parcels'`)
	if runs != fires {
		t.Fatalf("%d runs of %d fires", runs, fires)
	}
	if n := testdb.Int64(t, db, `SELECT count(DISTINCT scheduled_for) FROM geoflow_runs WHERE flow = 'parcels'`); n != runs {
		t.Errorf("%d runs for %d distinct fire times: a fire ran twice (or lacks its time)", runs, n)
	}
	if n := testdb.Int64(t, db, `SELECT count(*) FROM geoflow_runs WHERE status <> 'done' OR trigger <> 'schedule'`); n != 0 {
		t.Errorf("%d runs not done or not triggered by the schedule", n)
	}
	if n := testdb.Int64(t, db, `SELECT count(*) FROM geoflow_schedule_fires f JOIN geoflow_runs r ON r.id = f.run_id
		WHERE f.status = 'ran' AND r.scheduled_for = f.scheduled_for`); n != runs {
		t.Errorf("%d fires recorded as ran with their run, want %d", n, runs)
	}
	// Each run ended before the next fire, so none was skipped.
	if n := testdb.Int64(t, db, `SELECT count(*) FROM geoflow_schedule_fires WHERE status <> 'ran'`); n != 0 {
		t.Errorf("%d fires did not run", n)
	}
	if n := testdb.Int64(t, db, `SELECT count(*) FROM parcels`); n != 200 {
		t.Errorf("%d parcels stored, want 200", n)
	}
}

func TestOverlap(t *testing.T) {
	t.Parallel()
	// overlapCase is what a case drives: the schedulers' clock, their runs, their store.
	type overlapCase struct {
		clk       *fakeClock
		rec       *recorder
		st        *postgis.Store
		db        string
		instances int
	}
	tests := []struct {
		name      string
		overlap   string
		instances int
		runFor    time.Duration // on the fake clock
		// drive moves the clock through the fires, waiting for what each did.
		drive func(t *testing.T, o overlapCase)
		check func(t *testing.T, rows map[time.Time]string, fires []time.Time, maxActive int)
	}{
		{name: "skip across instances", overlap: "skip", instances: 2, runFor: 2500 * time.Millisecond,
			drive: func(t *testing.T, o overlapCase) {
				o.clk.fireAt(t, at(1), o.instances) // runs until 10:00:03.5
				o.rec.waitFires(t, 1)
				for _, n := range []float64{2, 3} {
					o.clk.fireAt(t, at(n), o.instances)
					waitStatus(t, o.db, "slow", at(n), store.FireSkippedOverlap)
				}
				o.clk.waitTimers(t, at(4), o.instances)
				o.clk.set(t, at(3.5))
				waitStatus(t, o.db, "slow", at(1), store.FireRan)
				waitIdle(t, o.st, "slow")
				o.clk.fireAt(t, at(4), o.instances) // the previous run is over: this one runs
				o.rec.waitFires(t, 2)
			},
			check: func(t *testing.T, rows map[time.Time]string, fires []time.Time, maxActive int) {
				if maxActive != 1 {
					t.Errorf("%d runs at once", maxActive)
				}
				if n := countStatus(rows, store.FireSkippedOverlap); n < 1 {
					t.Errorf("no fire recorded as skipped: %v", rows)
				}
				if n := countStatus(rows, store.FireRan); n < 1 || n != len(fires) {
					t.Errorf("%d fires recorded as ran, %d ran", n, len(fires))
				}
			}},
		{name: "queue", overlap: "queue", instances: 1, runFor: 1500 * time.Millisecond,
			drive: func(t *testing.T, o overlapCase) {
				o.clk.fireAt(t, at(1), 1) // runs until 10:00:02.5
				o.rec.waitFires(t, 1)
				o.clk.fireAt(t, at(2), 1)
				waitStatus(t, o.db, "slow", at(2), store.FireQueued)
				o.clk.waitTimers(t, at(3), 1)
				o.clk.set(t, at(2.5)) // the first run ends; the queued fire takes its turn, until 10:00:04
				o.rec.waitFires(t, 2)
				o.clk.fireAt(t, at(3), 1)
				waitStatus(t, o.db, "slow", at(3), store.FireQueued)
				// The second run ends as 10:00:04 fires: that fire queues behind 10:00:03.
				o.clk.fireAt(t, at(4), 1)
				o.rec.waitFires(t, 3)
				waitStatus(t, o.db, "slow", at(4), store.FireQueued)
			},
			check: func(t *testing.T, rows map[time.Time]string, fires []time.Time, maxActive int) {
				if maxActive != 1 {
					t.Errorf("%d runs at once", maxActive)
				}
				if len(fires) < 2 {
					t.Errorf("%d fires ran; the queued ones should have followed", len(fires))
				}
				for i := 1; i < len(fires); i++ {
					if !fires[i].After(fires[i-1]) {
						t.Errorf("queued fires ran out of order: %v", fires)
					}
				}
				if n := countStatus(rows, store.FireSkippedOverlap) + countStatus(rows, store.FireQueued); n != 0 {
					t.Errorf("%d fires skipped or left queued: %v", n, rows)
				}
				if countStatus(rows, store.FireRan)+countStatus(rows, store.FireCancelled) != len(rows) {
					t.Errorf("fires neither ran nor cancelled by the shutdown: %v", rows)
				}
				if countStatus(rows, store.FireRan) != len(fires) {
					t.Errorf("fires %v, ran %v", rows, fires)
				}
			}},
		{name: "allow", overlap: "allow", instances: 2, runFor: 2500 * time.Millisecond,
			drive: func(t *testing.T, o overlapCase) {
				o.clk.fireAt(t, at(1), o.instances) // runs until 10:00:03.5
				o.rec.waitFires(t, 1)
				o.clk.fireAt(t, at(2), o.instances)
				o.rec.waitFires(t, 2)
			},
			check: func(t *testing.T, rows map[time.Time]string, fires []time.Time, maxActive int) {
				if maxActive < 2 {
					t.Errorf("at most %d run at once; allow should overlap", maxActive)
				}
				if countStatus(rows, store.FireRan) != len(rows) {
					t.Errorf("not every fire ran: %v", rows)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st, db := openStore(t)
			dir := flowDir(t, flowSpec{name: "slow", schedule: "@every 1s", overlap: tt.overlap})
			rec := &recorder{}
			clk := newFakeClock(t0)
			var stops []func() time.Duration
			for i := range tt.instances {
				s := newScheduler(t, schedule.Options{Store: st, Dir: dir, Instance: fmt.Sprint(i), Run: rec.run(clk, tt.runFor), Clock: clk})
				stops = append(stops, start(t, s))
			}
			tt.drive(t, overlapCase{clk: clk, rec: rec, st: st, db: db, instances: tt.instances})
			for _, stop := range stops {
				stop()
			}
			fires, maxActive := rec.snapshot()
			tt.check(t, fireRows(t, db, "slow"), fires, maxActive)
		})
	}
}

// A manual run of the flow that is going (recorded running, its lock held) makes fires
// skip; once its process is gone, fires run again.
func TestSkipWhileManualRunGoes(t *testing.T) {
	t.Parallel()
	st, db := openStore(t)
	ctx := context.Background()
	manual, err := st.StartRun(ctx, store.RunStart{Flow: "busy"})
	if err != nil {
		t.Fatal(err)
	}
	dir := flowDir(t, flowSpec{name: "busy", schedule: "@every 1s"})
	rec := &recorder{}
	clk := newFakeClock(t0)
	stop := start(t, newScheduler(t, schedule.Options{Store: st, Dir: dir, Run: rec.run(clk, 0), Clock: clk}))
	clk.fireAt(t, at(1), 1)
	waitStatus(t, db, "busy", at(1), store.FireSkippedOverlap)
	if fires, _ := rec.snapshot(); len(fires) != 0 {
		t.Fatalf("%d fires ran while a manual run was going", len(fires))
	}
	manual.Close() // as if its process died: still "running", but nobody holds it
	clk.fireAt(t, at(2), 1)
	waitStatus(t, db, "busy", at(2), store.FireRan)
	stop()
	if fires, _ := rec.snapshot(); len(fires) != 1 || !fires[0].Equal(at(2)) {
		t.Errorf("fires %v ran; want the one after the manual run's process went away, %v", fires, at(2))
	}
}

func TestCatchup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		catchup  string
		neverRan bool
		want     int // catchup fires made up
	}{
		{name: "none", catchup: "none", want: 0},
		{name: "last", catchup: "last", want: 1},
		{name: "all", catchup: "all", want: 5},
		{name: "all, but never fired before", catchup: "all", neverRan: true, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st, db := openStore(t)
			ctx := context.Background()
			// The last instance went down 10s ago, right after a fire: 5 fires of @every 2s missed.
			down := t0.Truncate(2 * time.Second).Add(-10 * time.Second)
			if !tt.neverRan {
				if _, err := st.ClaimFire(ctx, "nightly", down, "old", false); err != nil {
					t.Fatal(err)
				}
				if err := st.MarkFire(ctx, "nightly", down, store.FireRan, 0, ""); err != nil {
					t.Fatal(err)
				}
			}
			dir := flowDir(t, flowSpec{name: "nightly", schedule: "@every 2s", catchup: tt.catchup})
			rec := &recorder{}
			clk := newFakeClock(t0)
			began := clk.Now()
			stop := start(t, newScheduler(t, schedule.Options{Store: st, Dir: dir, Run: rec.run(clk, 0), Clock: clk}))
			catchups := func() []time.Time {
				var got []time.Time
				for _, r := range testdb.Rows(t, db, `SELECT scheduled_for FROM geoflow_schedule_fires
					WHERE catchup AND status = 'ran' ORDER BY scheduled_for`) {
					got = append(got, r[0].(time.Time))
				}
				return got
			}
			// Catchup is decided at start, before the first scheduled fire; once that has
			// run too, nothing more is made up.
			eventually(t, fmt.Sprintf("%d catchup fires ran", tt.want), func() bool { return len(catchups()) >= tt.want })
			waitIdle(t, st, "nightly")
			clk.fireAt(t, at(2), 1)
			waitStatus(t, db, "nightly", at(2), store.FireRan)
			stop()
			got := catchups()
			if len(got) != tt.want {
				t.Fatalf("%d catchup fires ran (%v), want %d", len(got), got, tt.want)
			}
			for i, at := range got {
				if tt.catchup == "all" && !at.Equal(down.Add(time.Duration(i+1)*2*time.Second)) {
					t.Errorf("catchup fire %d at %v; want every missed fire from %v on", i, at, down)
				}
				if at.After(began) {
					t.Errorf("catchup fire at %v is after the start %v", at, began)
				}
			}
			if tt.catchup == "last" && began.Sub(got[0]) > 2*time.Second {
				t.Errorf("catchup last ran %v, not the latest missed fire before %v", got[0], began)
			}
		})
	}
}

// Shutdown while a run goes: with a short drain it is cut short and recorded interrupted;
// with a long enough drain it finishes.
func TestShutdownDuringRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		drain      time.Duration
		fixture    wfsserver.Options
		wantStatus store.State
		maxStop    time.Duration
	}{
		{name: "drain too short: interrupted", drain: 200 * time.Millisecond, wantStatus: store.Interrupted, maxStop: 4 * time.Second,
			fixture: wfsserver.Options{Features: 400, CountDefault: 10, Latency: 150 * time.Millisecond}},
		{name: "drain long enough: done", drain: 20 * time.Second, wantStatus: store.Done, maxStop: 20 * time.Second,
			fixture: wfsserver.Options{Features: 50, Latency: 300 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st, db := openStore(t)
			wfsSrv := httptest.NewServer(wfsserver.New(tt.fixture))
			defer wfsSrv.Close()
			dir := flowDir(t, flowSpec{name: "harvest", schedule: "@every 1s", wfsURL: wfsSrv.URL})
			clk := newFakeClock(t0)
			s := newScheduler(t, schedule.Options{Store: st, Dir: dir, Drain: tt.drain, Clock: clk,
				RunOptions: flows.RunOptions{HTTP: retry.New(nil), Logger: testLogger(t), Grace: time.Second}})
			stop := start(t, s)
			clk.fireAt(t, at(1), 1)
			eventually(t, "the run started", func() bool {
				return testdb.Int64(t, db, `SELECT count(*) FROM geoflow_runs WHERE status = 'running'`) > 0
			})
			if fl := s.Flows(1); len(fl) != 1 || fl[0].Running != 1 {
				t.Errorf("Flows while running: %+v", fl)
			}
			if took := stop(); took > tt.maxStop {
				t.Errorf("stopping took %v, want under %v", took, tt.maxStop)
			}
			rows := testdb.Rows(t, db, `SELECT r.status, r.scheduled_for = f.scheduled_for FROM geoflow_runs r
				JOIN geoflow_schedule_fires f ON f.run_id = r.id`)
			if len(rows) != 1 {
				t.Fatalf("runs with their fire: %v; want the one run", rows)
			}
			if rows[0][0] != string(tt.wantStatus) || rows[0][1] != true {
				t.Errorf("run %v, want %s with its scheduled time", rows[0], tt.wantStatus)
			}
		})
	}
}

func TestReload(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	writeFile(t, file, flowSpec{name: "p", schedule: "@every 1s"}.yaml())
	writeFile(t, filepath.Join(dir, "unscheduled.yml"), "name: u\ntasks:\n  a: {type: wfs, url: http://x/wfs, typename: t, target: {table: u}}\n")
	rec := &recorder{}
	clk := newFakeClock(t0)
	s := newScheduler(t, schedule.Options{Store: st, Dir: dir, Run: rec.run(clk, 0), Watch: 100 * time.Millisecond, Clock: clk})
	stop := start(t, s)
	ctx := context.Background()

	waitFor := func(what string, ok func([]schedule.FlowInfo) bool) []schedule.FlowInfo {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			fl := s.Flows(3)
			if ok(fl) {
				return fl
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: flows are %+v", what, fl)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	fl := waitFor("loaded", func(fl []schedule.FlowInfo) bool { return len(fl) == 1 })
	if fl[0].Name != "p" || fl[0].Schedule != "@every 1s" || len(fl[0].NextFires) != 3 || fl[0].Problem != "" {
		t.Fatalf("flows %+v", fl)
	}

	// A broken edit keeps the old version firing; the problem is shown.
	writeFile(t, file, "name: p\nschedule: \"@every 1s\"\ntasks: {}\n")
	if err := s.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	fl = s.Flows(3)
	if len(fl) != 1 || fl[0].Problem == "" || fl[0].Schedule != "@every 1s" {
		t.Fatalf("after a broken edit: %+v", fl)
	}
	clk.fireAt(t, at(1), 1)
	eventually(t, "the previous version fires on after a broken edit", func() bool {
		fires, _ := rec.snapshot()
		return len(fires) == 1
	})

	// A good edit is picked up by watching alone.
	writeFile(t, file, flowSpec{name: "p", schedule: "@every 1h"}.yaml())
	waitFor("changed schedule", func(fl []schedule.FlowInfo) bool {
		return len(fl) == 1 && fl[0].Schedule == "@every 1h" && fl[0].Problem == ""
	})
	// The new version fires at 11:00; the old one, whose next fire was 10:00:02, is
	// checked once the scheduler has stopped, when every fire it started has ended.
	clk.fireAt(t, at(3600), 1)
	rec.waitFires(t, 2)

	// A second file naming the same flow is refused.
	writeFile(t, filepath.Join(dir, "q.yaml"), flowSpec{name: "p", schedule: "@every 1s"}.yaml())
	fl = waitFor("duplicate", func(fl []schedule.FlowInfo) bool { return len(fl) == 2 })
	for _, fi := range fl {
		if dup := filepath.Base(fi.File) == "q.yaml"; dup != (fi.Problem != "") {
			t.Errorf("duplicate flow name: %+v", fl)
		}
	}

	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "q.yaml")); err != nil {
		t.Fatal(err)
	}
	waitFor("removed", func(fl []schedule.FlowInfo) bool { return len(fl) == 0 })
	stop()
	if fires, _ := rec.snapshot(); len(fires) != 2 || !fires[1].Equal(at(3600)) {
		t.Errorf("fires %v; after the reload to @every 1h, want only %v: the old @every 1s version fires on", fires, at(3600))
	}
}

func TestList(t *testing.T) {
	dir := flowDir(t, flowSpec{name: "b", schedule: "0 2 * * *"}, flowSpec{name: "a", schedule: "@every 15m"})
	writeFile(t, filepath.Join(dir, "bad.yaml"), "name: Bad\n")
	writeFile(t, filepath.Join(dir, "notes.txt"), "not a flow")
	now := time.Date(2025, 6, 1, 10, 7, 0, 0, time.UTC)
	fl, err := schedule.List(dir, flows.Options{Registry: registry()}, now, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(fl) != 3 || fl[0].Name != "" || fl[0].Problem == "" || fl[1].Name != "a" || fl[2].Name != "b" {
		t.Fatalf("List: %+v", fl)
	}
	want := []time.Time{time.Date(2025, 6, 1, 10, 15, 0, 0, time.UTC), time.Date(2025, 6, 1, 10, 30, 0, 0, time.UTC)}
	if len(fl[1].NextFires) != 2 || !fl[1].NextFires[0].Equal(want[0]) || !fl[1].NextFires[1].Equal(want[1]) {
		t.Errorf("next fires of a: %v, want %v", fl[1].NextFires, want)
	}
	if _, err := schedule.List(filepath.Join(dir, "missing"), flows.Options{Registry: registry()}, now, 2); err == nil {
		t.Error("no error for a missing directory")
	}
}

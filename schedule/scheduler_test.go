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
	"github.com/geoflow/geoflow/store/postgis"
	"github.com/geoflow/geoflow/schedule"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/retry"
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
	store, err := postgis.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	if _, err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return store, url
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

func (r *recorder) run(d time.Duration) schedule.RunFunc {
	return func(ctx context.Context, f *flows.Flow, at time.Time) (*flows.Result, error) {
		r.mu.Lock()
		r.fires = append(r.fires, at)
		r.active++
		r.maxActive = max(r.maxActive, r.active)
		r.mu.Unlock()
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
		r.mu.Lock()
		r.active--
		r.mu.Unlock()
		return &flows.Result{Status: flows.StateDone}, nil
	}
}

func (r *recorder) snapshot() (fires []time.Time, maxActive int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.fires...), r.maxActive
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
	store, db := openStore(t)
	wfsSrv := httptest.NewServer(wfsserver.New(wfsserver.Options{Features: 200}))
	defer wfsSrv.Close()
	dir := flowDir(t, flowSpec{name: "parcels", schedule: "@every 1s", wfsURL: wfsSrv.URL})
	var stops []func() time.Duration
	for _, name := range []string{"a", "b"} {
		s := newScheduler(t, schedule.Options{Store: store, Dir: dir, Instance: name, Logger: testLogger(t).With("instance", name),
			RunOptions: flows.RunOptions{HTTP: retry.New(nil), Logger: testLogger(t).With("instance", name), Grace: 5 * time.Second},
			Drain:      10 * time.Second})
		stops = append(stops, start(t, s))
	}
	time.Sleep(4500 * time.Millisecond)
	for _, stop := range stops {
		stop()
	}
	runs := testdb.Int64(t, db, `SELECT count(*) FROM geoflow_runs WHERE flow = 'parcels'`)
	if runs < 3 {
		t.Fatalf("%d runs in 4.5s of @every 1s", runs)
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
	// A slow first run (it creates the table) may make the next fire skip; that is
	// recorded, never silent.
	if n := testdb.Int64(t, db, `SELECT count(*) FROM geoflow_schedule_fires WHERE status NOT IN ('ran', 'skipped_overlap')`); n != 0 {
		t.Errorf("%d fires neither ran nor were recorded skipped", n)
	}
	if n := testdb.Int64(t, db, `SELECT count(*) FROM parcels`); n != 200 {
		t.Errorf("%d parcels stored, want 200", n)
	}
}

func TestOverlap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		overlap   string
		instances int
		runFor    time.Duration
		check     func(t *testing.T, rows map[time.Time]string, fires []time.Time, maxActive int)
	}{
		{name: "skip across instances", overlap: "skip", instances: 2, runFor: 2500 * time.Millisecond,
			check: func(t *testing.T, rows map[time.Time]string, fires []time.Time, maxActive int) {
				if maxActive != 1 {
					t.Errorf("%d runs at once", maxActive)
				}
				if n := countStatus(rows, postgis.FireSkippedOverlap); n < 1 {
					t.Errorf("no fire recorded as skipped: %v", rows)
				}
				if n := countStatus(rows, postgis.FireRan); n < 1 || n != len(fires) {
					t.Errorf("%d fires recorded as ran, %d ran", n, len(fires))
				}
			}},
		{name: "queue", overlap: "queue", instances: 1, runFor: 1500 * time.Millisecond,
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
				if n := countStatus(rows, postgis.FireSkippedOverlap) + countStatus(rows, postgis.FireQueued); n != 0 {
					t.Errorf("%d fires skipped or left queued: %v", n, rows)
				}
				if countStatus(rows, postgis.FireRan)+countStatus(rows, postgis.FireCancelled) != len(rows) {
					t.Errorf("fires neither ran nor cancelled by the shutdown: %v", rows)
				}
				if countStatus(rows, postgis.FireRan) != len(fires) {
					t.Errorf("fires %v, ran %v", rows, fires)
				}
			}},
		{name: "allow", overlap: "allow", instances: 2, runFor: 2500 * time.Millisecond,
			check: func(t *testing.T, rows map[time.Time]string, fires []time.Time, maxActive int) {
				if maxActive < 2 {
					t.Errorf("at most %d run at once; allow should overlap", maxActive)
				}
				if countStatus(rows, postgis.FireRan) != len(rows) {
					t.Errorf("not every fire ran: %v", rows)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store, db := openStore(t)
			dir := flowDir(t, flowSpec{name: "slow", schedule: "@every 1s", overlap: tt.overlap})
			rec := &recorder{}
			var stops []func() time.Duration
			for i := range tt.instances {
				s := newScheduler(t, schedule.Options{Store: store, Dir: dir, Instance: fmt.Sprint(i), Run: rec.run(tt.runFor)})
				stops = append(stops, start(t, s))
			}
			time.Sleep(4200 * time.Millisecond)
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
	store, db := openStore(t)
	ctx := context.Background()
	manual, err := store.StartRun(ctx, postgis.RunStart{Flow: "busy"})
	if err != nil {
		t.Fatal(err)
	}
	dir := flowDir(t, flowSpec{name: "busy", schedule: "@every 1s"})
	rec := &recorder{}
	stop := start(t, newScheduler(t, schedule.Options{Store: store, Dir: dir, Run: rec.run(0)}))
	time.Sleep(2100 * time.Millisecond)
	if fires, _ := rec.snapshot(); len(fires) != 0 {
		t.Fatalf("%d fires ran while a manual run was going", len(fires))
	}
	if n := countStatus(fireRows(t, db, "busy"), postgis.FireSkippedOverlap); n < 1 {
		t.Fatal("no fire recorded as skipped")
	}
	manual.Close() // as if its process died: still "running", but nobody holds it
	time.Sleep(2100 * time.Millisecond)
	stop()
	if fires, _ := rec.snapshot(); len(fires) < 1 {
		t.Error("no fire ran after the manual run's process went away")
	}
}

func TestCatchup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		catchup   string
		neverRan  bool
		wantExact int // -1: at least minMissed
	}{
		{name: "none", catchup: "none", wantExact: 0},
		{name: "last", catchup: "last", wantExact: 1},
		{name: "all", catchup: "all", wantExact: -1},
		{name: "all, but never fired before", catchup: "all", neverRan: true, wantExact: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store, db := openStore(t)
			ctx := context.Background()
			// The last instance went down 10s ago, right after a fire: 5 fires of @every 2s missed.
			down := time.Now().Truncate(2 * time.Second).Add(-10 * time.Second)
			if !tt.neverRan {
				if _, err := store.ClaimFire(ctx, "nightly", down, "old", false); err != nil {
					t.Fatal(err)
				}
				if err := store.MarkFire(ctx, "nightly", down, postgis.FireRan, 0, ""); err != nil {
					t.Fatal(err)
				}
			}
			dir := flowDir(t, flowSpec{name: "nightly", schedule: "@every 2s", catchup: tt.catchup})
			rec := &recorder{}
			began := time.Now()
			stop := start(t, newScheduler(t, schedule.Options{Store: store, Dir: dir, Run: rec.run(0)}))
			time.Sleep(500 * time.Millisecond)
			stop()
			var got []time.Time
			for _, r := range testdb.Rows(t, db, `SELECT scheduled_for FROM geoflow_schedule_fires
				WHERE catchup AND status = 'ran' ORDER BY scheduled_for`) {
				got = append(got, r[0].(time.Time))
			}
			switch {
			case tt.wantExact >= 0 && len(got) != tt.wantExact:
				t.Fatalf("%d catchup fires ran (%v), want %d", len(got), got, tt.wantExact)
			case tt.wantExact < 0 && len(got) < 5:
				t.Fatalf("%d catchup fires ran (%v), want the 5 or more missed", len(got), got)
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
		wantStatus string
		maxStop    time.Duration
	}{
		{name: "drain too short: interrupted", drain: 200 * time.Millisecond, wantStatus: flows.StateInterrupted, maxStop: 4 * time.Second,
			fixture: wfsserver.Options{Features: 400, CountDefault: 10, Latency: 150 * time.Millisecond}},
		{name: "drain long enough: done", drain: 20 * time.Second, wantStatus: flows.StateDone, maxStop: 20 * time.Second,
			fixture: wfsserver.Options{Features: 50, Latency: 300 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store, db := openStore(t)
			wfsSrv := httptest.NewServer(wfsserver.New(tt.fixture))
			defer wfsSrv.Close()
			dir := flowDir(t, flowSpec{name: "harvest", schedule: "@every 1s", wfsURL: wfsSrv.URL})
			s := newScheduler(t, schedule.Options{Store: store, Dir: dir, Drain: tt.drain,
				RunOptions: flows.RunOptions{HTTP: retry.New(nil), Logger: testLogger(t), Grace: time.Second}})
			stop := start(t, s)
			deadline := time.Now().Add(10 * time.Second)
			for testdb.Int64(t, db, `SELECT count(*) FROM geoflow_runs WHERE status = 'running'`) == 0 {
				if time.Now().After(deadline) {
					t.Fatal("no run started within 10s")
				}
				time.Sleep(50 * time.Millisecond)
			}
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
			if rows[0][0] != tt.wantStatus || rows[0][1] != true {
				t.Errorf("run %v, want %s with its scheduled time", rows[0], tt.wantStatus)
			}
		})
	}
}

func TestReload(t *testing.T) {
	t.Parallel()
	store, _ := openStore(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	writeFile(t, file, flowSpec{name: "p", schedule: "@every 1s"}.yaml())
	writeFile(t, filepath.Join(dir, "unscheduled.yml"), "name: u\ntasks:\n  a: {type: wfs, url: http://x/wfs, typename: t, target: {table: u}}\n")
	rec := &recorder{}
	s := newScheduler(t, schedule.Options{Store: store, Dir: dir, Run: rec.run(0), Watch: 100 * time.Millisecond})
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
	before, _ := rec.snapshot()
	time.Sleep(1500 * time.Millisecond)
	if after, _ := rec.snapshot(); len(after) <= len(before) {
		t.Error("the previous version stopped firing after a broken edit")
	}

	// A good edit is picked up by watching alone.
	writeFile(t, file, flowSpec{name: "p", schedule: "@every 1h"}.yaml())
	waitFor("changed schedule", func(fl []schedule.FlowInfo) bool {
		return len(fl) == 1 && fl[0].Schedule == "@every 1h" && fl[0].Problem == ""
	})
	before, _ = rec.snapshot()
	time.Sleep(1500 * time.Millisecond)
	if after, _ := rec.snapshot(); len(after) != len(before) {
		t.Error("the old @every 1s version fires on after the reload")
	}

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

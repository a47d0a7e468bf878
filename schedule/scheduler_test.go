package schedule_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/internal/testflow"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/schedule"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/postgis"
)

func TestMain(m *testing.M) { testdb.Main(m) }

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
			RunOptions: engine.RunOptions{Store: testflow.Stores(st), HTTP: retry.New(nil), Logger: testLogger(t).With("instance", name), Grace: 5 * time.Second},
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
				RunOptions: engine.RunOptions{Store: testflow.Stores(st), HTTP: retry.New(nil), Logger: testLogger(t), Grace: time.Second}})
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

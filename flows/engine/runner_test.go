package engine

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/geoflow/geoflow/flows"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/gpkg"
	"github.com/geoflow/geoflow/store/postgis"
	"github.com/geoflow/geoflow/tasks"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// eachStore runs test once against each store implementation, as river runs its driver
// tests against each driver: in a subtest named after the store, with the location of a
// new, empty store of that kind.
func eachStore(t *testing.T, test func(t *testing.T, loc string)) {
	for _, b := range testdb.Backends() {
		t.Run(b.Name, func(t *testing.T) { test(t, b.New(t)) })
	}
}

// openStore opens and migrates the store at loc, a PostgreSQL URL or a GeoPackage path,
// and closes it when the test ends.
func openStore(t *testing.T, loc string) store.Store {
	t.Helper()
	ctx := context.Background()
	var (
		s   store.Store
		err error
	)
	if testdb.IsGeoPackage(loc) {
		s, err = gpkg.Open(ctx, loc, nil)
	} else {
		s, err = postgis.Open(ctx, loc, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// storesOf splits a store into the parts the engine takes, as the commands do.
func storesOf(st store.Store) Stores {
	s := Stores{Runs: st, Units: st, DeadLetters: st,
		Tasks: tasks.Stores{Features: st, Mirror: st, Tiles: st, Assets: st, Records: st, Tables: st, Changes: st}}
	if q, ok := st.(store.Queue); ok {
		s.Queue = q
	}
	return s
}

func mustParse(t *testing.T, rec *recorder, src string) *flows.Flow {
	t.Helper()
	f, err := flows.Parse("test.yaml", []byte(src), flows.Options{Registry: testRegistry(rec)})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func index(events []string, prefix string) (first, last int) {
	first, last = -1, -1
	for i, e := range events {
		if strings.HasPrefix(e, prefix) {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	return first, last
}

func TestRunDependencyOrder(t *testing.T) { eachStore(t, testRunDependencyOrder) }

func testRunDependencyOrder(t *testing.T, loc string) {
	db := openStore(t, loc)
	rec := &recorder{}
	f := mustParse(t, rec, `
name: order
tasks:
  c: {type: fake, depends_on: [b]}
  a: {type: fake, units: 5, split: 2}
  b: {type: fake, depends_on: [a]}
  d: {type: other}
`)
	res, err := Run(context.Background(), f, RunOptions{Store: storesOf(db)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != store.Done {
		t.Fatalf("status = %s, want done (tasks %v)", res.Status, res.TaskStates)
	}
	ev := rec.list()
	_, lastA := index(ev, "a ")
	firstB, lastB := index(ev, "plan b")
	firstC, _ := index(ev, "plan c")
	if !(lastA < firstB && lastB < firstC) {
		t.Errorf("tasks ran out of dependency order: %v", ev)
	}
	// a: 5 units, one of which split into 2 children; b, c: 3 each; d: 1.
	if got, want := res.Summary.UnitsDone, int64(5+2+3+3+1); got != want || res.Summary.UnitsTotal != want {
		t.Errorf("units done/total = %d/%d, want %d", got, res.Summary.UnitsTotal, want)
	}
	if !slices.Contains(ev, "a u002/a") || !slices.Contains(ev, "a u002/b") {
		t.Errorf("children of the split unit did not run: %v", ev)
	}
	// Each unit's attempt and start are recorded with its outcome, in order.
	if n := testdb.Count(t, loc, `SELECT count(*) FROM geoflow_units
		WHERE attempts = 1 AND started_at IS NOT NULL AND finished_at >= started_at`); n != 14 {
		t.Errorf("%d of 14 units have one attempt and a start before their finish", n)
	}
}

func TestRunUpstreamFailed(t *testing.T) {
	tests := []struct {
		name       string
		fail       string
		wantA      store.State
		wantFailed bool // a task failed outright, not through dead units
		wantDead   int64
	}{
		{name: "dead unit", fail: "[u001]", wantA: store.Failed, wantDead: 1},
		{name: "planning fails", fail: "[plan]", wantA: store.Failed, wantFailed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eachStore(t, func(t *testing.T, loc string) {
				db := openStore(t, loc)
				f := mustParse(t, nil, `
name: upstream
tasks:
  a: {type: fake, fail_units: `+tt.fail+`}
  b: {type: fake, depends_on: [a]}
  c: {type: fake, depends_on: [b]}
  d: {type: other}
`)
				res, err := Run(context.Background(), f, RunOptions{Store: storesOf(db)})
				if err != nil {
					t.Fatal(err)
				}
				want := map[string]store.State{"a": tt.wantA, "b": store.UpstreamFailed, "c": store.UpstreamFailed, "d": store.Done}
				for id, st := range want {
					if res.TaskStates[id] != st {
						t.Errorf("task %s = %s, want %s", id, res.TaskStates[id], st)
					}
				}
				if res.Status != store.Failed || res.DeadLetters() != tt.wantDead {
					t.Errorf("status %s dead %d, want failed and %d", res.Status, res.DeadLetters(), tt.wantDead)
				}
				if _, failed := res.FailedTasks["a"]; failed != tt.wantFailed {
					t.Errorf("FailedTasks = %v", res.FailedTasks)
				}
			})
		})
	}
}

func TestRunArea(t *testing.T) { eachStore(t, testRunArea) }

func testRunArea(t *testing.T, loc string) {
	db := openStore(t, loc)
	rec := &recorder{}
	f := mustParse(t, rec, "name: area\ntasks:\n  a: {type: fake, units: 10}\n")
	area := orb.Bound{Min: orb.Point{2.5, 0}, Max: orb.Point{4.5, 1}}
	res, err := Run(context.Background(), f, RunOptions{Store: storesOf(db), Area: &area})
	if err != nil {
		t.Fatal(err)
	}
	ev := rec.list()
	slices.Sort(ev)
	if got := strings.Join(ev, ","); got != "a u002,a u003,a u004,plan a" {
		t.Errorf("events = %s, want only units intersecting the area", got)
	}
	if res.Summary.UnitsTotal != 3 {
		t.Errorf("units = %d, want 3", res.Summary.UnitsTotal)
	}
}

// TestRunUnitFailsPart: a unit that tried part of its work itself and lists it as Failed
// (a tile of a block) commits; the part is recorded as a unit of its own, dead-lettered
// with its own error without being executed again, and fails the task; a replay of that
// dead letter executes just the part.
func TestRunUnitFailsPart(t *testing.T) { eachStore(t, testRunUnitFailsPart) }

func testRunUnitFailsPart(t *testing.T, loc string) {
	db := openStore(t, loc)
	ctx := context.Background()
	rec := &recorder{}
	f := mustParse(t, rec, "name: parts\ntasks:\n  a: {type: fake, units: 3, fail_parts: [u001]}\n")
	res, err := Run(ctx, f, RunOptions{Store: storesOf(db)})
	if err != nil {
		t.Fatal(err)
	}
	ev := rec.list()
	slices.Sort(ev)
	if got := strings.Join(ev, ","); got != "a u000,a u001,a u001/y,a u002,plan a" {
		t.Errorf("events = %s; want the failed part never executed", got)
	}
	if res.Status != store.Failed || res.DeadLetters() != 1 || res.Summary.UnitsTotal != 5 || res.Summary.UnitsDone != 4 {
		t.Errorf("run %s, %d dead, %d of %d units done; want failed, 1 dead, 4 of 5", res.Status, res.DeadLetters(),
			res.Summary.UnitsDone, res.Summary.UnitsTotal)
	}
	entries, err := db.ListDeadLetters(ctx, dlq.Filter{RunID: res.RunID})
	if err != nil || len(entries) != 1 {
		t.Fatalf("dead letters: %v %v", entries, err)
	}
	if e := entries[0]; e.Unit != "u001/x" || e.Class != dlq.ClassHTTP4xx || !strings.Contains(e.Error, "part x is gone") {
		t.Errorf("entry %s: %s %q", e.Unit, e.Class, e.Error)
	}
	if u, st, err := db.Unit(ctx, store.UnitRef{RunID: res.RunID, TaskID: "a", Key: "u001/x"}); err != nil || st != store.Failed || u.Parent != "u001" {
		t.Errorf("the failed part: %+v %s %v; want failed, child of u001", u, st, err)
	}
	rr, err := Replay(ctx, entries, ReplayOptions{Store: storesOf(db), Registry: testRegistry(rec)})
	if err != nil || !rr.OK() || rr.Units != 1 {
		t.Fatalf("replay: %d units, %d dead, %v", rr.Units, rr.Dead, err)
	}
	if st, _ := db.TaskState(ctx, res.RunID, "a"); st != store.Done {
		t.Errorf("task state after the replay: %s", st)
	}
}

// TestRunAreaOutsideEveryTask: a --bbox that touches no task's area (longitude and
// latitude swapped, say) used to end done, exit 0, "0 of 0 units"; it fails the run,
// naming each task's area. A box that touches one task is fine for the others.
func TestRunAreaOutsideEveryTask(t *testing.T) { eachStore(t, testRunAreaOutsideEveryTask) }

func testRunAreaOutsideEveryTask(t *testing.T, loc string) {
	db := openStore(t, loc)
	f := mustParse(t, nil, "name: boxes\ntasks:\n  a: {type: fake, bbox: [11.4, 48.0, 11.6, 48.2]}\n  b: {type: fake, bbox: [13.3, 52.4, 13.5, 52.6]}\n")
	swapped := orb.Bound{Min: orb.Point{48.0, 11.4}, Max: orb.Point{48.2, 11.6}}
	res, err := Run(context.Background(), f, RunOptions{Store: storesOf(db), Area: &swapped})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != store.Failed || len(res.FailedTasks) != 2 || !strings.Contains(res.FailedTasks["a"], "does not touch its area 11.4,48,11.6,48.2") ||
		!strings.Contains(res.FailedTasks["a"], "swapped") {
		t.Errorf("run %s, failed tasks %v; want failed, naming each task's area", res.Status, res.FailedTasks)
	}
	munich := orb.Bound{Min: orb.Point{11.45, 48.05}, Max: orb.Point{11.5, 48.1}}
	res, err = Run(context.Background(), f, RunOptions{Store: storesOf(db), Area: &munich})
	if err != nil || res.Status != store.Done {
		t.Errorf("a box touching one task: %v %v; want done", res.Status, err)
	}
}

// TestRunCancelAndResume stops a run mid-way as SIGTERM would, then resumes it: in-flight
// units finish within the grace period, nothing done is executed again, and the resumed
// run completes every unit.
func TestRunCancelAndResume(t *testing.T) { eachStore(t, testRunCancelAndResume) }

func testRunCancelAndResume(t *testing.T, loc string) {
	db := openStore(t, loc)
	rec := &recorder{}
	f := mustParse(t, rec, `
name: cancel
tasks:
  a: {type: fake, units: 40, sleep: 50ms, rate_limit: {concurrency: 2}}
  b: {type: fake, depends_on: [a]}
`)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(rec.list()) < 6 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	res, err := Run(ctx, f, RunOptions{Store: storesOf(db), Grace: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != store.Interrupted || res.TaskStates["a"] != store.Interrupted || res.TaskStates["b"] != store.Interrupted {
		t.Fatalf("status %s, tasks %v; want interrupted", res.Status, res.TaskStates)
	}
	firstDone := res.Summary.UnitsDone
	if firstDone == 0 || firstDone >= 40 {
		t.Fatalf("units done before the stop = %d, want some but not all", firstDone)
	}
	before := len(rec.list())

	res2, err := Run(context.Background(), f, RunOptions{Store: storesOf(db), Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res2.Resumed || res2.RunID != res.RunID || res2.Status != store.Done {
		t.Fatalf("resume: run %d resumed=%v status %s, want run %d resumed and done", res2.RunID, res2.Resumed, res2.Status, res.RunID)
	}
	ev := rec.list()
	seen := map[string]int{}
	for _, e := range ev {
		if strings.HasPrefix(e, "a u") {
			seen[e]++
		}
	}
	for e, n := range seen {
		if n > 1 {
			t.Errorf("%s executed %d times", e, n)
		}
	}
	if len(seen) != 40 || res2.Summary.UnitsDone != 43 {
		t.Errorf("after resume: %d distinct units of a ran, %d units done in the run; want 40 and 43", len(seen), res2.Summary.UnitsDone)
	}
	if len(ev)-before < 40-int(firstDone) {
		t.Errorf("resume executed %d events, want at least %d", len(ev)-before, 40-firstDone)
	}
	if _, err := Run(context.Background(), f, RunOptions{Store: storesOf(db), Resume: true}); err == nil {
		t.Errorf("resuming a finished flow succeeded; want an error saying there is nothing to resume")
	}
}

// TestResumeKeepsRecordedUnits: a resumed run executes the units its first session
// recorded, not a plan made again, which may cut the work differently (here the task's
// plan grows from 40 units to 60 between the sessions, as a new version of a task might
// plan differently): nothing is fetched twice, nothing new added. A resume with an
// edited flow file (--use-current-flow) plans again: TestResumeRunsTheRecordedFlow.
func TestResumeKeepsRecordedUnits(t *testing.T) { eachStore(t, testResumeKeepsRecordedUnits) }

func testResumeKeepsRecordedUnits(t *testing.T, loc string) {
	db := openStore(t, loc)
	rec := &recorder{}
	f := mustParse(t, rec, "name: replan\ntasks:\n  a: {type: fake, units: 40, sleep: 50ms, rate_limit: {concurrency: 2}}\n")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(rec.list()) < 6 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	res, err := Run(ctx, f, RunOptions{Store: storesOf(db), Grace: 10 * time.Second})
	if err != nil || res.Status != store.Interrupted {
		t.Fatalf("first session: %v %v", res.Status, err)
	}
	// The same flow, whose task now plans more: a geoflow upgraded between the sessions.
	reg := &tasks.Registry{}
	reg.Register(tasks.Kind{Name: "fake", NewConfig: func() tasks.Config { return &testConfig{Units: 3, rec: rec, grow: 20} }})
	again, err := flows.Parse("test.yaml", f.Source, flows.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	res2, err := Run(context.Background(), again, RunOptions{Store: storesOf(db), Resume: true})
	if err != nil || res2.Status != store.Done || res2.RunID != res.RunID {
		t.Fatalf("resume: run %d %s %v", res2.RunID, res2.Status, err)
	}
	seen := map[string]int{}
	for _, e := range rec.list() {
		if strings.HasPrefix(e, "a u") {
			seen[e]++
		}
	}
	for e, n := range seen {
		if n > 1 {
			t.Errorf("%s executed %d times", e, n)
		}
	}
	if len(seen) != 40 || seen["a u040"] != 0 || res2.Summary.UnitsTotal != 40 {
		t.Errorf("%d distinct units executed, u040 %d times, %d units in the run; want the 40 recorded, no more", len(seen), seen["a u040"], res2.Summary.UnitsTotal)
	}
}

// TestRunGraceExpires: units that cannot finish within the grace period are rolled back
// and recorded as interrupted, not failed.
func TestRunGraceExpires(t *testing.T) { eachStore(t, testRunGraceExpires) }

func testRunGraceExpires(t *testing.T, loc string) {
	db := openStore(t, loc)
	rec := &recorder{}
	f := mustParse(t, rec, "name: grace\ntasks:\n  a: {type: fake, units: 4, sleep: 1h}\n")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once the units are in flight, however slow the machine is.
		for len(rec.list()) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond)
		cancel()
	}()
	res, err := Run(ctx, f, RunOptions{Store: storesOf(db), Grace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != store.Interrupted || res.DeadLetters() != 0 || res.Summary.UnitsDone != 0 {
		t.Fatalf("status %s dead %d done %d; want interrupted, 0, 0", res.Status, res.DeadLetters(), res.Summary.UnitsDone)
	}
}

// TestRunResumeKeepsAreaAndTasks resumes a crashed run that was started with --bbox and
// --task without repeating them: the resume must go on over the run's own area and
// tasks, not plan the whole flow into it.
func TestRunResumeKeepsAreaAndTasks(t *testing.T) { eachStore(t, testRunResumeKeepsAreaAndTasks) }

func testRunResumeKeepsAreaAndTasks(t *testing.T, loc string) {
	db := openStore(t, loc)
	rec := &recorder{}
	f := mustParse(t, rec, `
name: resume_area
tasks:
  a: {type: fake, units: 10}
  b: {type: fake, units: 10}
`)
	area := orb.Bound{Min: orb.Point{2.5, 0}, Max: orb.Point{4.5, 1}}
	// A run that crashed right after it started: recorded running, held by nobody.
	run, err := db.StartRun(context.Background(), store.RunStart{Flow: f.Name, Area: &area, OnlyTasks: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	run.Close()

	res, err := Run(context.Background(), f, RunOptions{Store: storesOf(db), Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed || res.RunID != run.ID || res.Status != store.Done {
		t.Fatalf("resume: run %d resumed=%v status %s, want run %d resumed and done", res.RunID, res.Resumed, res.Status, run.ID)
	}
	ev := rec.list()
	slices.Sort(ev)
	if got := strings.Join(ev, ","); got != "a u002,a u003,a u004,plan a" {
		t.Errorf("events = %s, want only task a's units inside the run's area", got)
	}
	if res.Summary.UnitsTotal != 3 {
		t.Errorf("units = %d, want 3", res.Summary.UnitsTotal)
	}
}

package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/store"
)

const orphanFlow = `
name: orphan
tasks:
  a: {type: fake, units: 30, split: 2, sleep: 20ms}
  b: {type: fake, units: 4, depends_on: [a]}
`

// orphan starts a distributed run of f and drops its starting process once its units
// are queued, as a SIGKILL would: nothing more is recorded, its lock is let go, and the
// run reads as crashed. No worker is running, so none of its units has started.
func orphan(t *testing.T, db string, st store.Store, units int64) int64 {
	t.Helper()
	f := writeFlow(t, testRegistry(nil), orphanFlow)
	ctx, kill := context.WithCancelCause(context.Background())
	ran := make(chan error, 1)
	var id int64
	go func() {
		_, err := Run(ctx, f, RunOptions{Store: storesOf(st), Distributed: true, Started: func(run int64) { id = run }})
		ran <- err
	}()
	for deadline := time.Now().Add(30 * time.Second); testdb.Int64(t, db, "SELECT count(*) FROM river_job WHERE state = 'available'") < units; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the run's units were never enqueued")
		}
	}
	kill(ErrHandedBack)
	if err := <-ran; !errors.Is(err, ErrHandedBack) {
		t.Fatalf("the dropped starting process returned %v, want ErrHandedBack", err)
	}
	if r, err := st.GetRun(context.Background(), id); err != nil || r.Status != store.Crashed {
		t.Fatalf("the orphaned run reads %+v, %v; want crashed", r, err)
	}
	return id
}

// waitRun polls run id until it is no longer running, and returns how it ended.
func waitRun(t *testing.T, st store.Store, id int64) store.RunRecord {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		r, err := st.GetRun(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != store.Running && r.Status != store.Crashed {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %d still %s after a minute", id, r.Status)
		}
	}
}

// executedOnce checks that every unit rec saw ran once, and that want of them ran.
func executedOnce(t *testing.T, rec *recorder, want int) {
	t.Helper()
	seen := map[string]int{}
	for _, e := range rec.list() {
		if !strings.HasPrefix(e, "plan ") {
			seen[e]++
		}
	}
	for e, n := range seen {
		if n > 1 {
			t.Errorf("%s executed %d times", e, n)
		}
	}
	if len(seen) != want {
		t.Errorf("%d units executed, want %d", len(seen), want)
	}
}

// TestAdoptersRace: two adopters (each with a store of its own, as two workers have)
// race for a run whose starting process is gone: one adopts it, the other does not, nor
// does either adopt it again while it goes; the adopter finishes it done, planning the
// downstream task, with every unit executed once, and the run records who finished it.
func TestAdoptersRace(t *testing.T) {
	rec := &recorder{}
	reg := testRegistry(rec)
	db := testdb.URL(t)
	st := openStore(t, db)
	id := orphan(t, db, st, 30)
	_, stop := pool(t, db, reg, 2)
	defer stop()

	adopters := []*Adopter{
		{Store: storesOf(openStore(t, db)), Registry: reg, By: "worker a1"},
		{Store: storesOf(openStore(t, db)), Registry: reg, By: "worker a2"},
	}
	adopted := make([][]int64, len(adopters))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, a := range adopters {
		wg.Go(func() {
			<-start
			var err error
			if adopted[i], err = a.Adopt(context.Background()); err != nil {
				t.Errorf("adopter %d: %v", i+1, err)
			}
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, ids := range adopted {
		if len(ids) == 1 && ids[0] == id {
			winner = i
		}
	}
	if n := len(adopted[0]) + len(adopted[1]); n != 1 || winner < 0 {
		t.Fatalf("adopted %v and %v; want run %d adopted once", adopted[0], adopted[1], id)
	}
	for i, a := range adopters {
		if again, err := a.Adopt(context.Background()); err != nil || len(again) != 0 {
			t.Errorf("adopter %d looking again while the run goes: %v, %v; want nothing", i+1, again, err)
		}
	}

	r := waitRun(t, st, id)
	for _, a := range adopters {
		a.handBack() // waits for the adopted run's goroutine to end
	}
	if r.Status != store.Done || r.UnitsDone != 36 || r.FinishedBy != adopters[winner].By || r.AdoptedAt == nil {
		t.Errorf("run %s, %d units done, finished by %q at %v; want done, 36, %q", r.Status, r.UnitsDone, r.FinishedBy, r.AdoptedAt, adopters[winner].By)
	}
	if got := r.AdoptionVerb(); got != "finished by" {
		t.Errorf("AdoptionVerb %q, want finished by", got)
	}
	// a's 30 units and the 2 children of its u002, then b's 4, planned by the adopter.
	executedOnce(t, rec, 36)
}

// TestAdopterHandsBack: a worker that stops hands back the runs it adopted, without
// recording anything of them nor withdrawing their units; the run is an orphan again,
// and another worker adopts and finishes it.
func TestAdopterHandsBack(t *testing.T) {
	rec := &recorder{}
	reg := testRegistry(rec)
	db := testdb.URL(t)
	st := openStore(t, db)
	id := orphan(t, db, st, 30)

	first := &Adopter{Store: storesOf(openStore(t, db)), Registry: reg, By: "worker a1"}
	ctx, stopFirst := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		first.Watch(ctx, 100*time.Millisecond)
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r, err := st.GetRun(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == store.Running && r.FinishedBy == "worker a1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first worker never adopted the run: %s, %q", r.Status, r.FinishedBy)
		}
	}
	stopFirst()
	<-watched
	r, err := st.GetRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != store.Crashed || r.FinishedAt != nil {
		t.Errorf("a handed-back run reads %s, finished %v; want crashed (an orphan again), not finished", r.Status, r.FinishedAt)
	}
	if n := testdb.Int64(t, db, "SELECT count(*) FROM river_job WHERE state = 'available'"); n != 30 {
		t.Errorf("%d units queued after the hand-back, want the 30 still there", n)
	}

	_, stop := pool(t, db, reg, 2)
	defer stop()
	second := &Adopter{Store: storesOf(openStore(t, db)), Registry: reg, By: "worker a2"}
	if ids, err := second.Adopt(context.Background()); err != nil || len(ids) != 1 {
		t.Fatalf("the second worker adopted %v, %v; want run %d", ids, err, id)
	}
	r = waitRun(t, st, id)
	second.handBack()
	if r.Status != store.Done || r.FinishedBy != "worker a2" {
		t.Errorf("run %s, finished by %q; want done, by worker a2", r.Status, r.FinishedBy)
	}
	executedOnce(t, rec, 36)
}

// endRunSessions ends the database sessions that hold run id's lock, as a restart of the
// database would (runLockClass is postgis's 0x67660001), and returns how many it ended.
func endRunSessions(t *testing.T, db string, id int64) int64 {
	t.Helper()
	return testdb.Int64(t, db, `SELECT count(pg_terminate_backend(pid)) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND classid::bigint = 1734737921 AND objid::bigint = $1 AND objsubid = 2`, id)
}

// TestFollowerLosesHold: the process following a distributed run loses its session
// with the database (as in a restart) and a worker adopts the run before it takes its
// hold again: it lets go, recording nothing, and the adopter finishes the run, every unit
// once. Two processes never follow one run.
func TestFollowerLosesHold(t *testing.T) {
	rec := &recorder{}
	reg := testRegistry(rec)
	db := testdb.URL(t)
	st := openStore(t, db)
	f := writeFlow(t, testRegistry(nil), orphanFlow)
	var id atomic.Int64
	ran := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), f, RunOptions{Store: storesOf(st), Distributed: true, Started: func(run int64) { id.Store(run) }})
		ran <- err
	}()
	for deadline := time.Now().Add(30 * time.Second); testdb.Int64(t, db, "SELECT count(*) FROM river_job WHERE state = 'available'") < 30; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the run's units were never enqueued")
		}
	}
	adopter := &Adopter{Store: storesOf(openStore(t, db)), Registry: reg, By: "worker a1"}
	// The follower takes its hold again within half a second of losing it; the adopter
	// must come in between, which may take a few tries.
	for deadline := time.Now().Add(30 * time.Second); ; {
		if endRunSessions(t, db, id.Load()) > 0 {
			if ids, err := adopter.Adopt(context.Background()); err != nil || len(ids) == 1 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the adopter never took the run over from the follower")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-ran:
		if !errors.Is(err, ErrHandedBack) || !strings.Contains(err.Error(), "took the run over") {
			t.Errorf("the follower that lost its hold returned %v; want it handed back, saying why", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the follower went on following a run another process adopted")
	}
	_, stop := pool(t, db, reg, 2)
	defer stop()
	r := waitRun(t, st, id.Load())
	adopter.handBack()
	if r.Status != store.Done || r.FinishedBy != "worker a1" {
		t.Errorf("run %s, finished by %q; want done, by worker a1", r.Status, r.FinishedBy)
	}
	executedOnce(t, rec, 36)
}

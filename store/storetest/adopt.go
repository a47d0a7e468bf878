package storetest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/geoflow/geoflow/store"
)

// testAdopt: an adoption (RunStart.AdoptedBy) takes over a run still recorded running that
// no process holds, and records who finishes it; a run whose process is alive, an
// interrupted run and a finished one are not adopted; a person's resume later clears what
// an adoption recorded.
func testAdopt(t *testing.T, s store.Store) {
	ctx := t.Context()
	const flow = "orphans"
	adopt := func(id int64, by string) (*store.Run, error) {
		return s.StartRun(ctx, store.RunStart{Flow: flow, Resume: true, RunID: id, AdoptedBy: by})
	}
	record := func(id int64) store.RunRecord {
		t.Helper()
		r, err := s.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	refused := func(what string, run *store.Run, err error) {
		t.Helper()
		if !resumeBusy(err) {
			run.Close()
			t.Errorf("adopting %s: %+v, %v; want store.ErrNothingToResume", what, run, err)
		}
	}

	alive := startRun(t, s, store.RunStart{Flow: flow})
	run, err := adopt(alive.ID, "worker w1")
	refused("a run its process still holds", run, err)
	finishRun(t, s, alive, store.Interrupted, "")
	run, err = adopt(alive.ID, "worker w1")
	refused("an interrupted run", run, err)

	orphan := startRun(t, s, store.RunStart{Flow: flow})
	orphan.Close() // its process died
	if r := record(orphan.ID); r.FinishedBy != "" || r.AdoptedAt != nil {
		t.Errorf("a run nobody adopted reads finished by %q, adopted at %v; want neither", r.FinishedBy, r.AdoptedAt)
	}
	run, err = adopt(orphan.ID, "worker w1")
	if err != nil || run.ID != orphan.ID || !run.Resumed {
		t.Fatalf("adopting a run whose process is gone: %+v, %v", run, err)
	}
	again, err := adopt(orphan.ID, "worker w2")
	refused("a run another worker adopted", again, err)
	if r := record(orphan.ID); r.Status != store.Running || r.FinishedBy != "worker w1" || r.AdoptedAt == nil {
		t.Errorf("the adopted run reads %s, finished by %q, adopted at %v; want running, worker w1, a time", r.Status, r.FinishedBy, r.AdoptedAt)
	}
	finishRun(t, s, run, store.Done, "")
	if r := record(orphan.ID); r.Status != store.Done || r.FinishedBy != "worker w1" || r.AdoptedAt == nil {
		t.Errorf("the adopted run, finished, reads %s, finished by %q; want done, worker w1", r.Status, r.FinishedBy)
	}
	run, err = adopt(orphan.ID, "worker w2")
	refused("a run that is done", run, err)

	// Its adopter died too; a person resumes it: the resume finishes it, not the worker.
	twice := startRun(t, s, store.RunStart{Flow: flow})
	twice.Close()
	run, err = adopt(twice.ID, "worker w1")
	if err != nil {
		t.Fatal(err)
	}
	run.Close()
	resumed := startRun(t, s, store.RunStart{Flow: flow, Resume: true, RunID: twice.ID})
	if r := record(resumed.ID); r.FinishedBy != "" || r.AdoptedAt != nil {
		t.Errorf("a run a person resumed reads finished by %q, adopted at %v; want neither", r.FinishedBy, r.AdoptedAt)
	}
}

// testAdoptRace: adopters racing for one run whose process is gone adopt it once.
func testAdoptRace(t *testing.T, s store.Store) {
	const flow = "orphan_race"
	orphan := startRun(t, s, store.RunStart{Flow: flow})
	orphan.Close()
	const adopters = 8
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		adopted []*store.Run
		start   = make(chan struct{})
	)
	for i := range adopters {
		wg.Go(func() {
			<-start
			run, err := s.StartRun(t.Context(), store.RunStart{Flow: flow, Resume: true, RunID: orphan.ID, AdoptedBy: fmt.Sprintf("worker w%d", i+1)})
			switch {
			case err == nil:
				mu.Lock()
				adopted = append(adopted, run)
				mu.Unlock()
			case !resumeBusy(err):
				t.Errorf("adopter %d: %v", i+1, err)
			}
		})
	}
	close(start)
	wg.Wait()
	for _, r := range adopted {
		t.Cleanup(r.Close)
	}
	if len(adopted) != 1 {
		t.Fatalf("%d of %d racing adopters took the run, want 1", len(adopted), adopters)
	}
	r, err := s.GetRun(t.Context(), orphan.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.FinishedBy == "" {
		t.Errorf("the adopted run records no adopter")
	}
}

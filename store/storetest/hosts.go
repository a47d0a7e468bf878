package storetest

import (
	"reflect"
	"testing"
	"time"

	"github.com/geoflow/geoflow/store"
)

// testUnitHosts: what a unit's executions asked of each host is recorded with its
// outcome and added up over its executions (one cut short, then one done, each by its
// process), a rolled-back transaction records nothing, a task's own requests count
// too, and GetRun (and FinishRun) sum them per host and split them per process.
func testUnitHosts(t *testing.T, s store.Store) {
	ctx := t.Context()
	run := startRun(t, s, store.RunStart{Flow: "hosts"})
	addUnits(t, s, run.ID, "a", 3)
	const hostA, hostB = "https://a.example:443", "http://b.example:8080"
	ref := func(i int) store.UnitRef { return store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(i)} }
	execute := func(i int, x store.Execution, done, commit bool) {
		t.Helper()
		tx, err := s.BeginUnit(ctx, ref(i))
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if err := tx.AddExecution(ctx, x); err != nil {
			t.Fatalf("unit %d: AddExecution: %v", i, err)
		}
		if done {
			if err := tx.Complete(ctx, store.Counts{Requests: 1}, nil, nil, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		if commit {
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	execute(0, store.Execution{Worker: "w1", Hosts: []store.HostCount{
		{Host: hostA, Requests: 5, Retries: 2, RateLimited: 1, WaitedMS: 1500, BreakerOpened: 1},
		{Host: hostB, Requests: 1},
	}}, true, true)
	// Unit 1 is cut short on w2 (its requests are recorded alone), then done on w1.
	execute(1, store.Execution{Worker: "w2", Hosts: []store.HostCount{{Host: hostA, Requests: 3, Retries: 1, RateLimited: 2, WaitedMS: 250}}}, false, true)
	if err := s.EndUnit(ctx, ref(1), store.Interrupted, "interrupted by shutdown"); err != nil {
		t.Fatal(err)
	}
	execute(1, store.Execution{Worker: "w1", Hosts: []store.HostCount{{Host: hostA, Requests: 2}}}, true, true)
	// Unit 2's transaction rolls back: nothing of it stays.
	execute(2, store.Execution{Worker: "w3", Hosts: []store.HostCount{{Host: hostA, Requests: 100}}}, true, false)
	if err := s.AddTaskExecution(ctx, run.ID, "a", store.Execution{Worker: "starter", Hosts: []store.HostCount{{Host: hostA, Requests: 1}}}); err != nil {
		t.Fatalf("AddTaskExecution: %v", err)
	}

	want := store.RunHosts{
		Hosts: []store.HostCount{ // in the order of their names: http before https
			{Host: hostB, Requests: 1},
			{Host: hostA, Requests: 11, Retries: 3, RateLimited: 3, WaitedMS: 1750, BreakerOpened: 1},
		},
		Workers: []store.WorkerHosts{
			{Worker: "starter", Hosts: []store.HostCount{{Host: hostA, Requests: 1}}},
			{Worker: "w1", Units: 2, Hosts: []store.HostCount{
				{Host: hostB, Requests: 1},
				{Host: hostA, Requests: 7, Retries: 2, RateLimited: 1, WaitedMS: 1500, BreakerOpened: 1},
			}},
			{Worker: "w2", Hosts: []store.HostCount{{Host: hostA, Requests: 3, Retries: 1, RateLimited: 2, WaitedMS: 250}}},
		},
	}
	got, err := s.GetRun(ctx, run.ID)
	if err != nil {
		t.Fatalf("GetRun: %v", err)
	}
	if !reflect.DeepEqual(got.RunHosts, want) {
		t.Errorf("GetRun's hosts =\n%+v\nwant\n%+v", got.RunHosts, want)
	}
	units, _, err := s.ListUnits(ctx, store.UnitFilter{RunID: run.ID})
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range []string{"w1", "w1", ""} {
		if units[i].Worker != w {
			t.Errorf("unit %s: Worker = %q, want %q", units[i].Key, units[i].Worker, w)
		}
	}
	sum, err := s.FinishRun(ctx, run.ID, store.Done, "")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sum.Hosts, want) {
		t.Errorf("FinishRun's Hosts =\n%+v\nwant\n%+v", sum.Hosts, want)
	}

	// A run that sent nothing has no hosts, and no workers.
	run.Close()
	quiet := startRun(t, s, store.RunStart{Flow: "quiet"})
	got, err = s.GetRun(ctx, quiet.ID)
	if err != nil || len(got.Hosts) != 0 || len(got.Workers) != 0 {
		t.Errorf("GetRun of a run without requests: hosts %+v, %v; want none", got.RunHosts, err)
	}
}

package schedule_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/schedule"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/postgis"
)

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

package postgis

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/store"
)

func TestClaimFire(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	at := time.Date(2025, 6, 1, 2, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		flow     string
		at       time.Time
		instance string
		want     bool
	}{
		{name: "first claim wins", flow: "p", at: at, instance: "a", want: true},
		{name: "another instance loses", flow: "p", at: at, instance: "b", want: false},
		{name: "the same instance again loses", flow: "p", at: at, instance: "a", want: false},
		{name: "the same time in another zone is the same fire", flow: "p", at: at.In(time.FixedZone("X", 7200)), instance: "b", want: false},
		{name: "the next fire is free", flow: "p", at: at.Add(time.Hour), instance: "b", want: true},
		{name: "another flow is free", flow: "q", at: at, instance: "b", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ClaimFire(ctx, tt.flow, tt.at, tt.instance, false)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("won %v, want %v", got, tt.want)
			}
		})
	}
	last, ok, err := s.LastFire(ctx, "p")
	if err != nil || !ok || !last.Equal(at.Add(time.Hour)) {
		t.Errorf("LastFire(p) = %v, %v, %v", last, ok, err)
	}
	if _, ok, err := s.LastFire(ctx, "never"); err != nil || ok {
		t.Errorf("LastFire(never) = %v, %v", ok, err)
	}
}

func TestMarkFireLinksRun(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	at := time.Date(2025, 6, 1, 2, 0, 0, 0, time.UTC)
	if _, err := s.ClaimFire(ctx, "p", at, "a", true); err != nil {
		t.Fatal(err)
	}
	run, err := s.StartRun(ctx, store.RunStart{Flow: "p", Trigger: "schedule"})
	if err != nil {
		t.Fatal(err)
	}
	run.Close()
	if err := s.MarkFire(ctx, "p", at, store.FireRunning, 0, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkFire(ctx, "p", at, store.FireRan, run.ID, ""); err != nil {
		t.Fatal(err)
	}
	fires, err := s.ListFires(ctx, "p", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(fires) != 1 || fires[0].Status != store.FireRan || fires[0].RunID == nil || *fires[0].RunID != run.ID || !fires[0].Catchup || fires[0].ClaimedBy != "a" {
		t.Fatalf("fires %+v", fires)
	}
	got, err := s.GetRun(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ScheduledFor == nil || !got.ScheduledFor.Equal(at) || got.Trigger != "schedule" {
		t.Errorf("run %+v: want scheduled for %v", got, at)
	}
	if err := s.MarkFire(ctx, "p", at, "exploded", 0, ""); err == nil {
		t.Error("an unknown status was accepted")
	}
}

func TestRunStartScheduledFor(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	at := time.Date(2025, 6, 1, 2, 0, 0, 0, time.UTC)
	run, err := s.StartRun(ctx, store.RunStart{Flow: "p", Trigger: "schedule", ScheduledFor: &at})
	if err != nil {
		t.Fatal(err)
	}
	run.Close()
	got, err := s.GetRun(ctx, run.ID)
	if err != nil || got.ScheduledFor == nil || !got.ScheduledFor.Equal(at) {
		t.Errorf("GetRun = %+v, %v", got, err)
	}
}

func TestFlowLock(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	try := func(flow string, shared bool) store.FlowLock {
		t.Helper()
		l, ok, err := s.TryLockFlow(ctx, flow, shared)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return nil
		}
		return l
	}
	a := try("p", false)
	if a == nil {
		t.Fatal("a free flow could not be locked")
	}
	if try("p", false) != nil || try("p", true) != nil {
		t.Error("a locked flow was locked again")
	}
	other := try("q", false)
	if other == nil {
		t.Error("another flow could not be locked")
	}
	other.Release()
	a.Release()
	a.Release() // twice is harmless
	var none *flowLock
	none.Release()

	s1, s2 := try("p", true), try("p", true)
	if s1 == nil || s2 == nil {
		t.Fatal("shared locks exclude each other")
	}
	if try("p", false) != nil {
		t.Error("exclusive lock taken while shared ones are held")
	}
	s1.Release()
	s2.Release()
	if l := try("p", false); l == nil {
		t.Error("released locks still held")
	} else {
		l.Release()
	}
}

func TestFlowRunning(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	running := func(flow string) bool {
		t.Helper()
		r, err := s.FlowRunning(ctx, flow)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if running("p") {
		t.Error("a flow without runs is running")
	}
	run, err := s.StartRun(ctx, store.RunStart{Flow: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if !running("p") || running("q") {
		t.Error("the run going is not seen (or seen for another flow)")
	}
	run.Close() // as a crash leaves it: running, unlocked
	if running("p") {
		t.Error("a run nobody holds counts as going")
	}
	held, err := s.HoldRun(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if _, err := s.FinishRun(ctx, run.ID, "done", ""); err != nil {
		t.Fatal(err)
	}
	if running("p") {
		t.Error("a finished run counts as going")
	}
}

func TestPruneFires(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	now := time.Now().Truncate(time.Second)
	for _, f := range []struct {
		flow string
		ago  time.Duration
	}{{"p", 40 * 24 * time.Hour}, {"p", 35 * 24 * time.Hour}, {"p", time.Hour}, {"q", 50 * 24 * time.Hour}} {
		if _, err := s.ClaimFire(ctx, f.flow, now.Add(-f.ago), "a", false); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.PruneFires(ctx, now.Add(-30*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("pruned %d, want the 2 old fires of p (q's only fire stays for catchup)", n)
	}
	if last, ok, _ := s.LastFire(ctx, "q"); !ok || !last.Equal(now.Add(-50*24*time.Hour)) {
		t.Errorf("q's last fire is gone: %v %v", last, ok)
	}
}

func TestListAndGetRuns(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	done := startRun(t, s, "p", "a", 3)
	for i, key := range []string{"u000", "u001"} {
		ref := store.UnitRef{RunID: done, TaskID: "a", Key: key}
		if _, err := s.pool.Exec(ctx, `UPDATE geoflow_units SET state = 'running', attempts = attempts + 1, started_at = now()
			WHERE run_id = $1 AND task = $2 AND key = $3`, ref.RunID, ref.TaskID, ref.Key); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			if err := s.EndUnit(ctx, ref, "failed", "boom"); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if _, err := s.pool.Exec(ctx, `UPDATE geoflow_units SET state = 'done', features_inserted = 7 WHERE run_id = $1 AND key = $2`, done, key); err != nil {
			t.Fatal(err)
		}
	}
	// Still running: counts are live.
	live, err := s.GetRun(ctx, done)
	if err != nil {
		t.Fatal(err)
	}
	if live.Status != "running" || live.UnitsTotal != 3 || live.UnitsDone != 1 || live.UnitsDead != 1 || live.FeaturesInserted != 7 {
		t.Errorf("live run %+v", live)
	}
	if len(live.Tasks) != 1 || live.Tasks[0].UnitsDone != 1 || live.Tasks[0].State != "running" {
		t.Errorf("live tasks %+v", live.Tasks)
	}
	if err := s.SetTaskState(ctx, done, "a", "fake", "failed", "1 units failed"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FinishRun(ctx, done, "failed", ""); err != nil {
		t.Fatal(err)
	}
	other := startRun(t, s, "q", "a", 1)

	tests := []struct {
		name string
		f    store.RunFilter
		want []int64
	}{
		{name: "all, latest first", want: []int64{other, done}},
		{name: "by flow", f: store.RunFilter{Flow: "p"}, want: []int64{done}},
		{name: "by status", f: store.RunFilter{Status: "running"}, want: []int64{other}},
		{name: "both", f: store.RunFilter{Flow: "q", Status: "failed"}},
		{name: "limit", f: store.RunFilter{Limit: 1}, want: []int64{other}},
		{name: "no limit", f: store.RunFilter{Limit: -1}, want: []int64{other, done}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs, err := s.ListRuns(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, r := range runs {
				ids = append(ids, r.ID)
			}
			if len(ids) != len(tt.want) {
				t.Fatalf("runs %v, want %v", ids, tt.want)
			}
			for i := range ids {
				if ids[i] != tt.want[i] {
					t.Fatalf("runs %v, want %v", ids, tt.want)
				}
			}
		})
	}
	got, err := s.GetRun(ctx, done)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "failed" || got.FinishedAt == nil || got.UnitsDone != 1 || got.UnitsDead != 1 || got.Trigger != "manual" ||
		len(got.Tasks) != 1 || got.Tasks[0].State != "failed" || got.Tasks[0].Error != "1 units failed" {
		t.Errorf("finished run %+v", got)
	}
	if _, err := s.GetRun(ctx, 999999); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetRun of a missing run: %v", err)
	}
}

func TestCheckMigrations(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, testdb.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckMigrations(ctx); !errors.Is(err, store.ErrMigrationsPending) {
		t.Errorf("fresh database: %v", err)
	}
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckMigrations(ctx); err != nil {
		t.Errorf("migrated database: %v", err)
	}
}

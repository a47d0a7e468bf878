package postgis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/store"
)

func TestMain(m *testing.M) { testdb.Main(m) }

func openTestStore(t *testing.T) *Store {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, testdb.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// startRun records a run of flow with one task holding units u000..u(n-1), the i-th with
// bbox [i,0,i+1,1].
func startRun(t *testing.T, s *Store, flow, task string, n int) int64 {
	t.Helper()
	ctx := context.Background()
	run, err := s.StartRun(ctx, store.RunStart{Flow: flow, FlowFile: "/flows/" + flow + ".yaml"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(run.Close)
	if err := s.SetTaskState(ctx, run.ID, task, "fake", "running", ""); err != nil {
		t.Fatal(err)
	}
	var units []store.Unit
	for i := range n {
		b := orb.Bound{Min: orb.Point{float64(i), 0}, Max: orb.Point{float64(i) + 1, 1}}
		units = append(units, store.Unit{Key: fmt.Sprintf("u%03d", i), BBox: &b})
	}
	if err := s.AddUnits(ctx, run.ID, task, units); err != nil {
		t.Fatal(err)
	}
	return run.ID
}

func unitBBox(i int) *orb.Bound {
	return &orb.Bound{Min: orb.Point{float64(i), 0}, Max: orb.Point{float64(i) + 1, 1}}
}

func record(t *testing.T, s *Store, flow string, run int64, task string, i int, class dlq.Class, url string) int64 {
	t.Helper()
	id, err := s.RecordDeadLetter(context.Background(), store.UnitRef{RunID: run, TaskID: task, Key: fmt.Sprintf("u%03d", i)}, dlq.Entry{
		Flow: flow, BBox: unitBBox(i), Class: class, Error: "it broke", HTTPStatus: 503, Attempts: 3,
		Request: dlq.Request{Method: "GET", URL: url}, Snippet: "<html>busy</html>",
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestRecordDeadLetterOneEntryPerUnit(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	run := startRun(t, s, "parcels", "wfs", 3)
	ref := store.UnitRef{RunID: run, TaskID: "wfs", Key: "u001"}

	first := dlq.Entry{Flow: "parcels", BBox: unitBBox(1), Class: dlq.ClassHTTP5xx, HTTPStatus: 503, Attempts: 5,
		Error: "GET https://example.com/wfs?apikey=SECRET: http_5xx 503", Snippet: "busy, token=SECRET",
		Request: dlq.Request{Method: "GET", URL: "https://example.com/wfs?apikey=SECRET&typeName=x"}}
	id1, err := s.RecordDeadLetter(ctx, ref, first)
	if err != nil {
		t.Fatal(err)
	}
	e1, err := s.GetDeadLetter(ctx, id1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DiscardDeadLetters(ctx, []int64{id1}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // last_failed_at must move
	second := dlq.Entry{Flow: "parcels", Class: dlq.ClassParse, Attempts: 1, Error: "bad XML",
		History: []dlq.ReplayItem{{At: time.Now(), Result: dlq.ReplayFailed, Class: dlq.ClassParse, Error: "bad XML"}}}
	id2, err := s.RecordDeadLetter(ctx, ref, second)
	if err != nil {
		t.Fatal(err)
	}
	if id2 != id1 {
		t.Fatalf("second failure made entry %d, want the same entry %d", id2, id1)
	}
	all, err := s.ListDeadLetters(ctx, dlq.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 {
		t.Fatalf("%d entries, want 1 per unit", len(all))
	}
	e := all[0]
	if e.Attempts != 6 || e.Class != dlq.ClassParse || e.Error != "bad XML" || e.HTTPStatus != 0 || e.Request.URL != "" {
		t.Errorf("after the second failure: attempts %d class %s error %q status %d url %q; want 6, parse, bad XML, 0, none",
			e.Attempts, e.Class, e.Error, e.HTTPStatus, e.Request.URL)
	}
	if e.Status != dlq.StatusOpen {
		t.Errorf("status %s, want open again after a new failure", e.Status)
	}
	if !e.FirstFailedAt.Equal(e1.FirstFailedAt) || !e.LastFailedAt.After(e1.LastFailedAt) {
		t.Errorf("first/last failed at %v/%v, want first kept (%v) and last later", e.FirstFailedAt, e.LastFailedAt, e1.FirstFailedAt)
	}
	if e.BBox == nil || *e.BBox != *unitBBox(1) {
		t.Errorf("bbox %v, want the unit's %v kept", e.BBox, unitBBox(1))
	}
	if len(e.History) != 1 || e.History[0].Result != dlq.ReplayFailed {
		t.Errorf("history %+v, want the failed replay", e.History)
	}
	for _, s := range []string{e1.Request.URL, e1.Error, e1.Snippet} {
		if strings.Contains(s, "SECRET") {
			t.Errorf("stored text %q holds the secret", s)
		}
	}
	_, state, err := s.Unit(ctx, ref)
	if err != nil || state != "failed" {
		t.Errorf("unit state %q (%v), want failed", state, err)
	}
}

func TestListDeadLettersFilters(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	runA := startRun(t, s, "parcels", "wfs", 5)
	runB := startRun(t, s, "roads", "tiles", 5)
	ids := map[string]int64{
		"a0": record(t, s, "parcels", runA, "wfs", 0, dlq.ClassHTTP5xx, "https://a.example/wfs"),
		"a1": record(t, s, "parcels", runA, "wfs", 1, dlq.ClassHTTP5xx, "https://a.example/wfs"),
		"a3": record(t, s, "parcels", runA, "wfs", 3, dlq.ClassParse, "https://a.example/wfs"),
		"b2": record(t, s, "roads", runB, "tiles", 2, dlq.ClassTimeout, "https://b.example:8443/t/1/2/3.png"),
		"b4": record(t, s, "roads", runB, "tiles", 4, dlq.ClassHTTP4xx, ""),
	}
	// An old entry, and a discarded one.
	if _, err := s.pool.Exec(ctx, "UPDATE geoflow_dlq SET first_failed_at = now() - interval '40 days', last_failed_at = now() - interval '40 days' WHERE id = $1", ids["a0"]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DiscardDeadLetters(ctx, []int64{ids["b4"]}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		f    dlq.Filter
		want []string
	}{
		{name: "all", f: dlq.Filter{}, want: []string{"a0", "a1", "a3", "b2", "b4"}},
		{name: "flow", f: dlq.Filter{Flow: "roads"}, want: []string{"b2", "b4"}},
		{name: "task", f: dlq.Filter{Task: "wfs"}, want: []string{"a0", "a1", "a3"}},
		{name: "run", f: dlq.Filter{RunID: runB}, want: []string{"b2", "b4"}},
		{name: "class", f: dlq.Filter{Class: dlq.ClassHTTP5xx}, want: []string{"a0", "a1"}},
		{name: "status", f: dlq.Filter{Status: dlq.StatusDiscarded}, want: []string{"b4"}},
		{name: "since", f: dlq.Filter{Since: time.Now().Add(-24 * time.Hour)}, want: []string{"a1", "a3", "b2", "b4"}},
		{name: "before", f: dlq.Filter{Before: time.Now().Add(-30 * 24 * time.Hour)}, want: []string{"a0"}},
		{name: "bbox", f: dlq.Filter{BBox: &orb.Bound{Min: orb.Point{1.5, 0.2}, Max: orb.Point{2.5, 0.8}}}, want: []string{"a1", "b2"}},
		{name: "bbox misses", f: dlq.Filter{BBox: &orb.Bound{Min: orb.Point{10, 10}, Max: orb.Point{11, 11}}}, want: nil},
		{name: "ids", f: dlq.Filter{IDs: []int64{ids["a3"], ids["b2"]}}, want: []string{"a3", "b2"}},
		{name: "combined", f: dlq.Filter{Flow: "parcels", Class: dlq.ClassHTTP5xx, Since: time.Now().Add(-time.Hour)}, want: []string{"a1"}},
		{name: "limit", f: dlq.Filter{Limit: 2}, want: []string{"a0", "a1"}},
	}
	name := map[int64]string{}
	for k, id := range ids {
		name[id] = k
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ListDeadLetters(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range got {
				names = append(names, name[e.ID])
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("got %v, want %v", names, tt.want)
			}
		})
	}
}

func TestDeadLetterStatsAndCounts(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	run := startRun(t, s, "parcels", "wfs", 4)
	record(t, s, "parcels", run, "wfs", 0, dlq.ClassHTTP5xx, "https://user:pw@a.example/wfs?x=1")
	record(t, s, "parcels", run, "wfs", 1, dlq.ClassHTTP5xx, "https://a.example/wfs")
	id := record(t, s, "parcels", run, "wfs", 2, dlq.ClassParse, "http://b.example:8080/x")
	record(t, s, "parcels", run, "wfs", 3, dlq.ClassDatabase, "")
	if _, err := s.DiscardDeadLetters(ctx, []int64{id}); err != nil {
		t.Fatal(err)
	}
	rows, err := s.DeadLetterStats(ctx, dlq.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	st := dlq.Aggregate(rows)
	want := dlq.Stats{
		Total:    4,
		ByClass:  []dlq.Count{{Key: "http_5xx", N: 2}, {Key: "database", N: 1}, {Key: "parse", N: 1}},
		ByTask:   []dlq.Count{{Key: "wfs", N: 4}},
		ByHost:   []dlq.Count{{Key: "a.example", N: 2}, {Key: dlq.NoHost, N: 1}, {Key: "b.example:8080", N: 1}},
		ByStatus: []dlq.Count{{Key: "open", N: 3}, {Key: "discarded", N: 1}},
	}
	if fmt.Sprint(st) != fmt.Sprint(want) {
		t.Errorf("stats\n got %+v\nwant %+v", st, want)
	}
	counts, err := s.DeadLetterCounts(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(counts) != fmt.Sprint(map[dlq.Class]int64{"database": 1, "http_5xx": 2}) {
		t.Errorf("open counts of the run = %v", counts)
	}
}

func TestDiscardReplayPurge(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	run := startRun(t, s, "parcels", "wfs", 4)
	var ids []int64
	for i := range 4 {
		ids = append(ids, record(t, s, "parcels", run, "wfs", i, dlq.ClassHTTP5xx, "https://a.example/wfs"))
	}
	done, err := s.DiscardDeadLetters(ctx, []int64{ids[0], ids[1], 999999})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(done, []int64{ids[0], ids[1]}) && !slices.Equal(done, []int64{ids[1], ids[0]}) {
		t.Errorf("discarded %v, want %v", done, ids[:2])
	}
	if again, _ := s.DiscardDeadLetters(ctx, []int64{ids[0]}); len(again) != 0 {
		t.Errorf("discarding a discarded entry reported %v", again)
	}
	at := time.Now().UTC().Truncate(time.Millisecond)
	if err := s.MarkReplayed(ctx, ids[2], dlq.ReplayItem{At: at, Result: dlq.ReplayOK}); err != nil {
		t.Fatal(err)
	}
	e, err := s.GetDeadLetter(ctx, ids[2])
	if err != nil {
		t.Fatal(err)
	}
	if e.Status != dlq.StatusReplayed || len(e.History) != 1 || !e.History[0].At.Equal(at) {
		t.Errorf("after replay: status %s history %+v", e.Status, e.History)
	}
	if err := s.MarkReplayed(ctx, 999999, dlq.ReplayItem{}); !errors.Is(err, dlq.ErrNotFound) {
		t.Errorf("MarkReplayed of a missing entry: %v, want dlq.ErrNotFound", err)
	}
	if _, err := s.GetDeadLetter(ctx, 999999); !errors.Is(err, dlq.ErrNotFound) {
		t.Errorf("GetDeadLetter of a missing entry: %v, want dlq.ErrNotFound", err)
	}

	if _, err := s.pool.Exec(ctx, "UPDATE geoflow_dlq SET last_failed_at = now() - interval '40 days'"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PurgeDeadLetters(ctx, time.Time{}); err == nil {
		t.Error("purging without a time succeeded")
	}
	n, err := s.PurgeDeadLetters(ctx, time.Now().Add(-50*24*time.Hour))
	if err != nil || n != 0 {
		t.Errorf("purge older than 50 days deleted %d (%v), want 0", n, err)
	}
	n, err = s.PurgeDeadLetters(ctx, time.Now().Add(-30*24*time.Hour), dlq.StatusReplayed, dlq.StatusDiscarded)
	if err != nil || n != 3 {
		t.Errorf("purge of closed entries deleted %d (%v), want 3", n, err)
	}
	left, err := s.ListDeadLetters(ctx, dlq.Filter{})
	if err != nil || len(left) != 1 || left[0].ID != ids[3] {
		t.Errorf("left after purge: %v (%v), want only the open entry %d", left, err, ids[3])
	}
}

func TestHoldRun(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	run, err := s.StartRun(ctx, store.RunStart{Flow: "busy"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.HoldRun(ctx, run.ID); !errors.Is(err, store.ErrRunBusy) {
		t.Fatalf("holding a run another session holds: %v, want store.ErrRunBusy", err)
	}
	run.Close()
	h, err := s.HoldRun(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
}

func TestCloseDeadLettersOfDoneUnits(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	run := startRun(t, s, "parcels", "wfs", 3)
	done := record(t, s, "parcels", run, "wfs", 0, dlq.ClassTimeout, "")
	still := record(t, s, "parcels", run, "wfs", 1, dlq.ClassTimeout, "")
	// A resumed run executes u000 again, successfully.
	_, err := commitUnit(ctx, s, store.UnitRef{RunID: run, TaskID: "wfs", Key: "u000"},
		func(context.Context, store.UnitTx) (store.Counts, error) { return store.Counts{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.CloseDeadLetters(ctx, run)
	if err != nil || n != 1 {
		t.Fatalf("closed %d (%v), want 1", n, err)
	}
	for id, want := range map[int64]dlq.Status{done: dlq.StatusReplayed, still: dlq.StatusOpen} {
		e, err := s.GetDeadLetter(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if e.Status != want {
			t.Errorf("entry of %s is %s, want %s", e.Unit, e.Status, want)
		}
	}
	info, err := s.RunInfo(ctx, run)
	if err != nil || info.Flow != "parcels" || info.FlowFile != "/flows/parcels.yaml" || info.Area != nil {
		t.Errorf("RunInfo = %+v (%v)", info, err)
	}
}

// TestNoSecretAnywhere: whatever a task's error carries, no credential lands in the
// dead-letter table or the unit's row.
func TestNoSecretAnywhere(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	run := startRun(t, s, "parcels", "wfs", 1)
	_, err := s.RecordDeadLetter(ctx, store.UnitRef{RunID: run, TaskID: "wfs", Key: "u000"}, dlq.Entry{
		Flow: "parcels", Class: dlq.ClassHTTP4xx, HTTPStatus: 401,
		Error:   "GET https://x.example/wfs?token=SECRET: Authorization: Bearer SECRET",
		Snippet: "invalid key=SECRET",
		Request: dlq.Request{Method: "POST", URL: "https://user:SECRET@x.example/wfs?access_token=SECRET", Body: "password=SECRET"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	err = s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM geoflow_dlq d WHERE d::text LIKE '%SECRET%')
		+ (SELECT count(*) FROM geoflow_units u WHERE u::text LIKE '%SECRET%')`).Scan(&n)
	if err != nil || n != 0 {
		t.Errorf("%d rows hold the secret (%v)", n, err)
	}
}

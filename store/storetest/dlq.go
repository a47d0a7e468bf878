package storetest

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/store"
)

// sameHistory compares replay histories, times to the millisecond.
func sameHistory(t *testing.T, what string, got, want []dlq.ReplayItem) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: history %+v, want %+v", what, got, want)
		return
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Result != w.Result || g.Class != w.Class || g.Error != w.Error {
			t.Errorf("%s: history item %d = %+v, want %+v", what, i, g, w)
		}
		near(t, what+": history time", g.At, w.At, roundTrip)
	}
}

// entryIDs lists the ids of entries.
func entryIDs(es []dlq.Entry) []int64 {
	ids := make([]int64, len(es))
	for i, e := range es {
		ids[i] = e.ID
	}
	return ids
}

// testRecordDeadLetter: a unit's failure is recorded as its failed state and one entry,
// which a later failure of the same unit updates: failure fields replaced, attempts
// added up, first failure kept, history appended, status open again.
func testRecordDeadLetter(t *testing.T, s store.Store) {
	ctx := t.Context()
	run := startRun(t, s, store.RunStart{Flow: "parcels"})
	addUnits(t, s, run.ID, "wfs", 3)
	ref := store.UnitRef{RunID: run.ID, TaskID: "wfs", Key: unitKey(1)}
	at0 := time.Date(2025, 6, 1, 2, 0, 0, 123e6, time.UTC)
	first := dlq.Entry{
		// ref names the unit: the entry's own Task, RunID and Unit are not what is recorded.
		Flow: "parcels", Task: "elsewhere", RunID: run.ID + 100, Unit: "u999", BBox: unitBBox(1),
		Class: dlq.ClassHTTP5xx, HTTPStatus: 503, Attempts: 5, Error: "GET https://example.com/wfs: http_5xx 503",
		Snippet: "<html>busy</html>", Request: dlq.Request{Method: "POST", URL: "https://example.com/wfs?typeName=q", Body: "<GetFeature/>"},
		History: []dlq.ReplayItem{{At: at0, Result: dlq.ReplayFailed, Class: dlq.ClassHTTP5xx, Error: "503"}},
	}
	before := time.Now()
	id, err := s.RecordDeadLetter(ctx, ref, first)
	if err != nil {
		t.Fatal(err)
	}
	if id <= 0 {
		t.Fatalf("RecordDeadLetter returned id %d", id)
	}
	e1, err := s.GetDeadLetter(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if e1.ID != id || e1.Flow != "parcels" || e1.Task != "wfs" || e1.RunID != run.ID || e1.Unit != unitKey(1) ||
		!sameBound(e1.BBox, unitBBox(1)) || e1.Request != first.Request || e1.Class != dlq.ClassHTTP5xx ||
		e1.Error != first.Error || e1.HTTPStatus != 503 || e1.Snippet != first.Snippet || e1.Attempts != 5 || e1.Status != dlq.StatusOpen {
		t.Errorf("recorded entry = %+v (bbox %s)\nwant the failure of unit %s of task wfs in run %d, open", e1, fmtBound(e1.BBox), unitKey(1), run.ID)
	}
	sameHistory(t, "first failure", e1.History, first.History)
	near(t, "FirstFailedAt", e1.FirstFailedAt, before, timeSlack)
	near(t, "LastFailedAt", e1.LastFailedAt, e1.FirstFailedAt, roundTrip)
	if _, state, err := s.Unit(ctx, ref); err != nil || state != store.Failed {
		t.Errorf("the unit is %q (%v), want failed", state, err)
	}
	if open, err := s.OpenUnits(ctx, run.ID, "wfs"); err != nil || !slices.Contains(unitKeys(open), unitKey(1)) {
		t.Errorf("open units %v (%v): a failed unit is not done", unitKeys(open), err)
	}

	if _, err := s.DiscardDeadLetters(ctx, []int64{id}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // the last failure must be later
	at1 := at0.Add(time.Hour)
	second := dlq.Entry{Flow: "parcels", Class: dlq.ClassParse, Attempts: 1, Error: "bad XML",
		History: []dlq.ReplayItem{{At: at1, Result: dlq.ReplayFailed, Class: dlq.ClassParse, Error: "bad XML"}}}
	id2, err := s.RecordDeadLetter(ctx, ref, second)
	if err != nil {
		t.Fatal(err)
	}
	if id2 != id {
		t.Fatalf("a second failure of the unit made entry %d, want its entry %d", id2, id)
	}
	all, err := s.ListDeadLetters(ctx, dlq.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 {
		t.Fatalf("%d entries, want one per unit", len(all))
	}
	e := all[0]
	if e.Attempts != 6 || e.Class != dlq.ClassParse || e.Error != "bad XML" || e.HTTPStatus != 0 || e.Snippet != "" ||
		e.Request != (dlq.Request{}) || e.Status != dlq.StatusOpen {
		t.Errorf("after the second failure = %+v\nwant 6 attempts, parse, bad XML, no status, snippet or request, open again", e)
	}
	if !sameBound(e.BBox, unitBBox(1)) {
		t.Errorf("bbox %s, want the unit's %s kept when the new failure has none", fmtBound(e.BBox), fmtBound(unitBBox(1)))
	}
	near(t, "FirstFailedAt after the second failure", e.FirstFailedAt, e1.FirstFailedAt, roundTrip)
	if !e.LastFailedAt.After(e1.LastFailedAt) {
		t.Errorf("LastFailedAt %v, want after the first failure's %v", e.LastFailedAt, e1.LastFailedAt)
	}
	sameHistory(t, "second failure", e.History, append(slices.Clone(first.History), second.History...))

	// No attempts given counts as one; another unit gets its own entry.
	if _, err := s.RecordDeadLetter(ctx, ref, dlq.Entry{Flow: "parcels", Class: dlq.ClassTimeout, Error: "timeout"}); err != nil {
		t.Fatal(err)
	}
	if e, err := s.GetDeadLetter(ctx, id); err != nil || e.Attempts != 7 || len(e.History) != 2 {
		t.Errorf("after a third failure: attempts %d history %d (%v), want 7 and the history kept", e.Attempts, len(e.History), err)
	}
	other := recordDead(t, s, "parcels", run.ID, "wfs", 2, dlq.ClassHTTP4xx, "")
	if other == id {
		t.Errorf("another unit's failure updated entry %d", id)
	}
	if _, err := s.GetDeadLetter(ctx, other+1000); !errors.Is(err, dlq.ErrNotFound) {
		t.Errorf("GetDeadLetter of a missing entry: %v, want dlq.ErrNotFound", err)
	}
}

// testListDeadLetters: every filter field selects what it says, alone and together,
// oldest entry first.
func testListDeadLetters(t *testing.T, s store.Store) {
	ctx := t.Context()
	runA := startRun(t, s, store.RunStart{Flow: "parcels"})
	addUnits(t, s, runA.ID, "wfs", 5)
	runB := startRun(t, s, store.RunStart{Flow: "roads"})
	addUnits(t, s, runB.ID, "tiles", 5)
	ids := map[string]int64{}
	ids["a0"] = recordDead(t, s, "parcels", runA.ID, "wfs", 0, dlq.ClassHTTP5xx, "https://a.example/wfs")
	ids["b4"] = recordDead(t, s, "roads", runB.ID, "tiles", 4, dlq.ClassHTTP4xx, "")
	time.Sleep(50 * time.Millisecond)
	mid := time.Now()
	time.Sleep(50 * time.Millisecond)
	ids["a1"] = recordDead(t, s, "parcels", runA.ID, "wfs", 1, dlq.ClassHTTP5xx, "https://a.example/wfs")
	ids["a3"] = recordDead(t, s, "parcels", runA.ID, "wfs", 3, dlq.ClassParse, "https://a.example/wfs")
	ids["b2"] = recordDead(t, s, "roads", runB.ID, "tiles", 2, dlq.ClassTimeout, "https://b.example:8443/t/1/2/3.png")
	id, err := s.RecordDeadLetter(ctx, store.UnitRef{RunID: runB.ID, TaskID: "tiles", Key: unitKey(0)},
		dlq.Entry{Flow: "roads", Class: dlq.ClassDatabase, Error: "no bbox"})
	if err != nil {
		t.Fatal(err)
	}
	ids["n0"] = id
	if _, err := s.DiscardDeadLetters(ctx, []int64{ids["b4"]}); err != nil {
		t.Fatal(err)
	}
	name := map[int64]string{}
	for k, id := range ids {
		name[id] = k
	}
	box := func(x0, y0, x1, y1 float64) *orb.Bound {
		return &orb.Bound{Min: orb.Point{x0, y0}, Max: orb.Point{x1, y1}}
	}
	tests := []struct {
		name string
		f    dlq.Filter
		want []string
	}{
		{name: "all", f: dlq.Filter{}, want: []string{"a0", "b4", "a1", "a3", "b2", "n0"}},
		{name: "flow", f: dlq.Filter{Flow: "roads"}, want: []string{"b4", "b2", "n0"}},
		{name: "task", f: dlq.Filter{Task: "wfs"}, want: []string{"a0", "a1", "a3"}},
		{name: "run", f: dlq.Filter{RunID: runB.ID}, want: []string{"b4", "b2", "n0"}},
		{name: "class", f: dlq.Filter{Class: dlq.ClassHTTP5xx}, want: []string{"a0", "a1"}},
		{name: "status discarded", f: dlq.Filter{Status: dlq.StatusDiscarded}, want: []string{"b4"}},
		{name: "status open", f: dlq.Filter{Status: dlq.StatusOpen}, want: []string{"a0", "a1", "a3", "b2", "n0"}},
		{name: "since", f: dlq.Filter{Since: mid}, want: []string{"a1", "a3", "b2", "n0"}},
		{name: "since, in another zone", f: dlq.Filter{Since: mid.In(time.FixedZone("UTC+5", 5*3600))}, want: []string{"a1", "a3", "b2", "n0"}},
		{name: "before", f: dlq.Filter{Before: mid}, want: []string{"a0", "b4"}},
		{name: "bbox", f: dlq.Filter{BBox: box(1.5, 0.2, 2.5, 0.8)}, want: []string{"a1", "b2"}},
		{name: "bbox of everything skips entries without one", f: dlq.Filter{BBox: box(-180, -90, 180, 90)}, want: []string{"a0", "b4", "a1", "a3", "b2"}},
		{name: "bbox misses", f: dlq.Filter{BBox: box(10, 10, 11, 11)}, want: nil},
		{name: "ids", f: dlq.Filter{IDs: []int64{ids["a3"], ids["b2"], ids["n0"] + 1000}}, want: []string{"a3", "b2"}},
		{name: "combined", f: dlq.Filter{Flow: "parcels", Class: dlq.ClassHTTP5xx, Since: mid}, want: []string{"a1"}},
		{name: "limit", f: dlq.Filter{Limit: 2}, want: []string{"a0", "b4"}},
		{name: "limit after the filter", f: dlq.Filter{Flow: "parcels", Limit: 2}, want: []string{"a0", "a1"}},
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
				t.Errorf("ListDeadLetters(%+v) = %v, want %v", tt.f, names, tt.want)
			}
		})
	}
}

// testDeadLetterStats: DeadLetterStats counts entries by class, task, request host and
// status (the host without credentials, none when there was no request), and
// DeadLetterCounts a run's open entries by class.
func testDeadLetterStats(t *testing.T, s store.Store) {
	ctx := t.Context()
	run := startRun(t, s, store.RunStart{Flow: "parcels"})
	addUnits(t, s, run.ID, "wfs", 5)
	other := startRun(t, s, store.RunStart{Flow: "roads"})
	addUnits(t, s, other.ID, "tiles", 1)
	recordDead(t, s, "parcels", run.ID, "wfs", 0, dlq.ClassHTTP5xx, "https://user:pw@a.example/wfs?x=1")
	recordDead(t, s, "parcels", run.ID, "wfs", 1, dlq.ClassHTTP5xx, "https://a.example/wfs")
	discarded := recordDead(t, s, "parcels", run.ID, "wfs", 2, dlq.ClassParse, "http://b.example:8080/x")
	recordDead(t, s, "parcels", run.ID, "wfs", 3, dlq.ClassDatabase, "")
	replayed := recordDead(t, s, "parcels", run.ID, "wfs", 4, dlq.ClassDatabase, "")
	recordDead(t, s, "roads", other.ID, "tiles", 0, dlq.ClassTimeout, "https://c.example/t/0/0/0.png")
	if _, err := s.DiscardDeadLetters(ctx, []int64{discarded}); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkReplayed(ctx, replayed, dlq.ReplayItem{At: time.Now(), Result: dlq.ReplayOK}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		f    dlq.Filter
		want dlq.Stats
	}{
		{name: "a flow", f: dlq.Filter{Flow: "parcels"}, want: dlq.Stats{
			Total:    5,
			ByClass:  []dlq.Count{{Key: "database", N: 2}, {Key: "http_5xx", N: 2}, {Key: "parse", N: 1}},
			ByTask:   []dlq.Count{{Key: "wfs", N: 5}},
			ByHost:   []dlq.Count{{Key: dlq.NoHost, N: 2}, {Key: "a.example", N: 2}, {Key: "b.example:8080", N: 1}},
			ByStatus: []dlq.Count{{Key: "open", N: 3}, {Key: "discarded", N: 1}, {Key: "replayed", N: 1}},
		}},
		{name: "open entries", f: dlq.Filter{Status: dlq.StatusOpen}, want: dlq.Stats{
			Total:    4,
			ByClass:  []dlq.Count{{Key: "http_5xx", N: 2}, {Key: "database", N: 1}, {Key: "timeout", N: 1}},
			ByTask:   []dlq.Count{{Key: "wfs", N: 3}, {Key: "tiles", N: 1}},
			ByHost:   []dlq.Count{{Key: "a.example", N: 2}, {Key: dlq.NoHost, N: 1}, {Key: "c.example", N: 1}},
			ByStatus: []dlq.Count{{Key: "open", N: 4}},
		}},
		{name: "nothing", f: dlq.Filter{Flow: "nope"}, want: dlq.Aggregate(nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, err := s.DeadLetterStats(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(dlq.Aggregate(rows))
			want, _ := json.Marshal(tt.want)
			if string(got) != string(want) {
				t.Errorf("stats\n got %s\nwant %s", got, want)
			}
		})
	}
	counts, err := s.DeadLetterCounts(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[dlq.Class]int64{dlq.ClassDatabase: 1, dlq.ClassHTTP5xx: 2}; !maps.Equal(counts, want) {
		t.Errorf("DeadLetterCounts = %v, want %v (open entries of the run only)", counts, want)
	}
	empty := startRun(t, s, store.RunStart{Flow: "empty"})
	if counts, err := s.DeadLetterCounts(ctx, empty.ID); err != nil || len(counts) != 0 {
		t.Errorf("DeadLetterCounts of a run without entries = %v (%v), want none", counts, err)
	}
}

// testDeadLetterTriage: DiscardDeadLetters closes open entries only and says which;
// MarkReplayed appends to the history and closes; missing entries are dlq.ErrNotFound.
func testDeadLetterTriage(t *testing.T, s store.Store) {
	ctx := t.Context()
	run := startRun(t, s, store.RunStart{Flow: "parcels"})
	addUnits(t, s, run.ID, "wfs", 4)
	var ids []int64
	for i := range 3 {
		ids = append(ids, recordDead(t, s, "parcels", run.ID, "wfs", i, dlq.ClassHTTP5xx, "https://a.example/wfs"))
	}
	failedReplay := dlq.ReplayItem{At: time.Date(2025, 6, 1, 2, 0, 0, 0, time.UTC), Result: dlq.ReplayFailed, Class: dlq.ClassParse, Error: "bad XML"}
	id3, err := s.RecordDeadLetter(ctx, store.UnitRef{RunID: run.ID, TaskID: "wfs", Key: unitKey(3)},
		dlq.Entry{Flow: "parcels", Class: dlq.ClassParse, Error: "bad XML", History: []dlq.ReplayItem{failedReplay}})
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, id3)
	missing := id3 + 1000

	done, err := s.DiscardDeadLetters(ctx, []int64{ids[0], ids[1], missing})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(done)
	if !slices.Equal(done, []int64{ids[0], ids[1]}) {
		t.Errorf("discarded %v, want %v (a missing id is left out)", done, ids[:2])
	}
	if again, err := s.DiscardDeadLetters(ctx, []int64{ids[0]}); err != nil || len(again) != 0 {
		t.Errorf("discarding a discarded entry: %v (%v), want nothing", again, err)
	}
	if none, err := s.DiscardDeadLetters(ctx, []int64{}); err != nil || len(none) != 0 {
		t.Errorf("discarding no ids: %v (%v), want nothing", none, err)
	}

	at := time.Now().UTC().Truncate(time.Millisecond)
	ok := dlq.ReplayItem{At: at, Result: dlq.ReplayOK}
	for _, id := range []int64{ids[2], ids[3]} {
		if err := s.MarkReplayed(ctx, id, ok); err != nil {
			t.Fatal(err)
		}
	}
	e, err := s.GetDeadLetter(ctx, ids[2])
	if err != nil {
		t.Fatal(err)
	}
	if e.Status != dlq.StatusReplayed {
		t.Errorf("replayed entry is %q, want replayed", e.Status)
	}
	sameHistory(t, "replayed entry", e.History, []dlq.ReplayItem{ok})
	e, err = s.GetDeadLetter(ctx, ids[3])
	if err != nil {
		t.Fatal(err)
	}
	if e.Status != dlq.StatusReplayed {
		t.Errorf("replayed entry is %q, want replayed", e.Status)
	}
	sameHistory(t, "entry replayed after a failed replay", e.History, []dlq.ReplayItem{failedReplay, ok})
	if got, err := s.DiscardDeadLetters(ctx, []int64{ids[2]}); err != nil || len(got) != 0 {
		t.Errorf("discarding a replayed entry: %v (%v), want nothing: only open entries are discarded", got, err)
	}
	if e, err := s.GetDeadLetter(ctx, ids[2]); err != nil || e.Status != dlq.StatusReplayed {
		t.Errorf("the replayed entry is %q (%v) after a discard, want still replayed", e.Status, err)
	}
	if counts, err := s.DeadLetterCounts(ctx, run.ID); err != nil || len(counts) != 0 {
		t.Errorf("DeadLetterCounts with every entry closed = %v (%v), want none", counts, err)
	}

	if err := s.MarkReplayed(ctx, missing, ok); !errors.Is(err, dlq.ErrNotFound) {
		t.Errorf("MarkReplayed of a missing entry: %v, want dlq.ErrNotFound", err)
	}
	if _, err := s.GetDeadLetter(ctx, missing); !errors.Is(err, dlq.ErrNotFound) {
		t.Errorf("GetDeadLetter of a missing entry: %v, want dlq.ErrNotFound", err)
	}
}

// testPurgeDeadLetters: PurgeDeadLetters deletes entries whose last failure is before
// the time given, in the statuses given (all when none), and refuses a zero time.
func testPurgeDeadLetters(t *testing.T, s store.Store) {
	ctx := t.Context()
	run := startRun(t, s, store.RunStart{Flow: "parcels"})
	addUnits(t, s, run.ID, "wfs", 5)
	var ids []int64
	record := func(i int) {
		ids = append(ids, recordDead(t, s, "parcels", run.ID, "wfs", i, dlq.ClassHTTP5xx, ""))
	}
	record(0)
	record(1)
	record(2)
	time.Sleep(50 * time.Millisecond)
	mid := time.Now()
	time.Sleep(50 * time.Millisecond)
	record(3)
	record(4)
	if _, err := s.DiscardDeadLetters(ctx, []int64{ids[0], ids[3]}); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkReplayed(ctx, ids[1], dlq.ReplayItem{At: time.Now(), Result: dlq.ReplayOK}); err != nil {
		t.Fatal(err)
	}
	left := func() []int64 {
		t.Helper()
		es, err := s.ListDeadLetters(ctx, dlq.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		return entryIDs(es)
	}

	if n, err := s.PurgeDeadLetters(ctx, time.Time{}); err == nil {
		t.Errorf("purging without a time deleted %d entries, want an error", n)
	}
	if got := left(); len(got) != 5 {
		t.Fatalf("%d entries left after a refused purge, want 5", len(got))
	}
	steps := []struct {
		name     string
		before   time.Time
		statuses []dlq.Status
		deleted  int64
		left     []int64
	}{
		{name: "nothing that old", before: mid.Add(-time.Hour), deleted: 0, left: ids},
		{name: "closed entries", before: mid, statuses: []dlq.Status{dlq.StatusReplayed, dlq.StatusDiscarded}, deleted: 2,
			left: []int64{ids[2], ids[3], ids[4]}},
		{name: "every status", before: mid, deleted: 1, left: []int64{ids[3], ids[4]}},
		{name: "open entries", before: time.Now().Add(time.Minute), statuses: []dlq.Status{dlq.StatusOpen}, deleted: 1,
			left: []int64{ids[3]}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			n, err := s.PurgeDeadLetters(ctx, st.before, st.statuses...)
			if err != nil || n != st.deleted {
				t.Errorf("PurgeDeadLetters = %d (%v), want %d", n, err, st.deleted)
			}
			if got := left(); !slices.Equal(got, st.left) {
				t.Errorf("left %v, want %v", got, st.left)
			}
		})
	}
}

// testCloseDeadLetters: CloseDeadLetters marks replayed the open entries of a run whose
// units are now done (a resume executed them), saying so in their history, and no others.
func testCloseDeadLetters(t *testing.T, s store.Store) {
	ctx := t.Context()
	run := startRun(t, s, store.RunStart{Flow: "parcels"})
	addUnits(t, s, run.ID, "wfs", 3)
	other := startRun(t, s, store.RunStart{Flow: "roads"})
	addUnits(t, s, other.ID, "wfs", 1)
	done := recordDead(t, s, "parcels", run.ID, "wfs", 0, dlq.ClassTimeout, "")
	still := recordDead(t, s, "parcels", run.ID, "wfs", 1, dlq.ClassTimeout, "")
	discarded := recordDead(t, s, "parcels", run.ID, "wfs", 2, dlq.ClassParse, "")
	otherRun := recordDead(t, s, "roads", other.ID, "wfs", 0, dlq.ClassTimeout, "")
	if _, err := s.DiscardDeadLetters(ctx, []int64{discarded}); err != nil {
		t.Fatal(err)
	}
	// A resumed run executes u000 and u002 again, successfully; so does the other run.
	before := time.Now()
	completeUnit(t, s, store.UnitRef{RunID: run.ID, TaskID: "wfs", Key: unitKey(0)}, store.Counts{Inserted: 1})
	completeUnit(t, s, store.UnitRef{RunID: run.ID, TaskID: "wfs", Key: unitKey(2)}, store.Counts{Inserted: 1})
	completeUnit(t, s, store.UnitRef{RunID: other.ID, TaskID: "wfs", Key: unitKey(0)}, store.Counts{Inserted: 1})

	n, err := s.CloseDeadLetters(ctx, run.ID)
	if err != nil || n != 1 {
		t.Fatalf("CloseDeadLetters = %d (%v), want 1", n, err)
	}
	for id, want := range map[int64]dlq.Status{done: dlq.StatusReplayed, still: dlq.StatusOpen, discarded: dlq.StatusDiscarded, otherRun: dlq.StatusOpen} {
		e, err := s.GetDeadLetter(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if e.Status != want {
			t.Errorf("entry of %s in run %d is %q, want %q", e.Unit, e.RunID, e.Status, want)
		}
	}
	e, err := s.GetDeadLetter(ctx, done)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.History) != 1 || e.History[0].Result != dlq.ReplayOK {
		t.Errorf("history of the closed entry %+v, want one replay, %q", e.History, dlq.ReplayOK)
	} else {
		near(t, "the closing replay's time", e.History[0].At, before, timeSlack)
	}
	if n, err := s.CloseDeadLetters(ctx, run.ID); err != nil || n != 0 {
		t.Errorf("CloseDeadLetters again = %d (%v), want 0", n, err)
	}
	if counts, err := s.DeadLetterCounts(ctx, run.ID); err != nil || !maps.Equal(counts, map[dlq.Class]int64{dlq.ClassTimeout: 1}) {
		t.Errorf("DeadLetterCounts = %v (%v), want the one still open", counts, err)
	}
}

// testDeadLetterRedaction: a credential in the failed request never comes back from the
// store: not in the request URL or body, and not where the error, the snippet or a
// replay echo it verbatim.
func testDeadLetterRedaction(t *testing.T, s store.Store) {
	ctx := t.Context()
	const secret = "s3cr3tV4lu3"
	run := startRun(t, s, store.RunStart{Flow: "parcels"})
	addUnits(t, s, run.ID, "wfs", 2)
	entries := []dlq.Entry{
		{Flow: "parcels", Class: dlq.ClassHTTP4xx, HTTPStatus: 401,
			Error:   "GET https://x.example/wfs: the key " + secret + " is not valid",
			Snippet: "<p>unknown key: " + secret + "</p>",
			Request: dlq.Request{Method: "POST", URL: "https://x.example/wfs?apikey=" + secret + "&typeName=q", Body: "<GetFeature key='" + secret + "'/>"},
			History: []dlq.ReplayItem{{At: time.Now(), Result: dlq.ReplayFailed, Class: dlq.ClassHTTP4xx, Error: "still " + secret}}},
		{Flow: "parcels", Class: dlq.ClassHTTP4xx, HTTPStatus: 403,
			Error:   "Authorization: Bearer " + secret + " refused",
			Request: dlq.Request{Method: "GET", URL: "https://user:" + secret + "@y.example/wfs?access_token=" + secret}},
	}
	for i, e := range entries {
		if _, err := s.RecordDeadLetter(ctx, store.UnitRef{RunID: run.ID, TaskID: "wfs", Key: unitKey(i)}, e); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ListDeadLetters(ctx, dlq.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(entries) {
		t.Fatalf("%d entries, want %d", len(got), len(entries))
	}
	for _, e := range got {
		one, err := s.GetDeadLetter(ctx, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range []dlq.Entry{e, one} {
			b, err := json.Marshal(x)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), secret) {
				t.Errorf("entry %d holds the secret: %s", x.ID, b)
			}
		}
	}
	if u := got[0].Request.URL; !strings.Contains(u, "x.example/wfs") || !strings.Contains(u, "typeName=q") {
		t.Errorf("request URL %q, want it kept but for the secret", u)
	}
	rows, err := s.DeadLetterStats(ctx, dlq.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var hosts []string
	for _, r := range rows {
		hosts = append(hosts, r.Host)
	}
	slices.Sort(hosts)
	if !slices.Equal(hosts, []string{"x.example", "y.example"}) {
		t.Errorf("hosts %q, want x.example and y.example, without credentials", hosts)
	}
}

// testUnitFails: a unit whose output is stored but incomplete (features refused) commits
// failed with its dead letter, in one transaction with what it wrote; a rollback leaves
// neither.
func testUnitFails(t *testing.T, s store.Store) {
	ctx := t.Context()
	table := typedTable("refused", store.ModeAppend)
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	run := startRun(t, s, store.RunStart{Flow: "parcels"})
	addUnits(t, s, run.ID, "wfs", 2)
	entry := dlq.Entry{Flow: "parcels", Class: dlq.ClassRejected, Error: `1 feature of the response refused (the others are stored): "p.9" (#3): curved geometry`}
	write := func(ref store.UnitRef, commit bool) {
		t.Helper()
		tx, err := s.BeginUnit(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		src := features(typedFeatures())
		c, err := tx.WriteFeatures(ctx, table, &src)
		if err != nil {
			t.Fatal(err)
		}
		c.Rejected = 1
		if err := tx.Complete(ctx, c, nil, nil, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := tx.Fail(ctx, entry); err != nil {
			t.Fatal(err)
		}
		if commit {
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	rolled := store.UnitRef{RunID: run.ID, TaskID: "wfs", Key: unitKey(0)}
	write(rolled, false)
	ref := store.UnitRef{RunID: run.ID, TaskID: "wfs", Key: unitKey(1)}
	write(ref, true)
	if _, state, err := s.Unit(ctx, rolled); err != nil || state != store.Pending {
		t.Errorf("the rolled-back unit is %q (%v), want pending", state, err)
	}
	if _, state, err := s.Unit(ctx, ref); err != nil || state != store.Failed {
		t.Errorf("the unit is %q (%v), want failed", state, err)
	}
	es, err := s.ListDeadLetters(ctx, dlq.Filter{RunID: run.ID})
	if err != nil || len(es) != 1 || es[0].Unit != unitKey(1) || es[0].Class != dlq.ClassRejected || es[0].Attempts != 1 {
		t.Fatalf("dead letters %+v (%v), want the one of unit %s, rejected, 1 attempt", es, err, unitKey(1))
	}
	got, err := s.GetRun(ctx, run.ID)
	if err != nil || got.FeaturesInserted != 5 || got.FeaturesRejected != 1 {
		t.Errorf("run %+v (%v), want 5 features inserted and 1 refused counted", got, err)
	}
}

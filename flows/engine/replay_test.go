package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/geoflow/geoflow/flows"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// flakyKind is a task kind whose failing units fail the way the rate-limit handler reports
// a server that keeps answering 503, with a credential in the URL, until healed. Once
// healed, the units in split plan two children each, as a WFS tile that has grown too
// big splits on replay; children in failChildren fail for good.
type flakyState struct {
	healed       atomic.Bool
	split        []string
	failChildren []string
	mu           sync.Mutex
	executed     map[string]int
}

func (s *flakyState) ran(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.executed[key]++
}

func (s *flakyState) count(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.executed[key]
}

type flakyConfig struct {
	Units int      `yaml:"units"`
	Fail  []string `yaml:"fail_units"`
	state *flakyState
}

func (c *flakyConfig) Check(tasks.Problems)                                 {}
func (c *flakyConfig) New(id string) (tasks.Task, error)                    { return &flakyTask{c: c}, nil }
func (t *flakyTask) Plan(context.Context, *tasks.Env) ([]store.Unit, error) { return t.plan(), nil }

type flakyTask struct{ c *flakyConfig }

func (t *flakyTask) plan() []store.Unit {
	var out []store.Unit
	for i := range t.c.Units {
		b := orb.Bound{Min: orb.Point{float64(i), 0}, Max: orb.Point{float64(i) + 1, 1}}
		out = append(out, store.Unit{Key: fmt.Sprintf("u%03d", i), BBox: &b, Spec: json.RawMessage(fmt.Sprintf(`{"page":%d}`, i))})
	}
	return out
}

const secretURL = "https://wfs.example.com/ows?SERVICE=WFS&apikey=SECRET&typeName=parcels"

func (t *flakyTask) Execute(ctx context.Context, env *tasks.Env, u store.Unit) (*tasks.Output, error) {
	s := t.c.state
	s.ran(u.Key)
	if slices.Contains(s.failChildren, u.Key) || (slices.Contains(t.c.Fail, u.Key) && !s.healed.Load()) {
		if !strings.Contains(u.Key, "/") && len(u.Spec) == 0 {
			return nil, fmt.Errorf("unit %s lost its spec", u.Key)
		}
		return nil, fmt.Errorf("fetching page %s: %w", u.Key, &retry.Error{
			Class: dlq.ClassHTTP5xx, Status: 503, Message: "service unavailable", Attempts: 3,
			Snippet: "<error>bad apikey=SECRET</error>", Method: "GET", URL: secretURL})
	}
	out := &tasks.Output{Counts: store.Counts{Inserted: 1}}
	if s.healed.Load() && slices.Contains(s.split, u.Key) {
		out.Children = []store.Unit{{Key: u.Key + "/a"}, {Key: u.Key + "/b"}}
	}
	return out, nil
}

func flakyRegistry(s *flakyState) *tasks.Registry {
	r := testRegistry(nil)
	r.Register(tasks.Kind{Name: "flaky", NewConfig: func() tasks.Config { return &flakyConfig{Units: 5, state: s} }})
	return r
}

// writeFlow writes a flow file for the replay to load again.
func writeFlow(t *testing.T, reg *tasks.Registry, src string) *flows.Flow {
	t.Helper()
	path := filepath.Join(t.TempDir(), "flow.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := flows.Load(path, flows.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

const flakyFlow = `
name: flaky
tasks:
  a: {type: flaky, units: 6, fail_units: [u001, u004]}
  b: {type: fake, depends_on: [a]}
  c: {type: other}
`

func TestRunRecordsDeadLetters(t *testing.T) { eachStore(t, testRunRecordsDeadLetters) }

func testRunRecordsDeadLetters(t *testing.T, loc string) {
	ctx := context.Background()
	db := openStore(t, loc)
	st := &flakyState{executed: map[string]int{}}
	f := writeFlow(t, flakyRegistry(st), flakyFlow)
	res, err := Run(ctx, f, RunOptions{Store: storesOf(db)})
	if err != nil {
		t.Fatal(err)
	}
	if res.DeadLetters() != 2 || res.Summary.UnitsDone != 4+1 || res.TaskStates["c"] != store.Done || res.TaskStates["b"] != store.UpstreamFailed {
		t.Fatalf("dead %d done %d tasks %v; want 2 dead, the rest done, b upstream_failed", res.DeadLetters(), res.Summary.UnitsDone, res.TaskStates)
	}
	if got := fmt.Sprint(res.DeadByClass); got != "map[http_5xx:2]" {
		t.Errorf("DeadByClass = %s, want map[http_5xx:2]", got)
	}
	entries, err := db.ListDeadLetters(ctx, dlq.Filter{RunID: res.RunID})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("%d entries, want 2", len(entries))
	}
	slices.SortFunc(entries, func(a, b dlq.Entry) int { return strings.Compare(a.Unit, b.Unit) })
	for i, e := range entries {
		want := []string{"u001", "u004"}[i]
		if e.Flow != "flaky" || e.Task != "a" || e.Unit != want || e.Class != dlq.ClassHTTP5xx || e.HTTPStatus != 503 ||
			e.Attempts != 3 || e.Status != dlq.StatusOpen || e.BBox == nil || e.Request.Method != "GET" {
			t.Errorf("entry %d = %+v", i, e)
		}
		if !strings.Contains(e.Request.URL, "apikey=REDACTED") {
			t.Errorf("request URL %q, want the apikey redacted", e.Request.URL)
		}
		js, _ := json.Marshal(e)
		if strings.Contains(string(js), "SECRET") {
			t.Errorf("entry holds the secret: %s", js)
		}
	}
}

func TestReplay(t *testing.T) { eachStore(t, testReplay) }

func testReplay(t *testing.T, loc string) {
	ctx := context.Background()
	db := openStore(t, loc)
	st := &flakyState{executed: map[string]int{}, split: []string{"u004"}}
	reg := flakyRegistry(st)
	f := writeFlow(t, reg, flakyFlow)
	res, err := Run(ctx, f, RunOptions{Store: storesOf(db)})
	if err != nil {
		t.Fatal(err)
	}
	open := func() []dlq.Entry {
		t.Helper()
		es, err := db.ListDeadLetters(ctx, dlq.Filter{Status: dlq.StatusOpen})
		if err != nil {
			t.Fatal(err)
		}
		return es
	}
	entries := open()

	// Still broken: the entries are updated, not duplicated.
	rr, err := Replay(ctx, entries, ReplayOptions{Store: storesOf(db), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if rr.OK() || rr.Dead != 2 {
		t.Fatalf("replay against a broken server: ok=%v dead=%d, want not ok and 2 dead", rr.OK(), rr.Dead)
	}
	for _, o := range rr.Outcomes {
		if o.OK || !strings.Contains(o.Error, "http_5xx") || o.Entry.Attempts != 6 || len(o.Entry.History) != 1 ||
			o.Entry.History[0].Result != dlq.ReplayFailed {
			t.Errorf("failed replay outcome: ok=%v err=%q attempts=%d history=%+v", o.OK, o.Error, o.Entry.Attempts, o.Entry.History)
		}
	}
	if got := open(); len(got) != 2 {
		t.Fatalf("%d open entries after a failed replay, want the same 2", len(got))
	}

	// Healed: u004 splits into two children, one of which fails for good.
	st.healed.Store(true)
	st.failChildren = []string{"u004/b"}
	rr, err = Replay(ctx, open(), ReplayOptions{Store: storesOf(db), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if rr.OK() || rr.Units != 4 || rr.Dead != 1 {
		t.Errorf("replay: ok=%v units=%d dead=%d, want not ok (a child failed), 4 units, 1 dead", rr.OK(), rr.Units, rr.Dead)
	}
	for _, o := range rr.Outcomes {
		if !o.OK || o.Entry.Status != dlq.StatusReplayed {
			t.Errorf("outcome of %s: ok=%v err=%q", o.Entry.Unit, o.OK, o.Error)
		}
	}
	if st.count("u004/a") != 1 || st.count("u004/b") != 1 {
		t.Errorf("children executed %d/%d times, want once each", st.count("u004/a"), st.count("u004/b"))
	}
	left := open()
	if len(left) != 1 || left[0].Unit != "u004/b" || left[0].RunID != res.RunID {
		t.Fatalf("open after replay: %+v, want only the failed child u004/b", left)
	}

	// The child heals too: the run's task a is done; b never ran, which the result says.
	st.failChildren = nil
	rr, err = Replay(ctx, left, ReplayOptions{Store: storesOf(db), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if !rr.OK() || len(open()) != 0 {
		t.Fatalf("last replay: ok=%v outcomes %+v, %d open", rr.OK(), rr.Outcomes, len(open()))
	}
	if st, _ := db.TaskState(ctx, res.RunID, "a"); st != store.Done {
		t.Errorf("task a is %s after every unit was replayed, want done", st)
	}
	if len(rr.Notes) != 1 || !strings.Contains(rr.Notes[0], "--task b") {
		t.Errorf("notes %q, want one saying task b is left to run", rr.Notes)
	}
	for _, k := range []string{"u000", "u002", "u003", "u005"} {
		if n := st.count(k); n != 1 {
			t.Errorf("unit %s executed %d times, want once: a replay runs only its units", k, n)
		}
	}
}

func TestReplayWhileRunIsHeld(t *testing.T) { eachStore(t, testReplayWhileRunIsHeld) }

func testReplayWhileRunIsHeld(t *testing.T, loc string) {
	ctx := context.Background()
	db := openStore(t, loc)
	st := &flakyState{executed: map[string]int{}}
	reg := flakyRegistry(st)
	f := writeFlow(t, reg, "name: held\ntasks:\n  a: {type: flaky, units: 2, fail_units: [u000]}\n")
	res, err := Run(ctx, f, RunOptions{Store: storesOf(db)})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := db.ListDeadLetters(ctx, dlq.Filter{RunID: res.RunID})
	if err != nil || len(entries) != 1 {
		t.Fatalf("entries %v (%v)", entries, err)
	}
	hold, err := db.HoldRun(ctx, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	st.healed.Store(true)
	rr, err := Replay(ctx, entries, ReplayOptions{Store: storesOf(db), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if rr.OK() || !strings.Contains(rr.Outcomes[0].Error, "another process") || st.count("u000") != 1 {
		t.Errorf("replay of a held run: ok=%v err=%q executed=%d; want refused without executing", rr.OK(), rr.Outcomes[0].Error, st.count("u000"))
	}
}

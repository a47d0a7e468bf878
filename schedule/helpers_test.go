package schedule_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/schedule"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/postgis"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/wfs"
)

func registry() *tasks.Registry {
	r := &tasks.Registry{}
	r.Register(wfs.Kind())
	return r
}

func openStore(t *testing.T) (*postgis.Store, string) {
	t.Helper()
	url := testdb.URL(t)
	ctx := context.Background()
	db, err := postgis.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db, url
}

// flowSpec writes a flow harvesting wfsURL (never fetched when runs are faked).
type flowSpec struct {
	name, schedule, overlap, catchup, wfsURL string
}

func (fs flowSpec) yaml() string {
	s := fmt.Sprintf("name: %s\nschedule: %q\n", fs.name, fs.schedule)
	if fs.overlap != "" {
		s += "overlap: " + fs.overlap + "\n"
	}
	if fs.catchup != "" {
		s += "catchup: " + fs.catchup + "\n"
	}
	url := fs.wfsURL
	if url == "" {
		url = "http://127.0.0.1:1/wfs"
	}
	return s + fmt.Sprintf("tasks:\n  parcels:\n    type: wfs\n    url: %s/wfs\n    typename: parcels\n    target: {table: %s}\n", url, fs.name)
}

func writeFile(t *testing.T, path, src string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

func flowDir(t *testing.T, specs ...flowSpec) string {
	t.Helper()
	dir := t.TempDir()
	for _, fs := range specs {
		writeFile(t, filepath.Join(dir, fs.name+".yaml"), fs.yaml())
	}
	return dir
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// recorder is a fake run: it records each fire and how many ran at once.
type recorder struct {
	mu        sync.Mutex
	fires     []time.Time
	active    int
	maxActive int
}

// run returns runs that take d on clk, or until they are cancelled. A fire is recorded
// once its run waits on clk, so a test that saw it may move clk past its end.
func (r *recorder) run(clk schedule.Clock, d time.Duration) schedule.RunFunc {
	return func(ctx context.Context, f *flows.Flow, at time.Time) (*engine.Result, error) {
		end := clk.After(d)
		r.mu.Lock()
		r.fires = append(r.fires, at)
		r.active++
		r.maxActive = max(r.maxActive, r.active)
		r.mu.Unlock()
		select {
		case <-end:
		case <-ctx.Done():
		}
		r.mu.Lock()
		r.active--
		r.mu.Unlock()
		return &engine.Result{Status: store.Done}, nil
	}
}

func (r *recorder) snapshot() (fires []time.Time, maxActive int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.fires...), r.maxActive
}

// waitFires waits until n fires have started their run.
func (r *recorder) waitFires(t *testing.T, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d fires ran", n), func() bool {
		fires, _ := r.snapshot()
		return len(fires) >= n
	})
}

// eventually waits until ok holds, asking every 10ms; it fails the test after 10s.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func newScheduler(t *testing.T, o schedule.Options) *schedule.Scheduler {
	t.Helper()
	o.Flows = flows.Options{Registry: registry()}
	if o.Logger == nil {
		o.Logger = testLogger(t)
	}
	if o.Watch == 0 {
		o.Watch = -1
	}
	if o.QueuePoll == 0 {
		o.QueuePoll = 50 * time.Millisecond
	}
	s, err := schedule.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// start runs s until the returned stop is called; stop returns how long s took to stop.
func start(t *testing.T, s *schedule.Scheduler) (stop func() time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	var took time.Duration
	stop = func() time.Duration {
		once.Do(func() {
			begin := time.Now()
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("scheduler: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the scheduler did not stop within 30s")
			}
			took = time.Since(begin)
		})
		return took
	}
	t.Cleanup(func() { stop() })
	return stop
}

// fireRows returns the recorded fires of flow as scheduled_for -> status.
func fireRows(t *testing.T, db, flow string) map[time.Time]string {
	t.Helper()
	out := map[time.Time]string{}
	for _, r := range testdb.Rows(t, db, `SELECT scheduled_for, status FROM geoflow_schedule_fires WHERE flow = $1`, flow) {
		out[r[0].(time.Time)] = r[1].(string)
	}
	return out
}

// fireStatus returns the recorded status of flow's fire at when; "" when it is not recorded.
func fireStatus(t *testing.T, db, flow string, when time.Time) string {
	t.Helper()
	rows := testdb.Rows(t, db, `SELECT status FROM geoflow_schedule_fires WHERE flow = $1 AND scheduled_for = $2`, flow, when)
	if len(rows) == 0 {
		return ""
	}
	return rows[0][0].(string)
}

// waitStatus waits until flow's fire at when is recorded with status.
func waitStatus(t *testing.T, db, flow string, when time.Time, status string) {
	t.Helper()
	eventually(t, fmt.Sprintf("the %v fire of %s recorded %s", when, flow, status), func() bool {
		return fireStatus(t, db, flow, when) == status
	})
}

// waitIdle waits until no scheduled run of flow holds its lock, as the next fire will ask:
// a fire is recorded as ran a moment before its run lets go of the flow.
func waitIdle(t *testing.T, st *postgis.Store, flow string) {
	t.Helper()
	eventually(t, "the flow lock of "+flow+" released", func() bool {
		lock, ok, err := st.TryLockFlow(context.Background(), flow, false)
		if err != nil {
			t.Fatal(err)
		}
		if ok { // a lock another holds comes back nil
			lock.Release()
		}
		return ok
	})
}

func countStatus(rows map[time.Time]string, status string) int {
	n := 0
	for _, st := range rows {
		if st == status {
			n++
		}
	}
	return n
}

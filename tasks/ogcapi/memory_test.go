package ogcapi_test

import (
	"bytes"
	"context"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/internal/devserver/bigserver"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/internal/testflow"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/postgis"
	"github.com/geoflow/geoflow/tasks/ogcapi"
)

// TestMemoryBudget harvests four features of a million vertices (22 MB of GeoJSON each),
// one per unit, fetched at once, on a memory budget that holds one of them at a time:
// the units wait for it, all four are stored whole, and the heap stays under the budget.
// On a budget no such feature fits in, the harvest stops as too_large, naming
// memory_limit: here at planning, whose sample of features draws on the budget too.
// (bench/memory measures the same at 4.99 million vertices and the default budget.)
func TestMemoryBudget(t *testing.T) {
	const vertices = 1_000_000
	tests := []struct {
		name   string
		limit  int64
		stored int64
	}{
		{"waits", 160 << 20, 4},
		{"too_large", 64 << 20, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fx := bigserver.New(bigserver.Options{Features: 4, Vertices: vertices})
			srv := httptest.NewServer(fx)
			t.Cleanup(srv.Close)
			dbURL := testdb.URL(t)
			db, err := postgis.Open(context.Background(), dbURL, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(db.Close)

			// As geoflow run does: the collector keeps the heap within the budget.
			defer debug.SetMemoryLimit(debug.SetMemoryLimit(tc.limit - tc.limit/8))
			runtime.GC()
			var peak atomic.Uint64
			stop := make(chan struct{})
			sampled := make(chan struct{})
			go func() {
				defer close(sampled)
				var ms runtime.MemStats
				for {
					select {
					case <-stop:
						return
					case <-time.After(5 * time.Millisecond):
					}
					runtime.ReadMemStats(&ms)
					if ms.HeapInuse > peak.Load() {
						peak.Store(ms.HeapInuse)
					}
				}
			}()
			logs := &bytes.Buffer{}
			res := testflow.Run(t, ogcapi.Kind(), srv.URL, `
collection: big
page_size: 1
limits: {max_vertices: 1000000}
target: {table: public.big_`+tc.name+`}
`, db, logs, engine.RunOptions{MemoryLimit: tc.limit})
			close(stop)
			<-sampled

			var stored int64
			if testdb.Int64(t, dbURL, "SELECT count(*) FROM pg_tables WHERE tablename = $1", "big_"+tc.name) == 1 {
				stored = testdb.Int64(t, dbURL, "SELECT count(*) FROM public.big_"+tc.name+" WHERE ST_NPoints(geom) = $1", vertices)
			}
			if stored != tc.stored {
				t.Fatalf("%d features of %d vertices stored, want %d; run %s, dead %v\n%s", stored, vertices, tc.stored, res.Status, res.DeadByClass, tail(logs.String()))
			}
			if tc.stored == 4 {
				if res.Status != store.Done || res.Memory.Waits == 0 {
					t.Errorf("run %s, memory %+v: want done, with units waiting for the budget", res.Status, res.Memory)
				}
			} else {
				msg := res.FailedTasks["parcels"]
				if res.Status != store.Failed || res.DeadByClass[dlq.ClassTooLarge] == 0 && !strings.Contains(msg, "too large for the memory budget") ||
					!strings.Contains(logs.String(), "raise memory_limit") {
					t.Errorf("run %s, failed tasks %v, dead letters %v; want the harvest stopped as too large for the budget, naming memory_limit\n%s",
						res.Status, res.FailedTasks, res.DeadByClass, tail(logs.String()))
				}
			}
			if res.Memory.Peak > tc.limit {
				t.Errorf("the budget's peak %d MiB is above its limit %d MiB", res.Memory.Peak>>20, tc.limit>>20)
			}
			if p := int64(peak.Load()); p > tc.limit {
				t.Errorf("peak heap %d MiB, above the budget of %d MiB", p>>20, tc.limit>>20)
			}
			t.Logf("budget %d MiB: peak charged %d MiB, peak heap %d MiB, %d waits (%s)", tc.limit>>20, res.Memory.Peak>>20, peak.Load()>>20, res.Memory.Waits, res.Memory.Waited.Round(time.Millisecond))
		})
	}
}

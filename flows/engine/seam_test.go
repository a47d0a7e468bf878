package engine

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoflow/geoflow/flows"

	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/postgis"
)

// TestResumeRunsTheRecordedFlow edits a flow file between an interrupted run and its
// resume: the resume runs the flow the run recorded and reports the difference; with
// UseCurrentFlow it runs the file.
func TestResumeRunsTheRecordedFlow(t *testing.T) {
	for _, tt := range []struct {
		name       string
		useCurrent bool
		wantUsed   string
		wantUnits  int64
	}{
		{name: "recorded", wantUsed: "recorded", wantUnits: 20},
		{name: "current", useCurrent: true, wantUsed: "current", wantUnits: 30},
	} {
		t.Run(tt.name, func(t *testing.T) {
			eachStore(t, func(t *testing.T, loc string) {
				db := openStore(t, loc)
				rec := &recorder{}
				reg := testRegistry(rec)
				const src = `
name: edited
tasks:
  a: {type: fake, units: 20, sleep: 30ms, rate_limit: {concurrency: 2}}
`
				f := writeFlow(t, reg, src)
				ctx, cancel := context.WithCancel(context.Background())
				go func() {
					for len(rec.list()) < 4 {
						time.Sleep(5 * time.Millisecond)
					}
					cancel()
				}()
				res, err := Run(ctx, f, RunOptions{Store: storesOf(db), Grace: 10 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				if res.Status != store.Interrupted {
					t.Fatalf("status %s, want interrupted", res.Status)
				}
				if err := os.WriteFile(f.File, []byte(strings.Replace(src, "units: 20", "units: 30", 1)), 0o644); err != nil {
					t.Fatal(err)
				}
				today, err := flows.Load(f.File, flows.Options{Registry: reg})
				if err != nil {
					t.Fatal(err)
				}
				res2, err := Run(context.Background(), today, RunOptions{Store: storesOf(db), Resume: true, UseCurrentFlow: tt.useCurrent})
				if err != nil {
					t.Fatal(err)
				}
				if res2.RunID != res.RunID || res2.Status != store.Done || res2.FlowUsed != tt.wantUsed {
					t.Fatalf("resume: run %d %s with the %q flow; want run %d done with the %s one", res2.RunID, res2.Status, res2.FlowUsed, res.RunID, tt.wantUsed)
				}
				if len(res2.FlowChanges) != 1 || !strings.Contains(res2.FlowChanges[0], "units: 20") || !strings.Contains(res2.FlowChanges[0], "units: 30") {
					t.Errorf("changes reported: %q", res2.FlowChanges)
				}
				if res2.Summary.UnitsTotal != tt.wantUnits || res2.Summary.UnitsDone != tt.wantUnits {
					t.Errorf("units %d of %d done; want %d", res2.Summary.UnitsDone, res2.Summary.UnitsTotal, tt.wantUnits)
				}
			})
		})
	}
}

// TestStoreOutageUnitsWait cuts every connection geoflow holds, twice, while units
// commit (what a PostgreSQL restart does): units wait for the database and commit once it
// answers; no unit fails, the run ends done. It runs on PostGIS alone: a GeoPackage is a
// file opened in this process, with no server whose connections can be cut from outside.
func TestStoreOutageUnitsWait(t *testing.T) {
	url := testdb.URL(t)
	db, err := postgis.Open(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	rec := &recorder{}
	f := mustParse(t, rec, `
name: outage
tasks:
  a: {type: fake, units: 80, sleep: 10ms, rate_limit: {concurrency: 4}}
  b: {type: fake, units: 5, depends_on: [a]}
`)
	var killed atomic.Int64
	go func() {
		for len(rec.list()) < 10 {
			time.Sleep(5 * time.Millisecond)
		}
		for range 2 {
			killed.Add(testdb.Int64(t, url, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
				WHERE application_name = 'geoflow' AND datname = current_database() AND pid <> pg_backend_pid()`))
			time.Sleep(200 * time.Millisecond)
		}
	}()
	res, err := Run(context.Background(), f, RunOptions{Store: storesOf(db)})
	if err != nil {
		t.Fatal(err)
	}
	if killed.Load() == 0 {
		t.Fatal("no connection was terminated: the test tested nothing")
	}
	if res.Status != store.Done || res.DeadLetters() != 0 || res.Summary.UnitsDone != 85 {
		t.Fatalf("run %s, %d of %d units done, %d dead; want done, 85, 0", res.Status, res.Summary.UnitsDone, res.Summary.UnitsTotal, res.DeadLetters())
	}
}

// Package storetest is the one test suite every store implementation runs, as river runs
// riverdrivertest against each of its drivers: store/postgis and store/gpkg each call Run
// from a _test.go file with a function that opens a new, empty, migrated store, and the
// suite checks, through the store interfaces only (no SQL), that both keep the promises
// those interfaces document.
//
// Where the stores differ by design the suite accepts each documented behaviour and says
// so where it does (a GeoPackage refuses a second run of a flow with store.ErrFlowBusy;
// PostGIS leaves the running one alone and finds nothing to resume). It is imported only
// by tests.
package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// test is one group of the suite: it gets a store of its own.
type test struct {
	name string
	run  func(t *testing.T, s store.Store)
}

// tests lists the groups, in the order of the interfaces they exercise.
func tests() []test {
	return []test{
		{"Migrations", testMigrations},
		{"StartRun", testStartRun},
		{"FinishRun", testFinishRun},
		{"TaskState", testTaskState},
		{"IncompleteState", testIncompleteState},
		{"ListRuns", testListRuns},
		{"RunArea", testRunArea},
		{"ListRunsDefaultLimit", testListRunsDefaultLimit},
		{"Resume", testResume},
		{"ResumeRestoresRun", testResumeRestoresRun},
		{"ResumeReopensUnits", testResumeReopensUnits},
		{"CrashedRuns", testCrashedRuns},
		{"Adopt", testAdopt},
		{"AdoptRace", testAdoptRace},
		{"HoldRun", testHoldRun},
		{"Units", testUnits},
		{"ListUnits", testListUnits},
		{"ListUnitsDefaultLimit", testListUnitsDefaultLimit},
		{"UnitHosts", testUnitHosts},
		{"UnitChildren", testUnitChildren},
		{"UnitRollback", testUnitRollback},
		{"ConcurrentUnits", testConcurrentUnits},
		{"FeatureTables", testFeatureTables},
		{"WriteFeaturesAppend", testWriteAppend},
		{"WriteFeaturesUpsert", testWriteUpsert},
		{"WriteFeaturesUpsertCompositeKey", testWriteUpsertCompositeKey},
		{"WriteFeaturesBadValue", testWriteBadValue},
		{"WriteFeaturesSourceError", testWriteSourceError},
		{"WriteFeaturesInvalidGeometry", testWriteInvalidGeometry},
		{"WriteFeaturesSourceHash", testSourceHash},
		{"WriteFeaturesOverlap", testOverlap},
		{"CountFeatures", testCountFeatures},
		{"Reproject", testReproject},
		{"Mirror", testMirror},
		{"MirrorArea", testMirrorArea},
		{"MirrorKeyColumns", testMirrorKeyColumns},
		{"MirrorConfirmed", testMirrorConfirmed},
		{"MirrorAbsent", testMirrorAbsent},
		{"History", testHistory},
		{"Tiles", testTiles},
		{"TilesInStore", testTilesInStore},
		{"TileBlocks", testTileBlocks},
		{"Assets", testAssets},
		{"FileTablesIncompatible", testFileTablesIncompatible},
		{"TaskExtent", testTaskExtent},
		{"RecordDeadLetter", testRecordDeadLetter},
		{"UnitFails", testUnitFails},
		{"ListDeadLetters", testListDeadLetters},
		{"DeadLetterStats", testDeadLetterStats},
		{"DeadLetterHost", testDeadLetterHost},
		{"DeadLetterTriage", testDeadLetterTriage},
		{"PurgeDeadLetters", testPurgeDeadLetters},
		{"CloseDeadLetters", testCloseDeadLetters},
		{"DeadLetterRedaction", testDeadLetterRedaction},
		{"ClaimFire", testClaimFire},
		{"MarkFire", testMarkFire},
		{"ListFires", testListFires},
		{"FlowRunning", testFlowRunning},
		{"TryLockFlow", testTryLockFlow},
		{"StoredTables", testStoredTables},
		{"TablesStamp", testTablesStamp},
		{"VectorTile", testVectorTile},
		{"VectorTileThinned", testVectorTileThinned},
		{"VectorTileGDAL", testVectorTileGDAL},
		{"TablesHistory", testTablesHistory},
		{"ReadFeatures", testReadFeatures},
		{"ReadSRID", testReadSRID},
		{"ReadWhere", testReadWhere},
		{"QueryFeatures", testQueryFeatures},
		{"QueryRefused", testQueryRefused},
		{"ReadFeaturesOnly", testReadFeaturesOnly},
		{"SQLDialect", testSQLDialect},
		{"SQLParams", testSQLParams},
		{"SQLRowsAffected", testSQLRowsAffected},
		{"SQLRollback", testSQLRollback},
		{"SQLBodies", testSQLBodies},
	}
}

// Run runs the shared store suite against the implementation newStore opens: each call
// gives a new, empty, migrated store for one subtest. newStore registers the store's
// Close with t.Cleanup and fails t when it cannot open one (a test never skips for want
// of a database). The subtests run in parallel, each on its own store.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	for _, tt := range tests() {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newStore(t))
		})
	}
}

// timeSlack is how far a time the store recorded may be from the one the test expects:
// the stores keep at least milliseconds, and "now" in the store is the store's clock
// when the statement ran, not the test's when it called.
const timeSlack = 2 * time.Second

// roundTrip is how far a time may move through the store and back: a GeoPackage keeps
// milliseconds.
const roundTrip = time.Millisecond

// near fails t when got is not within slack of want.
func near(t *testing.T, what string, got, want time.Time, slack time.Duration) {
	t.Helper()
	if d := got.Sub(want); d < -slack || d > slack {
		t.Errorf("%s = %v, want %v (within %v; off by %v)", what, got, want, slack, d)
	}
}

// nearPtr is near for an optional time, which must be set.
func nearPtr(t *testing.T, what string, got *time.Time, want time.Time, slack time.Duration) {
	t.Helper()
	if got == nil {
		t.Errorf("%s = nil, want %v", what, want)
		return
	}
	near(t, what, *got, want, slack)
}

// startRun records a run of flow and holds it until the test ends (or the caller closes
// it, which a GeoPackage store needs before it starts the flow's next run).
func startRun(t *testing.T, s store.Store, st store.RunStart) *store.Run {
	t.Helper()
	run, err := s.StartRun(t.Context(), st)
	if err != nil {
		t.Fatalf("starting a run of %q: %v", st.Flow, err)
	}
	t.Cleanup(run.Close)
	return run
}

// unitKey is the key of the i-th unit the helpers plan: u000, u001 ... which sort the
// same way in every collation.
func unitKey(i int) string { return fmt.Sprintf("u%03d", i) }

// unitBBox is the footprint of the i-th unit: [i, 0, i+1, 1].
func unitBBox(i int) *orb.Bound {
	return &orb.Bound{Min: orb.Point{float64(i), 0}, Max: orb.Point{float64(i) + 1, 1}}
}

// addUnits plans units u000 .. u(n-1) of task, the i-th with unitBBox(i), and records the
// task as running.
func addUnits(t *testing.T, s store.Store, runID int64, task string, n int) {
	t.Helper()
	ctx := t.Context()
	if err := s.SetTaskState(ctx, runID, task, "fake", store.Running, ""); err != nil {
		t.Fatal(err)
	}
	units := make([]store.Unit, n)
	for i := range units {
		units[i] = store.Unit{Key: unitKey(i), BBox: unitBBox(i)}
	}
	if err := s.AddUnits(ctx, runID, task, units); err != nil {
		t.Fatal(err)
	}
}

// commitUnit writes one unit's output the way the runner does: in the unit's
// transaction, then its done state with the counts write returned, then the commit; the
// deferred Rollback is a no-op after the commit. Nothing else may write to the store
// while it runs: a GeoPackage has one writer, which an open unit holds.
func commitUnit(ctx context.Context, s store.Store, ref store.UnitRef, write func(context.Context, store.UnitTx) (store.Counts, error)) (store.Counts, error) {
	tx, err := s.BeginUnit(ctx, ref)
	if err != nil {
		return store.Counts{}, err
	}
	defer tx.Rollback(ctx)
	var c store.Counts
	if write != nil {
		if c, err = write(ctx, tx); err != nil {
			return c, err
		}
	}
	if err := tx.Complete(ctx, c, nil, nil, time.Now()); err != nil {
		return c, err
	}
	return c, tx.Commit(ctx)
}

// completeUnit marks a unit done with counts c, as a unit that wrote them would.
func completeUnit(t *testing.T, s store.Store, ref store.UnitRef, c store.Counts) {
	t.Helper()
	_, err := commitUnit(t.Context(), s, ref, func(context.Context, store.UnitTx) (store.Counts, error) { return c, nil })
	if err != nil {
		t.Fatalf("completing unit %s: %v", ref.Key, err)
	}
}

// features is a FeatureSource over a slice.
type features []*spatial.Feature

func (f *features) Next() (*spatial.Feature, error) {
	if len(*f) == 0 {
		return nil, io.EOF
	}
	x := (*f)[0]
	*f = (*f)[1:]
	return x, nil
}

// failingSource yields its features, then err.
type failingSource struct {
	features
	err error
}

func (f *failingSource) Next() (*spatial.Feature, error) {
	if len(f.features) == 0 {
		return nil, f.err
	}
	return f.features.Next()
}

// writeFeatures writes fs into t as unit ref and commits it.
func writeFeatures(t *testing.T, s store.Store, ref store.UnitRef, table *store.FeatureTable, fs ...*spatial.Feature) store.Counts {
	t.Helper()
	src := features(fs)
	c, err := commitUnit(t.Context(), s, ref, func(ctx context.Context, tx store.UnitTx) (store.Counts, error) {
		return tx.WriteFeatures(ctx, table, &src)
	})
	if err != nil {
		t.Fatalf("writing %d features into %s as unit %s: %v", len(fs), table.Name, ref.Key, err)
	}
	return c
}

// sameJSON tells whether two JSON texts hold the same value: PostGIS keeps a unit's spec
// as jsonb, which normalises spacing and key order.
func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// sameBound tells whether two optional boxes are equal.
func sameBound(a, b *orb.Bound) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func fmtBound(b *orb.Bound) string {
	if b == nil {
		return "<nil>"
	}
	return fmt.Sprint(*b)
}

package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/postgis"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/wfs"
)

// TestPagesComeBackShort: a tile paged at 500 features a page on a server that caps
// pages at 300 without saying so. Each short page asks for the rest as another page, so
// every feature of the tile arrives, in order, with no gap between planned pages. The
// pages are planned by hand (as a tile that cannot be split would be paged at a page size
// learnt earlier) and run through the unit loop every run uses.
func TestPagesComeBackShort(t *testing.T) {
	ctx := context.Background()
	fx := wfsserver.New(wfsserver.Options{Features: 1000, CountDefault: 300, ImplementsSorting: true})
	srv := httptest.NewServer(fx)
	defer srv.Close()
	dbURL := testdb.URL(t)
	db, err := postgis.Open(ctx, dbURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	reg := &tasks.Registry{}
	reg.Register(wfs.Kind())
	src := `name: pages
tasks:
  parcels:
    type: wfs
    url: ` + srv.URL + `/wfs
    typename: gf:parcels
    page_size: 200
    bbox: [11.45, 48.05, 11.55, 48.15]
    target: {table: paged}
`
	f, err := flows.Parse("pages.yaml", []byte(src), flows.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	run, err := db.StartRun(ctx, store.RunStart{Flow: "pages"})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if err := db.SetTaskState(ctx, run.ID, "parcels", "wfs", store.Running, ""); err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	r := newRunner(f, RunOptions{Store: storesOf(db), HTTP: retry.New(&retry.Options{Seed: 1})}, slog.New(slog.NewTextHandler(logs, nil)), run.ID)
	spec := f.Task("parcels")
	task, err := spec.Config.New(spec.ID)
	if err != nil {
		t.Fatal(err)
	}
	env := r.env(spec)
	if _, err := task.Plan(ctx, env); err != nil { // prepares the table
		t.Fatal(err)
	}
	extent := orb.Bound{Min: orb.Point{11.45, 48.05}, Max: orb.Point{11.55, 48.15}}
	total := int64(len(fx.FeaturesIn(extent)))
	var planned []store.Unit
	for _, start := range []int64{0, 500} {
		sp, _ := json.Marshal(map[string]any{"d": 24, "p": true, "s": start, "z": 500, "t": total})
		b := extent
		planned = append(planned, store.Unit{Key: "q/p" + strconv.FormatInt(start, 10), BBox: &b, Spec: sp})
	}
	if err := db.AddUnits(ctx, run.ID, "parcels", planned); err != nil {
		t.Fatal(err)
	}
	var pages []string
	r.drain(ctx, task, env, planned, 1, nil, func(u store.Unit, st store.State) {
		pages = append(pages, u.Key)
		if st != store.Done {
			t.Errorf("unit %s ended %s; logs:\n%s", u.Key, st, logs)
		}
	})
	if n := testdb.Int64(t, dbURL, "SELECT count(DISTINCT gf_feature_id) FROM paged"); n != total {
		t.Errorf("%d distinct features stored of %d; pages run: %v", n, total, pages)
	}
	if len(pages) != 4 { // 0 (300) + 300 (200); 500 (300) + 800 (200)
		t.Errorf("pages run: %v; want the two planned pages and one continuation each", pages)
	}
}

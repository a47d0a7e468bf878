package wfs_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// TestPagesComeBackShort: a tile paged at 500 features a page on a server that caps
// pages at 300 without saying so. Each short page asks for the rest as another page, so
// every feature of the tile arrives, in order, with no gap between planned pages.
func TestPagesComeBackShort(t *testing.T) {
	h := newHarness(t, wfsserver.Options{Features: 1000, CountDefault: 300, ImplementsSorting: true})
	ctx := context.Background()
	src := `name: pages
tasks:
  parcels:
    type: wfs
    url: ` + h.srv.URL + `/wfs
    typename: gf:parcels
    page_size: 200
    bbox: [11.45, 48.05, 11.55, 48.15]
    target: {table: paged}
`
	f, err := flows.Parse("pages.yaml", []byte(src), flows.Options{Registry: registry()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	run, err := h.db.StartRun(ctx, store.RunStart{Flow: "pages"})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if err := h.db.SetTaskState(ctx, run.ID, "parcels", "wfs", "running", ""); err != nil {
		t.Fatal(err)
	}
	task, err := f.Task("parcels").Config.New("parcels")
	if err != nil {
		t.Fatal(err)
	}
	env := &tasks.Env{Flow: "pages", RunID: run.ID, TaskID: "parcels", Logger: slog.New(slog.NewTextHandler(h.logs, nil)),
		HTTP: retry.New(&retry.Options{Seed: 1}), Store: h.db}
	if _, err := task.Plan(ctx, env); err != nil { // prepares the table
		t.Fatal(err)
	}
	// Two pages of 500, as a tile that cannot be split would be paged at a page size of
	// 500 learnt earlier: the server hands out 300 at a time.
	total := int64(len(h.fx.FeaturesIn(extent)))
	var queue []store.Unit
	for _, start := range []int64{0, 500} {
		sp, _ := json.Marshal(map[string]any{"d": 24, "p": true, "s": start, "z": 500, "t": total})
		b := extent
		queue = append(queue, store.Unit{Key: "q/p" + itoa(start), BBox: &b, Spec: sp})
	}
	if err := h.db.AddUnits(ctx, run.ID, "parcels", queue); err != nil {
		t.Fatal(err)
	}
	var pages []string
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		pages = append(pages, u.Key)
		children, err := flows.ExecuteUnit(ctx, h.db, task, env, u)
		if err != nil {
			t.Fatalf("unit %s: %v", u.Key, err)
		}
		queue = append(queue, children...)
	}
	if n := testdb.Int64(t, h.dbURL, "SELECT count(DISTINCT gf_feature_id) FROM paged"); n != total {
		t.Errorf("%d distinct features stored of %d; pages run: %v", n, total, pages)
	}
	if len(pages) != 4 { // 0 (300) + 300 (200); 500 (300) + 800 (200)
		t.Errorf("pages run: %v; want the two planned pages and one continuation each", pages)
	}
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

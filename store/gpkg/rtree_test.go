package gpkg_test

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/gpkg"
)

// TestBulkRTree packs the R-tree of tables of several sizes (one leaf, two levels,
// three) and holds it to SQLite's own checker (rtreecheck) and to a brute-force search:
// every query box finds exactly the rows whose envelope meets it. Rows written after the
// build (triggers) keep the tree consistent.
func TestBulkRTree(t *testing.T) {
	for _, n := range []int{1, 40, 51, 52, 3000, 30000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ctx := context.Background()
			file := filepath.Join(t.TempDir(), "r.gpkg")
			st, err := gpkg.Open(ctx, file, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if _, err := st.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			tb := &store.FeatureTable{Name: "boxes", SRID: 4326}
			if err := st.EnsureFeatureTable(ctx, tb); err != nil {
				t.Fatal(err)
			}
			run, err := st.StartRun(ctx, store.RunStart{Flow: "r"})
			if err != nil {
				t.Fatal(err)
			}
			defer run.Close()
			rng := rand.New(rand.NewPCG(uint64(n), 7))
			boxes := map[string]orb.Bound{}
			write := func(key string, count int) {
				t.Helper()
				if err := st.AddUnits(ctx, run.ID, "t", []store.Unit{{Key: key}}); err != nil {
					t.Fatal(err)
				}
				var src sliceSource
				for range count {
					x, y := rng.Float64()*10, rng.Float64()*10
					b := orb.Bound{Min: orb.Point{x, y}, Max: orb.Point{x + rng.Float64()*0.1, y + rng.Float64()*0.1}}
					id := fmt.Sprintf("f%d", len(boxes))
					boxes[id] = b
					var g orb.Geometry = b.ToPolygon()
					if len(boxes)%7 == 0 {
						g, boxes[id] = orb.Point{x, y}, orb.Bound{Min: orb.Point{x, y}, Max: orb.Point{x, y}}
					}
					src = append(src, &spatial.Feature{ID: id, Geometry: g})
				}
				tx, err := st.BeginUnit(ctx, store.UnitRef{RunID: run.ID, TaskID: "t", Key: key})
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback(ctx)
				if _, err := tx.WriteFeatures(ctx, tb, &src); err != nil {
					t.Fatal(err)
				}
				if err := tx.Complete(ctx, store.Counts{}, nil, nil, time.Now()); err != nil {
					t.Fatal(err)
				}
				if err := tx.Commit(ctx); err != nil {
					t.Fatal(err)
				}
			}
			write("bulk", n)
			if err := st.FinishFeatureTable(ctx, tb); err != nil {
				t.Fatal(err)
			}
			check := func(when string) {
				t.Helper()
				db, err := sql.Open("sqlite", "file:"+file+"?_pragma=query_only(1)")
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				var verdict string
				if err := db.QueryRow("SELECT rtreecheck('rtree_boxes_geom')").Scan(&verdict); err != nil || verdict != "ok" {
					t.Fatalf("%s: rtreecheck: %q %v", when, verdict, err)
				}
				for q := range 50 {
					x, y, w := rng.Float64()*10, rng.Float64()*10, rng.Float64()*2
					if q == 0 {
						x, y, w = -1, -1, 12 // everything
					}
					var got int
					if err := db.QueryRow(`SELECT count(*) FROM boxes WHERE fid IN (SELECT id FROM rtree_boxes_geom
						WHERE minx <= ? AND maxx >= ? AND miny <= ? AND maxy >= ?)`, x+w, x, y+w, y).Scan(&got); err != nil {
						t.Fatal(err)
					}
					want := 0
					for _, b := range boxes {
						// the tree's float32 boxes are rounded outward: count by them
						if float64(float32(b.Min[0])) <= x+w+1e-5 && float64(float32(b.Max[0])) >= x-1e-5 &&
							float64(float32(b.Min[1])) <= y+w+1e-5 && float64(float32(b.Max[1])) >= y-1e-5 {
							want++
						}
					}
					if got < want-2 || got > want+2 { // boxes within a float32 step of the edge may go either way
						t.Fatalf("%s: query %d (%g,%g)+%g: the R-tree finds %d rows, brute force %d", when, q, x, y, w, got, want)
					}
					if q == 0 && got != len(boxes) {
						t.Fatalf("%s: the whole area finds %d rows of %d", when, got, len(boxes))
					}
				}
			}
			check("after the bulk build")
			write("after", 200) // the triggers insert these one by one
			check("after inserts through the triggers")
		})
	}
}

// TestBulkRTreeWholeBlobs: a geometry another tool wrote without an envelope in its
// header (GDAL may, for points; any writer may, for anything) is read whole to index it.
func TestBulkRTreeWholeBlobs(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "w.gpkg")
	st, err := gpkg.Open(ctx, file, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	tb := &store.FeatureTable{Name: "lines", SRID: 4326}
	if err := st.EnsureFeatureTable(ctx, tb); err != nil {
		t.Fatal(err)
	}
	line := orb.LineString{{1, 1}, {2, 3}, {4, 2}, {5, 5}, {7, 1}, {8, 8}}
	body, err := wkb.Marshal(line, binary.LittleEndian)
	if err != nil {
		t.Fatal(err)
	}
	blob := append([]byte{'G', 'P', 0, 0x01, 0xE6, 0x10, 0, 0}, body...) // no envelope; srs 4326
	db, err := sql.Open("sqlite", "file:"+file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO lines (geom, gf_payload_hash, gf_fetched_at) VALUES (?, x'01', '2026-01-01T00:00:00.000Z')`, blob); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := st.FinishFeatureTable(ctx, tb); err != nil {
		t.Fatal(err)
	}
	n, err := st.CountFeatures(ctx, tb, orb.Bound{Min: orb.Point{7.5, 7.5}, Max: orb.Point{9, 9}})
	if err != nil || n != 1 {
		t.Fatalf("the R-tree finds %d rows near the line's far end (%v), want 1", n, err)
	}
}

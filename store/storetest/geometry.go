package storetest

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// refusingSource is a FeatureSource that hears of the features the store refused.
type refusingSource struct {
	features
	refused map[string]string // feature id: reason
}

func (r *refusingSource) Refuse(f *spatial.Feature, err error) { r.refused[f.ID] = err.Error() }

// box is a small square ring around x, y.
func box(x, y float64) orb.Ring {
	return orb.Ring{{x, y}, {x + 0.1, y}, {x + 0.1, y + 0.1}, {x, y + 0.1}, {x, y}}
}

// around is a lon/lat box that holds what is drawn at x, y and nothing of x+1, y+1.
func around(x, y float64) orb.Bound {
	return orb.Bound{Min: orb.Point{x - 0.01, y - 0.01}, Max: orb.Point{x + 0.5, y + 0.5}}
}

// testWriteInvalidGeometry: a page of 7 features, one a polygon with an unclosed ring
// (which PostGIS fails the whole write on, and a GeoPackage would store), stores the 6
// valid ones and refuses that one, counted as Rejected and told to the source, in every
// mode; every other kind of geometry spatial.Validate refuses is refused the same way,
// and the features beside it stored. Both stores run this: they refuse the same features.
func testWriteInvalidGeometry(t *testing.T, s store.Store) {
	ctx := t.Context()
	upsert := &store.FeatureTable{Name: "geoms_upsert", SRID: 4326, Mode: store.ModeUpsert, Key: []string{"name"},
		Columns: []store.Column{{Name: "name", Property: "name", Type: store.TypeText}}}
	for _, table := range []*store.FeatureTable{
		{Name: "geoms_append", SRID: 4326, Mode: store.ModeAppend, Columns: upsert.Columns},
		upsert,
		{Name: "geoms_mirror", SRID: 4326, Mode: store.ModeMirror, Columns: upsert.Columns},
	} {
		t.Run(string(table.Mode), func(t *testing.T) {
			if err := s.EnsureFeatureTable(ctx, table); err != nil {
				t.Fatal(err)
			}
			feature := func(id string, g orb.Geometry) *spatial.Feature {
				return &spatial.Feature{ID: id, Geometry: g, Properties: map[string]any{"name": id}}
			}
			page := []*spatial.Feature{
				feature("point", orb.Point{10, 10}),
				feature("polygon", orb.Polygon{box(11, 11)}),
				feature("line", orb.LineString{{12, 12}, {12.1, 12.1}}),
				feature("unclosed", orb.Polygon{{{13, 13}, {13.1, 13}, {13.1, 13.1}, {13, 13.1}}}),
				feature("multipolygon", orb.MultiPolygon{{box(14, 14)}, {box(14.2, 14.2)}}),
				feature("multiline", orb.MultiLineString{{{15, 15}, {15.1, 15}}, {{15.2, 15.2}, {15.3, 15.3}}}),
				feature("multipoint", orb.MultiPoint{{16, 16}, {16.1, 16.1}}),
			}
			run := startRun(t, s, store.RunStart{Flow: "geoms_" + string(table.Mode)})
			bad := []struct {
				name   string
				g      orb.Geometry
				reason string // what the refusal must say
			}{
				{name: "short-ring", g: orb.Polygon{{{20, 20}, {20.1, 20}, {20, 20}}}, reason: "polygon ring 0 has 3 points, fewer than 4"},
				{name: "collapsed-ring", g: orb.Polygon{{{21, 21}, {21.1, 21.1}, {21, 21}, {21, 21}}}, reason: "polygon ring 0 has 2 distinct points"},
				{name: "unclosed-hole", g: orb.Polygon{box(22, 22), {{22.02, 22.02}, {22.05, 22.02}, {22.05, 22.05}, {22.03, 22.03}}}, reason: "polygon ring 1 is not closed"},
				{name: "empty-polygon", g: orb.Polygon{}, reason: "polygon is empty"},
				{name: "empty-multipolygon", g: orb.MultiPolygon{}, reason: "multipolygon is empty"},
				{name: "empty-member", g: orb.MultiPolygon{{box(23, 23)}, {}}, reason: "multipolygon polygon 1 is empty"},
				{name: "one-point-line", g: orb.LineString{{24, 24}}, reason: "linestring has 1 point, fewer than 2"},
				{name: "one-place-line", g: orb.LineString{{25, 25}, {25, 25}}, reason: "linestring has 1 distinct points"},
				{name: "empty-part", g: orb.MultiLineString{{{26, 26}, {26.1, 26.1}}, {}}, reason: "multilinestring linestring 1 has 0 points"},
				{name: "nan", g: orb.Point{math.NaN(), 27}, reason: "point is not finite"},
				{name: "infinite", g: orb.LineString{{28, 28}, {math.Inf(1), 28}}, reason: "linestring point 1 is not finite"},
				{name: "empty-collection", g: orb.Collection{}, reason: "collection is empty"},
			}
			addUnits(t, s, run.ID, "a", 1+len(bad))
			src := &refusingSource{features: features(page), refused: map[string]string{}}
			c, err := commitUnit(ctx, s, store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(0)},
				func(ctx context.Context, tx store.UnitTx) (store.Counts, error) {
					return tx.WriteFeatures(ctx, table, src)
				})
			if err != nil {
				t.Fatalf("WriteFeatures of a page with an unclosed ring: %v, want the others stored", err)
			}
			if want := (store.Counts{Inserted: 6, Rejected: 1}); c != want {
				t.Errorf("WriteFeatures = %+v, want %+v", c, want)
			}
			if want := "invalid geometry: polygon ring 0 is not closed (first 13,13 last 13,13.1)"; len(src.refused) != 1 || src.refused["unclosed"] != want {
				t.Errorf("the source was told of %q, want only unclosed: %q", src.refused, want)
			}
			for i, f := range page {
				want := int64(1)
				if f.ID == "unclosed" {
					want = 0
				}
				x := 10 + float64(i)
				if n, err := s.CountFeatures(ctx, table, around(x, x)); err != nil || n != want {
					t.Errorf("%s: %d stored (%v), want %d", f.ID, n, err, want)
				}
			}

			for i, tt := range bad {
				t.Run(tt.name, func(t *testing.T) {
					x := 40 + float64(i)
					good := feature("good-"+tt.name, orb.Point{x, x})
					src := &refusingSource{features: features{feature(tt.name, tt.g), good}, refused: map[string]string{}}
					c, err := commitUnit(ctx, s, store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(1 + i)},
						func(ctx context.Context, tx store.UnitTx) (store.Counts, error) {
							return tx.WriteFeatures(ctx, table, src)
						})
					if err != nil {
						t.Fatalf("WriteFeatures: %v, want %s refused and the other stored", err, tt.name)
					}
					if want := (store.Counts{Inserted: 1, Rejected: 1}); c != want {
						t.Errorf("WriteFeatures = %+v, want %+v", c, want)
					}
					if why := src.refused[tt.name]; !strings.Contains(why, tt.reason) {
						t.Errorf("refused for %q, want %q", why, tt.reason)
					}
					if n, err := s.CountFeatures(ctx, table, around(x, x)); err != nil || n != 1 {
						t.Errorf("the valid feature beside it: %d stored (%v), want 1", n, err)
					}
				})
			}
			if n, err := s.CountFeatures(ctx, table, world); err != nil || n != int64(6+len(bad)) {
				t.Errorf("CountFeatures = %d (%v), want %d: the valid ones, none of the refused", n, err, 6+len(bad))
			}
		})
	}
}

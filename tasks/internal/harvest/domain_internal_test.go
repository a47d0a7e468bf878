package harvest

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// TestCoordinatesOutsideTheDomainRefused: POINT(1e308 1e308) in EPSG:4326, and
// coordinates that are not finite in any CRS, were stored; an unclosed ring failed the
// whole unit in PostGIS. They are refused as features, with the reason, and the others
// go on: those outside the domain by the source, invalid geometries by the store's guard
// (store.ValidFeatures, which every store's write reads through) telling the source.
func TestCoordinatesOutsideTheDomainRefused(t *testing.T) {
	feats := []*spatial.Feature{
		{ID: "ok", Geometry: orb.Point{11.5, 48.1}},
		{ID: "far", Geometry: orb.Point{1e308, 1e308}},
		{ID: "nan", Geometry: orb.LineString{{11.5, 48.1}, {math.NaN(), 48.1}}},
		{ID: "edge", Geometry: orb.Point{180.0000001, -90}},
		{ID: "inf", Geometry: orb.Point{math.Inf(1), 0}},
		{ID: "unclosed", Geometry: orb.Polygon{{{11.1, 48.1}, {11.2, 48.1}, {11.2, 48.2}, {11.1, 48.2}}}},
		{ID: "empty", Geometry: orb.MultiPolygon{}},
	}
	for _, geographic := range []bool{true, false} {
		var logs bytes.Buffer
		s := &featureSource{env: &tasks.Env{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, unit: "u",
			bbox: orb.Bound{Min: orb.Point{11, 48}, Max: orb.Point{12, 49}}, check: geographic, warned: &atomic.Bool{},
			dec: &sliceDecoder{feats: feats}}
		var got []string
		v := &store.ValidFeatures{Src: s}
		for {
			f, err := v.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, f.ID)
		}
		want := "ok,edge"
		if !geographic {
			want = "ok,far,edge" // a projected CRS's domain is not known here; finiteness is
		}
		if strings.Join(got, ",") != want || s.refused.Total != len(feats)-len(strings.Split(want, ",")) {
			t.Errorf("geographic %v: kept %v, refused %d; want %s", geographic, got, s.refused.Total, want)
		}
		reasons := map[string]string{}
		for _, r := range s.refused.Features {
			reasons[r.ID] = r.Reason
		}
		if want := "invalid geometry: polygon ring 0 is not closed (first 11.1,48.1 last 11.1,48.2)"; reasons["unclosed"] != want {
			t.Errorf("geographic %v: unclosed refused for %q, want %q", geographic, reasons["unclosed"], want)
		}
		if want := "invalid geometry: multipolygon is empty"; reasons["empty"] != want {
			t.Errorf("geographic %v: empty refused for %q, want %q", geographic, reasons["empty"], want)
		}
		if !strings.Contains(logs.String(), "not finite") || (geographic && !strings.Contains(logs.String(), "outside longitude -180..180")) {
			t.Errorf("the reasons are not logged:\n%s", logs.String())
		}
	}
}

// TestSplitBudgets: what a task plans is bounded by geoflow's limits, never by the server's
// count: a count of 10^12 fails the unit naming the key to raise instead of planning a
// billion pages.
func TestSplitBudgets(t *testing.T) {
	env := &tasks.Env{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	area := orb.Bound{Min: orb.Point{11, 48}, Max: orb.Point{12, 49}}
	tests := []struct {
		name     string
		budget   tasks.Budget
		sp       spec
		n        int64
		wantKey  string
		children int
	}{
		{name: "within the budget", n: 5000, children: 9},
		{name: "units", budget: tasks.Budget{Units: 50}, n: 2_000_000, wantKey: "limits.max_units"},
		{name: "pages of a tile that cannot be cut", budget: tasks.Budget{Depth: 1, PagesPerTile: 5}, sp: spec{Depth: 1}, n: 1_000_000_000_000,
			wantKey: "limits.max_pages_per_tile"},
		{name: "pages within the budget", budget: tasks.Budget{Depth: 1}, sp: spec{Depth: 1}, n: 4500, children: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New(Config{Caps: Caps{Pages: true, Sorts: true}, PageSize: 1000, Budget: tt.budget})
			out, err := e.split(env, store.Unit{Key: "q", BBox: &area}, tt.sp, area, tt.n)
			var over *tasks.BudgetError
			switch {
			case tt.wantKey != "" && (!errors.As(err, &over) || over.Key != tt.wantKey):
				t.Fatalf("err %v; want the budget %s crossed", err, tt.wantKey)
			case tt.wantKey != "" && !strings.Contains(err.Error(), tt.wantKey):
				t.Errorf("%q does not name the key", err)
			case tt.wantKey == "" && (err != nil || len(out.Children) != tt.children):
				t.Fatalf("err %v, %v children; want %d", err, out, tt.children)
			}
		})
	}
}

// TestStoreRefusalsAreReported: a feature the store refuses after the source passed it
// (store.ValidFeatures) is counted among the unit's refusals, with its index and reason,
// so the unit is still a rejected dead letter naming it.
func TestStoreRefusalsAreReported(t *testing.T) {
	feats := []*spatial.Feature{{ID: "a", Geometry: orb.Point{11.5, 48.1}}, {ID: "b", Geometry: orb.Point{11.6, 48.2}}}
	var logs bytes.Buffer
	s := &featureSource{env: &tasks.Env{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, unit: "u", warned: &atomic.Bool{},
		dec: &sliceDecoder{feats: feats}}
	if _, err := s.Next(); err != nil {
		t.Fatal(err)
	}
	f, err := s.Next()
	if err != nil {
		t.Fatal(err)
	}
	s.Refuse(f, errors.New("refused by the store"))
	if s.refused.Total != 1 || s.refused.Features[0] != (tasks.Reject{ID: "b", Index: 1, Reason: "refused by the store"}) {
		t.Errorf("refused %+v, want b (#1) with the store's reason", s.refused)
	}
	if !strings.Contains(logs.String(), "refused by the store") {
		t.Errorf("the refusal is not logged:\n%s", logs.String())
	}
}

// TestEstimateOverflowsCount: a tile fetched on an estimate whose full response is then
// split counts as an overflow, so that once more than one in eight overflows the task
// counts its tiles first again instead of downloading, writing and discarding a page for
// each (it did not, and a harvest of uneven parcels did twice the work).
func TestEstimateOverflowsCount(t *testing.T) {
	env := &tasks.Env{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	e := New(Config{Caps: Caps{Pages: true, Counts: true, MatchedInResponse: true}, PageSize: 1000})
	area := orb.Bound{Min: orb.Point{11, 48}, Max: orb.Point{12, 49}}
	for i := range 8 {
		e.optimistic.Add(1)
		ev := tasks.Evidence{Kind: tasks.AskTile, Size: 1000, Counted: -1, Matched: -1, CountsInResponse: true, Pages: true,
			Estimated: i%4 == 0, Returned: 1000}
		v := tasks.Decide(ev)
		if v.Kind != tasks.Split {
			t.Fatalf("verdict %v, want split", v.Kind)
		}
		redo, _ := e.Follow(env, store.Unit{Key: "q", BBox: &area}, ev, v)
		if redo == nil {
			t.Fatal("a split without a redo")
		}
	}
	if got := e.overflows.Load(); got != 2 {
		t.Errorf("%d overflows counted, want the 2 tiles fetched on an estimate", got)
	}
	if e.estimatesHold() {
		t.Error("2 overflows in 8 estimates: estimates should no longer hold")
	}
}

// sliceDecoder is a Decoder of the features it holds, with no meta.
type sliceDecoder struct {
	feats []*spatial.Feature
	i     int
}

func (d *sliceDecoder) Next() (*spatial.Feature, error) {
	if d.i == len(d.feats) {
		return nil, io.EOF
	}
	d.i++
	return d.feats[d.i-1], nil
}

func (d *sliceDecoder) Meta() spatial.Meta { return spatial.Meta{} }

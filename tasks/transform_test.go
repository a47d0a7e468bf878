package tasks_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

var layerProps = []tasks.Property{
	{Name: "parcel_id", Type: store.TypeText}, {Name: "zone", Type: store.TypeText}, {Name: "assessed_value", Type: store.TypeNumeric},
	{Name: "land_use", Type: store.TypeText}, {Name: "area_m2", Type: store.TypeDouble}, {Name: "Land-Use", Type: store.TypeText},
}

func TestTransformPlan(t *testing.T) {
	tests := []struct {
		name    string
		tr      tasks.Transform
		cols    string // name:property:type, comma-separated
		nilX    bool   // no Transformer: nothing changes per feature
		wantErr string
	}{
		{name: "zero keeps every property", tr: tasks.Transform{}, nilX: true,
			cols: "parcel_id:parcel_id:text,zone:zone:text,assessed_value:assessed_value:numeric,land_use:land_use:text,area_m2:area_m2:double precision,land_use_1:Land-Use:text"},
		{name: "columns select, rename and order", nilX: true,
			tr:   tasks.Transform{Columns: tasks.ColumnMap{{Name: "value", Property: "assessed_value"}, {Name: "parcel", Property: "parcel_id"}}},
			cols: "value:assessed_value:numeric,parcel:parcel_id:text"},
		{name: "a property the layer lacks", tr: tasks.Transform{Columns: tasks.ColumnMap{{Name: "zoning", Property: "zones"}}},
			wantErr: `transform.columns.zoning: "zones" is not a property of parcels (its properties: parcel_id, zone, assessed_value, land_use, area_m2, Land-Use); did you mean "zone"?`},
		{name: "where on an unknown property", tr: tasks.Transform{Where: "land_use = 'x' AND area > 5"},
			wantErr: `transform.where (column 20): "area" is not a property of parcels`},
		{name: "where of the wrong type", tr: tasks.Transform{Where: "area_m2 > 'big'"}, wantErr: "transform.where: column 11"},
		{name: "where", tr: tasks.Transform{Where: `"Land-Use" = 'x'`},
			cols: "parcel_id:parcel_id:text,zone:zone:text,assessed_value:assessed_value:numeric,land_use:land_use:text,area_m2:area_m2:double precision,land_use_1:Land-Use:text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cols, x, err := tt.tr.Plan("parcels", layerProps)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Plan = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range cols {
				got = append(got, fmt.Sprintf("%s:%s:%s", c.Name, c.Property, c.Type))
			}
			if strings.Join(got, ",") != tt.cols {
				t.Errorf("columns %s\nwant    %s", strings.Join(got, ","), tt.cols)
			}
			if (x == nil) != tt.nilX {
				t.Errorf("Transformer %v, want nil %v", x, tt.nilX)
			}
		})
	}
}

// problems collects what Check reports.
type problems []string

func (p *problems) At(key, format string, args ...any) {
	*p = append(*p, key+": "+fmt.Sprintf(format, args...))
}

func TestTransformCheck(t *testing.T) {
	tests := []struct {
		name   string
		tr     tasks.Transform
		target tasks.FeatureTarget
		want   []string // prefixes of the problems, in order
	}{
		{name: "fine", tr: tasks.Transform{Columns: tasks.ColumnMap{{Name: "parcel", Property: "parcel_id"}}, Where: "a = 1"},
			target: tasks.FeatureTarget{Key: []string{"parcel"}}},
		{name: "bad names", tr: tasks.Transform{Columns: tasks.ColumnMap{{Name: "Parcel", Property: "parcel_id"}, {Name: "geom", Property: "g"}, {Name: "a", Property: "x"}, {Name: "a", Property: "y"}, {Name: "b", Property: ""}}},
			want: []string{"transform.columns.Parcel: ", "transform.columns.geom: ", "transform.columns.a: column \"a\" is named twice", "transform.columns.b: name the source"}},
		{name: "key not kept", tr: tasks.Transform{Columns: tasks.ColumnMap{{Name: "parcel", Property: "parcel_id"}}},
			target: tasks.FeatureTarget{Key: []string{"parcel_id"}}, want: []string{`target.key: "parcel_id" is not one of transform.columns`}},
		{name: "syntax error with its column", tr: tasks.Transform{Where: "a = 1 AND (b = 2"},
			want: []string{"transform.where: syntax error at column 17 of the expression"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p problems
			tt.tr.Check(&p, &tt.target)
			if len(p) != len(tt.want) {
				t.Fatalf("problems %q, want %d", p, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(p[i], w) {
					t.Errorf("problem %q, want it to start %q", p[i], w)
				}
			}
		})
	}
}

func TestCountsFiltered(t *testing.T) {
	area := orb.Bound{Min: orb.Point{0, 0}, Max: orb.Point{2, 2}}
	left := orb.Bound{Min: orb.Point{0, 0}, Max: orb.Point{1, 2}}
	right := orb.Bound{Min: orb.Point{1, 0}, Max: orb.Point{2, 2}}
	tests := []struct {
		name        string
		g           orb.Geometry
		left, right bool
	}{
		{name: "inside left", g: orb.Point{0.5, 0.5}, left: true},
		{name: "on the shared edge: the tile whose minimum it is", g: orb.Point{1, 0.5}, right: true},
		{name: "on the area's maximum edge", g: orb.Point{2, 2}, right: true},
		{name: "crossing: its first vertex's tile", g: orb.LineString{{0.5, 1}, {1.5, 1}}, left: true},
		{name: "first vertex outside the area: the first inside", g: orb.LineString{{-1, 1}, {1.5, 1}, {0.5, 1}}, right: true},
		{name: "no vertex in the area: both", g: orb.LineString{{-1, 1}, {3, 1}}, left: true, right: true},
		{name: "no geometry: both", g: nil, left: true, right: true},
		{name: "polygon", g: orb.Polygon{{{1.5, 0.5}, {0.5, 0.5}, {0.5, 1.5}, {1.5, 0.5}}}, right: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tasks.CountsFiltered(tt.g, left, area); got != tt.left {
				t.Errorf("left counts it: %v, want %v", got, tt.left)
			}
			if got := tasks.CountsFiltered(tt.g, right, area); got != tt.right {
				t.Errorf("right counts it: %v, want %v", got, tt.right)
			}
		})
	}
}

// sliceStream is a tasks.Stream over features, which hears of refusals.
type sliceStream struct {
	fs      []*spatial.Feature
	refused []string
}

func (s *sliceStream) Next() (*spatial.Feature, error) {
	if len(s.fs) == 0 {
		return nil, io.EOF
	}
	f := s.fs[0]
	s.fs = s.fs[1:]
	return f, nil
}

func (s *sliceStream) Observe(e *tasks.Evidence) *tasks.RejectedError { e.Returned = 4; return nil }

func (s *sliceStream) Refuse(f *spatial.Feature, err error) { s.refused = append(s.refused, f.ID) }

func TestTransformStream(t *testing.T) {
	tr := tasks.Transform{Where: "land_use = 'residential'", Geometry: tasks.PromoteToMulti}
	_, x, err := tr.Plan("parcels", layerProps)
	if err != nil {
		t.Fatal(err)
	}
	poly := orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}}
	in := []*spatial.Feature{
		{ID: "a", Geometry: poly, Properties: map[string]any{"land_use": "residential"}},
		{ID: "b", Geometry: orb.Point{0.5, 0.5}, Properties: map[string]any{"land_use": "forest"}},
		{ID: "c", Geometry: orb.Point{1.5, 0.5}, Properties: map[string]any{"land_use": "forest"}}, // another tile's
		{ID: "d", Geometry: orb.MultiPoint{{0.5, 0.5}}, Properties: map[string]any{}},              // NULL: unknown, left out
	}
	source := spatial.PayloadHash(&spatial.Feature{Geometry: poly, Properties: map[string]any{"land_use": "residential"}})
	src := &sliceStream{fs: in}
	s := x.Stream(src, orb.Bound{Max: orb.Point{1, 1}}, orb.Bound{Max: orb.Point{2, 1}})
	var got []*spatial.Feature
	for {
		f, err := s.Next()
		if err == io.EOF {
			break
		}
		got = append(got, f)
	}
	if len(got) != 1 || got[0].ID != "a" {
		t.Fatalf("kept %v, want a alone", got)
	}
	if _, ok := got[0].Geometry.(orb.MultiPolygon); !ok {
		t.Errorf("geometry %T, want orb.MultiPolygon", got[0].Geometry)
	}
	if new(spatial.Hasher).Source(got[0]) != source || spatial.PayloadHash(got[0]) == source {
		t.Errorf("the promoted feature's source hash is not its source's payload hash")
	}
	var ev tasks.Evidence
	if s.Observe(&ev); ev.Returned != 4 || ev.Filtered != 2 {
		t.Errorf("evidence returned %d, filtered %d; want 4 returned (all observed), 2 filtered here (b, d; c is another tile's)", ev.Returned, ev.Filtered)
	}
	s.(store.Refuser).Refuse(got[0], io.ErrUnexpectedEOF)
	if len(src.refused) != 1 {
		t.Errorf("a refusal is not passed on to the stream wrapped")
	}
	if x := (*tasks.Transformer)(nil); x.Stream(src, orb.Bound{}, orb.Bound{}) != tasks.Stream(src) {
		t.Errorf("a nil Transformer wraps the stream")
	}
}

// lookup is an IDLookup serving fixed features.
type lookup []*spatial.Feature

func (l lookup) BatchSize() int { return 10 }
func (l lookup) LookupIDs(ctx context.Context, env *tasks.Env, ids []string) ([]*spatial.Feature, error) {
	return l, nil
}

// TestTransformLookup: a feature a mirror finds by id but the filter leaves out is not
// returned, so the mirror takes it as gone.
func TestTransformLookup(t *testing.T) {
	tr := tasks.Transform{Where: "zone = 'R1'", Geometry: tasks.PromoteToMulti}
	_, x, err := tr.Plan("parcels", layerProps)
	if err != nil {
		t.Fatal(err)
	}
	l := x.Lookup(lookup{
		{ID: "keep", Geometry: orb.Point{1, 1}, Properties: map[string]any{"zone": "R1"}},
		{ID: "drop", Geometry: orb.Point{1, 1}, Properties: map[string]any{"zone": "R2"}},
	})
	fs, err := l.LookupIDs(t.Context(), nil, []string{"keep", "drop"})
	if err != nil || len(fs) != 1 || fs[0].ID != "keep" || l.BatchSize() != 10 {
		t.Fatalf("LookupIDs = %v, %v; want keep alone", fs, err)
	}
	if _, ok := fs[0].Geometry.(orb.MultiPoint); !ok {
		t.Errorf("geometry %T, want orb.MultiPoint", fs[0].Geometry)
	}
}

package esrijson

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/paulmach/orb"
)

// square is the closed ring of the square from (x0, y0) to (x1, y1), clockwise (y up)
// as Esri writes exteriors, or counter-clockwise.
func square(x0, y0, x1, y1 float64, cw bool) [][]float64 {
	if cw {
		return [][]float64{{x0, y0}, {x0, y1}, {x1, y1}, {x1, y0}, {x0, y0}}
	}
	return [][]float64{{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}, {x0, y0}}
}

func mustRings(t *testing.T, rings ...[][]float64) ringSet {
	t.Helper()
	rs, err := closedRings(rings)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestClosedRings(t *testing.T) {
	tests := []struct {
		name  string
		rings [][][]float64
		n     int    // rings kept
		err   string // in the error
	}{
		{name: "two rings", rings: [][][]float64{square(0, 0, 1, 1, true), square(2, 2, 3, 3, false)}, n: 2},
		{name: "an empty ring is no ring", rings: [][][]float64{{}, square(0, 0, 1, 1, true)}, n: 1},
		{name: "z and m are dropped", rings: [][][]float64{{{0, 0, 5}, {0, 1, 5, 1}, {1, 1, 5}, {0, 0, 5}}}, n: 1},
		{name: "a coordinate of one value", rings: [][][]float64{{{0, 0}, {1}}}, err: "ring 0: coordinate with 1 values"},
		{name: "too few points", rings: [][][]float64{square(0, 0, 1, 1, true), {{0, 0}, {0, 1}, {0, 0}}}, err: "ring 1 has 3 points, fewer than a closed ring needs"},
		{name: "not closed", rings: [][][]float64{{{0, 0}, {0, 1}, {1, 1}, {1, 0}}}, err: "ring 0 is not closed (first 0,0 last 1,0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := closedRings(tt.rings)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || len(rs) != tt.n {
				t.Fatalf("got %d rings, %v; want %d", len(rs), err, tt.n)
			}
			for _, r := range rs {
				if r.b != r.r.Bound() || (r.area < 0) != (r.r.Orientation() == orb.CW) {
					t.Errorf("ring %v: bound %v, area %g", r.r, r.b, r.area)
				}
			}
		})
	}
}

// TestRingRoles checks which rings orientation makes exteriors and holes, whether that
// winding holds, and what nesting makes of them when it does not.
func TestRingRoles(t *testing.T) {
	tests := []struct {
		name                  string
		rings                 [][][]float64
		outers, holes         []int // by orientation
		holds                 bool
		nestOuters, nestHoles []int // by nesting
	}{
		{name: "an exterior and its hole", rings: [][][]float64{square(0, 0, 10, 10, true), square(2, 2, 8, 8, false)},
			outers: []int{0}, holes: []int{1}, holds: true, nestOuters: []int{0}, nestHoles: []int{1}},
		{name: "no clockwise ring", rings: [][][]float64{square(0, 0, 10, 10, false), square(20, 0, 25, 5, false)},
			holes: []int{0, 1}, holds: false, nestOuters: []int{0, 1}},
		{name: "an exterior inside an exterior", rings: [][][]float64{square(0, 0, 10, 10, true), square(2, 2, 4, 4, true)},
			outers: []int{0, 1}, holds: false, nestOuters: []int{0}, nestHoles: []int{1}},
		{name: "a hole inside no exterior", rings: [][][]float64{square(0, 0, 10, 10, true), square(20, 0, 25, 5, false)},
			outers: []int{0}, holes: []int{1}, holds: false, nestOuters: []int{0, 1}},
		{name: "an island in a lake, wound backwards", rings: [][][]float64{square(0, 0, 10, 10, false), square(2, 2, 8, 8, true), square(4, 4, 6, 6, false)},
			outers: []int{1}, holes: []int{0, 2}, holds: false, nestOuters: []int{0, 2}, nestHoles: []int{1}},
		{name: "touching the exterior's boundary is inside", rings: [][][]float64{square(0, 0, 10, 10, true), square(0, 0, 5, 5, false)},
			outers: []int{0}, holes: []int{1}, holds: true, nestOuters: []int{0}, nestHoles: []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := mustRings(t, tt.rings...)
			outers, holes := rs.byOrientation()
			if !reflect.DeepEqual(outers, tt.outers) || !reflect.DeepEqual(holes, tt.holes) {
				t.Errorf("by orientation %v %v, want %v %v", outers, holes, tt.outers, tt.holes)
			}
			if got := rs.windingHolds(outers, holes); got != tt.holds {
				t.Errorf("winding holds %v, want %v", got, tt.holds)
			}
			outers, holes = rs.byNesting(nil, nil)
			if !reflect.DeepEqual(outers, tt.nestOuters) || !reflect.DeepEqual(holes, tt.nestHoles) {
				t.Errorf("by nesting %v %v, want %v %v", outers, holes, tt.nestOuters, tt.nestHoles)
			}
		})
	}
}

func TestAssemble(t *testing.T) {
	tests := []struct {
		name          string
		rings         [][][]float64
		outers, holes []int
		want          string // rings per polygon
	}{
		{name: "one polygon", rings: [][][]float64{square(0, 0, 10, 10, true), square(2, 2, 8, 8, false)},
			outers: []int{0}, holes: []int{1}, want: "Polygon[2]"},
		{name: "a hole goes to the smallest exterior around it", rings: [][][]float64{square(0, 0, 10, 10, true), square(1, 1, 9, 9, true), square(2, 2, 3, 3, false)},
			outers: []int{0, 1}, holes: []int{2}, want: "MultiPolygon[1 2]"},
		{name: "a hole inside no exterior is one", rings: [][][]float64{square(0, 0, 10, 10, true), square(20, 0, 25, 5, false)},
			outers: []int{0}, holes: []int{1}, want: "MultiPolygon[1 1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := mustRings(t, tt.rings...).assemble(tt.outers, tt.holes)
			var ps []orb.Polygon
			switch g := g.(type) {
			case orb.Polygon:
				ps = []orb.Polygon{g}
			case orb.MultiPolygon:
				ps = g
			}
			counts := make([]int, len(ps))
			for i, p := range ps {
				counts[i] = len(p)
				for k, r := range p {
					if want := map[bool]orb.Orientation{true: orb.CCW, false: orb.CW}[k == 0]; r.Orientation() != want {
						t.Errorf("polygon %d ring %d wound %v", i, k, r.Orientation())
					}
				}
			}
			if got := fmt.Sprintf("%s%v", g.GeoJSONType(), counts); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestGeometryParts(t *testing.T) {
	tests := []struct {
		name   string
		raw    string
		none   bool // noGeometry
		n      int  // vertices
		x, y   any
		point  orb.Geometry
		errMsg string
	}{
		{name: "null", raw: "null", none: true},
		{name: "empty object", raw: "{}", none: true},
		{name: "absent", raw: "", none: true},
		{name: "an object with spaces is a geometry", raw: "{ }"},
		{name: "all kinds counted", raw: `{"points":[[1,2]],"paths":[[[0,0],[1,1]]],"rings":[[[0,0],[0,1],[1,1],[0,0]]]}`, n: 7},
		{name: "a point", raw: `{"x":1.5,"y":2}`, x: 1.5, y: 2.0, point: orb.Point{1.5, 2}},
		{name: "NaN as a string", raw: `{"x":"NaN","y":"NaN"}`, x: "NaN", y: "NaN"},
		{name: "x null", raw: `{"x":null,"y":3}`, y: 3.0},
		{name: "a NaN y with a number x", raw: `{"x":1,"y":"nan"}`, x: 1.0, y: "nan", errMsg: "point with x 1, y nan"},
		{name: "a word", raw: `{"x":"a","y":1}`, x: "a", y: 1.0, errMsg: "point with x a, y 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := noGeometry([]byte(tt.raw)); got != tt.none {
				t.Fatalf("noGeometry %v, want %v", got, tt.none)
			}
			if tt.none {
				return
			}
			var g geometry
			if err := json.Unmarshal([]byte(tt.raw), &g); err != nil {
				t.Fatal(err)
			}
			if got := g.vertices(); got != tt.n {
				t.Errorf("vertices %d, want %d", got, tt.n)
			}
			if tt.x == nil && tt.y == nil {
				return
			}
			p, err := xyPoint(tt.x, tt.y)
			if tt.errMsg != "" {
				if err == nil || err.Error() != tt.errMsg {
					t.Fatalf("error %v, want %q", err, tt.errMsg)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(p, tt.point) {
				t.Errorf("got %v, %v; want %v", p, err, tt.point)
			}
		})
	}
	if p, err := xyPoint(math.NaN(), 1.0); p != nil || err != nil {
		t.Errorf("a NaN number: %v, %v", p, err)
	}
}

func TestEnvelope(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want orb.Geometry
		err  bool
	}{
		{name: "whole", raw: `{"xmin":0,"ymin":1,"xmax":2,"ymax":3}`, want: orb.Bound{Min: orb.Point{0, 1}, Max: orb.Point{2, 3}}.ToPolygon()},
		{name: "names fold", raw: `{"XMIN":0,"YMIN":1,"XMAX":2,"YMAX":3}`, want: orb.Bound{Min: orb.Point{0, 1}, Max: orb.Point{2, 3}}.ToPolygon()},
		{name: "without ymax", raw: `{"xmin":0,"ymin":1,"xmax":2}`, err: true},
		{name: "a string", raw: `{"xmin":0,"ymin":1,"xmax":2,"ymax":"3"}`, err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := envelope([]byte(tt.raw))
			if (err != nil) != tt.err || !reflect.DeepEqual(g, tt.want) {
				t.Errorf("got %v, %v; want %v", g, err, tt.want)
			}
		})
	}
}

package tasks_test

import (
	"cmp"
	"errors"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/tasks"
)

func TestCheckExtent(t *testing.T) {
	munich := orb.Bound{Min: orb.Point{11.45, 48.05}, Max: orb.Point{11.55, 48.15}}
	nz := orb.Bound{Min: orb.Point{166, -48}, Max: orb.Point{-176, -34}} // crosses 180°
	tests := []struct {
		name    string
		area    orb.Bound
		extent  orb.Bound
		fails   bool
		swapped bool
		message string // the extent as the error names it; Munich's by default
	}{
		{name: "inside", area: orb.Bound{Min: orb.Point{11.47, 48.07}, Max: orb.Point{11.5, 48.1}}, extent: munich},
		{name: "covers", area: orb.Bound{Min: orb.Point{-180, -90}, Max: orb.Point{180, 90}}, extent: munich},
		{name: "touches an edge", area: orb.Bound{Min: orb.Point{11.55, 48}, Max: orb.Point{12, 48.2}}, extent: munich},
		{name: "no extent advertised", area: orb.Bound{Min: orb.Point{0, 0}, Max: orb.Point{1, 1}}},
		{name: "lat/lon order", area: orb.Bound{Min: orb.Point{48.06, 11.46}, Max: orb.Point{48.10, 11.5}}, extent: munich, fails: true, swapped: true},
		{name: "across the antimeridian, east half", area: orb.Bound{Min: orb.Point{174, -42}, Max: orb.Point{176, -40}}, extent: nz},
		{name: "across the antimeridian, west half", area: orb.Bound{Min: orb.Point{-178, -40}, Max: orb.Point{-177, -39}}, extent: nz},
		{name: "across the antimeridian, between", area: orb.Bound{Min: orb.Point{0, -42}, Max: orb.Point{10, -40}}, extent: nz, fails: true, message: "166,-48,-176,-34"},
		{name: "elsewhere", area: orb.Bound{Min: orb.Point{2.2, 48.8}, Max: orb.Point{2.4, 48.9}}, extent: munich, fails: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tasks.CheckExtent("parcels", tt.area, tt.extent)
			if (err != nil) != tt.fails {
				t.Fatalf("CheckExtent = %v, want failure %v", err, tt.fails)
			}
			if err == nil {
				return
			}
			var e *tasks.ExtentError
			if !errors.As(err, &e) || e.Swapped != tt.swapped || !tasks.IsExtentError(err) {
				t.Fatalf("CheckExtent = %#v, want an ExtentError with Swapped %v", err, tt.swapped)
			}
			want := cmp.Or(tt.message, "11.45,48.05,11.55,48.15")
			if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "swapped?") != tt.swapped {
				t.Errorf("message %q: want the layer's extent named and the swap hint only when swapped", err)
			}
		})
	}
}

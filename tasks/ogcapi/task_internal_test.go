package ogcapi

import (
	"testing"

	"github.com/paulmach/orb"
)

func TestCheckFilter(t *testing.T) {
	tests := []struct {
		name        string
		filter      string
		conformance []string
		wantErr     bool
	}{
		{name: "no filter, no classes"},
		{name: "filter, both classes", filter: "a = 1", conformance: []string{confFilter + "/", confCQL2Text}},
		{name: "filter without cql2 text", filter: "a = 1", conformance: []string{confFilter}, wantErr: true},
		{name: "filter without part 3", filter: "a = 1", conformance: []string{confCQL2Text}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := &Task{cfg: Config{Filter: tt.filter}}
			err := task.checkFilter(&prepared{conformance: tt.conformance})
			if (err != nil) != tt.wantErr {
				t.Errorf("checkFilter = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

func TestSampleArea(t *testing.T) {
	area := orb.Bound{Min: orb.Point{0, 0}, Max: orb.Point{10, 10}}
	tests := []struct {
		name  string
		rerun *orb.Bound
		want  orb.Bound
	}{
		{name: "no rerun area", want: area},
		{name: "a rerun within", rerun: &orb.Bound{Min: orb.Point{2, 2}, Max: orb.Point{3, 3}}, want: orb.Bound{Min: orb.Point{2, 2}, Max: orb.Point{3, 3}}},
		{name: "a rerun across the edge", rerun: &orb.Bound{Min: orb.Point{8, 8}, Max: orb.Point{12, 12}}, want: orb.Bound{Min: orb.Point{8, 8}, Max: orb.Point{10, 10}}},
		{name: "a rerun elsewhere", rerun: &orb.Bound{Min: orb.Point{20, 20}, Max: orb.Point{30, 30}}, want: area},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sampleArea(area, tt.rerun); got != tt.want {
				t.Errorf("sampleArea = %v, want %v", got, tt.want)
			}
		})
	}
}

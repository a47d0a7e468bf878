package spatial

import (
	"math"
	"strings"
	"testing"

	"github.com/paulmach/orb"
)

func TestParseBBox(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    orb.Bound
		wantErr string
	}{
		{name: "plain", in: "5.9,47.2,15.1,55.1", want: orb.Bound{Min: orb.Point{5.9, 47.2}, Max: orb.Point{15.1, 55.1}}},
		{name: "spaces", in: " -10 , -20 , 10 , 20 ", want: orb.Bound{Min: orb.Point{-10, -20}, Max: orb.Point{10, 20}}},
		{name: "exponent", in: "1e2,2e2,3e2,4e2", want: orb.Bound{Min: orb.Point{100, 200}, Max: orb.Point{300, 400}}},
		{name: "three values", in: "1,2,3", wantErr: "got 3 values"},
		{name: "five values", in: "1,2,3,4,EPSG:4326", wantErr: "got 5 values"},
		{name: "empty", in: "", wantErr: "got 1 values"},
		{name: "not a number", in: "1,two,3,4", wantErr: `miny "two" is not a number`},
		{name: "empty number", in: "1,,3,4", wantErr: `miny "" is not a number`},
		{name: "minx not less", in: "3,1,3,4", wantErr: "minx 3 is not less than maxx 3"},
		{name: "miny greater", in: "1,5,3,4", wantErr: "miny 5 is not less than maxy 4"},
		{name: "NaN", in: "NaN,1,2,3", wantErr: "finite"},
		{name: "Inf", in: "1,1,+Inf,3", wantErr: "finite"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseBBox(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseBBox(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseBBox(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestParseBBoxCRS(t *testing.T) {
	b, crs, err := ParseBBoxCRS("47.2,5.9,55.1,15.1,urn:ogc:def:crs:EPSG::4326")
	if err != nil || crs != "urn:ogc:def:crs:EPSG::4326" || b.Min != (orb.Point{47.2, 5.9}) {
		t.Errorf("got %v %q %v", b, crs, err)
	}
	if _, _, err := ParseBBoxCRS("1,2,3,4, "); err == nil {
		t.Error("empty CRS value accepted")
	}
}

func TestValidateBBox(t *testing.T) {
	tests := []struct {
		name       string
		b          [4]float64
		geographic bool
		wantErr    string
	}{
		{name: "fine geographic", b: [4]float64{-180, -90, 180, 90}, geographic: true},
		{name: "projected beyond 180", b: [4]float64{356000, 5645000, 357000, 5646000}},
		{name: "longitude out of range", b: [4]float64{-181, 0, 10, 10}, geographic: true, wantErr: "longitude -181..10 is outside -180..180"},
		{name: "latitude out of range", b: [4]float64{0, 0, 10, 91}, geographic: true, wantErr: "latitude 0..91 is outside -90..90"},
		{name: "inverted x", b: [4]float64{10, 0, 0, 10}, wantErr: "minx 10 is not less than maxx 0"},
		{name: "flat y", b: [4]float64{0, 5, 10, 5}, wantErr: "miny 5 is not less than maxy 5"},
		{name: "NaN", b: [4]float64{0, math.NaN(), 10, 5}, wantErr: "miny is NaN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateBBox(tt.b, tt.geographic)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidateBBox(%v) = %v", tt.b, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ValidateBBox(%v) = %v, want an error containing %q", tt.b, err, tt.wantErr)
			}
		})
	}
}

package gml

import (
	"encoding/xml"
	"testing"
)

// attrs builds unprefixed attributes from name, value pairs.
func attrs(kv ...string) []xml.Attr {
	var out []xml.Attr
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, xml.Attr{Name: xml.Name{Local: kv[i]}, Value: kv[i+1]})
	}
	return out
}

func TestPosListShape(t *testing.T) {
	tests := []struct {
		name      string
		attrs     []xml.Attr
		dim       int
		wantD     int
		wantCount int
	}{
		{name: "no attributes", dim: 2, wantD: 2, wantCount: -1},
		{name: "geometry's dimension kept", dim: 3, wantD: 3, wantCount: -1},
		{name: "srsDimension", attrs: attrs("srsDimension", "3"), dim: 2, wantD: 3, wantCount: -1},
		{name: "GML 3.1 dimension", attrs: attrs("dimension", "4"), dim: 2, wantD: 4, wantCount: -1},
		{name: "spaces around", attrs: attrs("srsDimension", " 3 ", "count", " 5 "), dim: 2, wantD: 3, wantCount: 5},
		{name: "zero dimension ignored", attrs: attrs("srsDimension", "0"), dim: 2, wantD: 2, wantCount: -1},
		{name: "dimension 100 ignored", attrs: attrs("srsDimension", "100"), dim: 2, wantD: 2, wantCount: -1},
		{name: "dimension 99", attrs: attrs("srsDimension", "99"), dim: 2, wantD: 99, wantCount: -1},
		{name: "not a number ignored", attrs: attrs("srsDimension", "two", "count", "x"), dim: 2, wantD: 2, wantCount: -1},
		{name: "zero count not said", attrs: attrs("count", "0"), dim: 2, wantD: 2, wantCount: -1},
		{name: "last dimension wins", attrs: attrs("srsDimension", "3", "dimension", "2"), dim: 4, wantD: 2, wantCount: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, count := posListShape(tt.attrs, tt.dim)
			if d != tt.wantD || count != tt.wantCount {
				t.Errorf("posListShape = %d, %d, want %d, %d", d, count, tt.wantD, tt.wantCount)
			}
		})
	}
}

func TestCoordinatesSeparators(t *testing.T) {
	tests := []struct {
		name        string
		attrs       []xml.Attr
		cs, ts, dec string
	}{
		{name: "defaults", cs: ",", ts: " ", dec: "."},
		{name: "all given", attrs: attrs("cs", " ", "ts", ";", "decimal", ","), cs: " ", ts: ";", dec: ","},
		{name: "empty value kept", attrs: attrs("ts", ""), cs: ",", ts: "", dec: "."},
		{name: "other attributes ignored", attrs: attrs("srsName", "EPSG:4326"), cs: ",", ts: " ", dec: "."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, ts, dec := coordinatesSeparators(tt.attrs)
			if cs != tt.cs || ts != tt.ts || dec != tt.dec {
				t.Errorf("coordinatesSeparators = %q, %q, %q, want %q, %q, %q", cs, ts, dec, tt.cs, tt.ts, tt.dec)
			}
		})
	}
}

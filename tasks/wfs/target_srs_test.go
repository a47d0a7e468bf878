package wfs_test

import (
	"strings"
	"testing"

	"github.com/geoflow/geoflow/flows"
)

// TestTargetSRSConfig checks target.srs where a flow is read: the EPSG forms are taken,
// anything else is refused at the key's line and column.
func TestTargetSRSConfig(t *testing.T) {
	tests := []struct {
		name    string
		srs     string
		problem string // "" for none
	}{
		{name: "short form", srs: "EPSG:25832"},
		{name: "URN", srs: "urn:ogc:def:crs:EPSG::25832"},
		{name: "http URI", srs: "http://www.opengis.net/def/crs/EPSG/0/25832"},
		{name: "a PROJ string", srs: "+proj=utm +zone=32", problem: `test.yaml:8:7: task "parcels": target.srs: "+proj=utm +zone=32" is not a CRS`},
		{name: "a bare number", srs: "25832", problem: `test.yaml:8:7: task "parcels": target.srs: "25832"`},
		{name: "a negative code", srs: "EPSG:-1", problem: `test.yaml:8:7: task "parcels": target.srs: "EPSG:-1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "name: test\ntasks:\n  parcels:\n    type: wfs\n    url: http://example.invalid/wfs\n    typename: parcels\n" +
				"    target:\n      srs: \"" + tt.srs + "\"\n      table: parcels\n"
			_, err := flows.Parse("test.yaml", []byte(src), flows.Options{Registry: registry()})
			switch {
			case tt.problem == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.problem != "" && (err == nil || !strings.Contains(err.Error(), tt.problem)):
				t.Fatalf("error %v, want one containing %q", err, tt.problem)
			}
		})
	}
}

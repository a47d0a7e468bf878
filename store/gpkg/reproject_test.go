package gpkg

import (
	"testing"

	"github.com/geoflow/geoflow/spatial/proj"
)

// TestProjectedCRSsHaveDefinitions: every CRS a table can be reprojected into is written
// into gpkg_spatial_ref_sys with GDAL's WKT, so that GDAL and QGIS need no EPSG database.
func TestProjectedCRSsHaveDefinitions(t *testing.T) {
	n := 0
	for code := range 40000 {
		if _, err := proj.Lookup(code); err != nil || code == 900913 {
			continue
		}
		n++
		if ref, known := spatialRefFor(code); !known || ref.Definition == "undefined" {
			t.Errorf("EPSG:%d: no WKT definition (%+v)", code, ref)
		}
	}
	if n < 150 {
		t.Errorf("%d codes supported, want the whole set", n)
	}
}

package gpkg

import (
	"testing"

	"github.com/geoflow/geoflow/spatial/proj"
)

// TestProjectedCRSsHaveDefinitions: every CRS a table can be reprojected into is written
// into gpkg_spatial_ref_sys with GDAL's WKT, so that GDAL and QGIS need no EPSG database.
func TestProjectedCRSsHaveDefinitions(t *testing.T) {
	for _, code := range proj.Codes() {
		if ref, known := spatialRefFor(code); !known || ref.Definition == "undefined" {
			t.Errorf("EPSG:%d: no WKT definition (%+v)", code, ref)
		}
	}
}

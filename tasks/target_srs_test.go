package tasks_test

import (
	"testing"

	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

func TestReproject(t *testing.T) {
	tests := []struct {
		name             string
		srs              string
		arrives          int
		srid, sourceSRID int
	}{
		{name: "no srs: stored as delivered", arrives: 4326, srid: 4326},
		{name: "lon/lat to UTM", srs: "EPSG:25832", arrives: 4326, srid: 25832, sourceSRID: 4326},
		{name: "URN form", srs: "urn:ogc:def:crs:EPSG::3035", arrives: 4326, srid: 3035, sourceSRID: 4326},
		{name: "http form", srs: "http://www.opengis.net/def/crs/EPSG/0/4326", arrives: 3857, srid: 4326, sourceSRID: 3857},
		{name: "the delivered CRS: nothing to do", srs: "EPSG:25832", arrives: 25832, srid: 25832},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table := &store.FeatureTable{Name: "parcels", SRID: tt.arrives}
			(&tasks.FeatureTarget{SRS: tt.srs}).Reproject(table)
			if table.SRID != tt.srid || table.SourceSRID != tt.sourceSRID {
				t.Errorf("SRID %d, SourceSRID %d; want %d, %d", table.SRID, table.SourceSRID, tt.srid, tt.sourceSRID)
			}
		})
	}
}

package arcgis

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/paulmach/orb"
)

func TestCheckLayer(t *testing.T) {
	tests := []struct {
		name    string
		l       layer
		wantErr string
	}{
		{name: "feature layer", l: layer{Type: "Feature Layer", GeometryType: "esriGeometryPoint", ObjectIDField: "OBJECTID"}},
		{name: "table", l: layer{Type: "Table", GeometryType: "esriGeometryPoint", ObjectIDField: "OBJECTID"}, wantErr: "a table without geometry"},
		{name: "no geometry", l: layer{Type: "Feature Layer", ObjectIDField: "OBJECTID"}, wantErr: "a table without geometry"},
		{name: "no object id field", l: layer{Type: "Feature Layer", GeometryType: "esriGeometryPoint"}, wantErr: "names no objectIdField"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkLayer(&tt.l, "https://example.com/arcgis/rest/services/x/FeatureServer/0")
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("checkLayer = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestBatchSize(t *testing.T) {
	tests := []struct {
		name                       string
		maxRecordCount, configured int
		want                       int
	}{
		{name: "the layer's", maxRecordCount: 2000, want: 2000},
		{name: "none stated", want: 1000},
		{name: "negative stated", maxRecordCount: -1, want: 1000},
		{name: "configured below", maxRecordCount: 2000, configured: 500, want: 500},
		{name: "configured above is capped", maxRecordCount: 2000, configured: 5000, want: 2000},
		{name: "configured above the default is capped", configured: 5000, want: 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := batchSize(tt.maxRecordCount, tt.configured); got != tt.want {
				t.Errorf("batchSize(%d, %d) = %d, want %d", tt.maxRecordCount, tt.configured, got, tt.want)
			}
		})
	}
}

func TestLayerProperties(t *testing.T) {
	fields := []field{
		{Name: "OBJECTID", Type: "esriFieldTypeOID"},
		{Name: "Shape", Type: "esriFieldTypeGeometry"},
		{Name: "name", Type: "esriFieldTypeString"},
		{Name: "built", Type: "esriFieldTypeDate"},
	}
	tests := []struct {
		name      string
		outFields []string
		want      []string
		wantDates []string
		wantErr   string
	}{
		{name: "every attribute", want: []string{"OBJECTID", "name", "built"}, wantDates: []string{"built"}},
		{name: "out fields and the object id", outFields: []string{"name"}, want: []string{"OBJECTID", "name"}},
		{name: "a geometry is no field", outFields: []string{"Shape"}, wantErr: `no field "Shape"`},
		{name: "unknown out field", outFields: []string{"name", "gone"}, wantErr: `no field "gone"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			props, dates, err := layerProperties(fields, tt.outFields, "OBJECTID")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range props {
				names = append(names, p.Name)
			}
			if strings.Join(names, ",") != strings.Join(tt.want, ",") {
				t.Errorf("properties %v, want %v", names, tt.want)
			}
			if len(dates) != len(tt.wantDates) {
				t.Errorf("dates %v, want %v", dates, tt.wantDates)
			}
			for _, d := range tt.wantDates {
				if !dates[d] {
					t.Errorf("dates %v, want %v", dates, tt.wantDates)
				}
			}
		})
	}
}

func TestLayerArea(t *testing.T) {
	tests := []struct {
		name           string
		bbox           *[4]float64
		extent         string
		want           orb.Bound
		wantFromExtent bool
		wantErr        string
	}{
		{name: "bbox wins over an unreadable extent", bbox: &[4]float64{1, 2, 3, 4}, extent: `{"xmin":"NaN"}`,
			want: orb.Bound{Min: orb.Point{1, 2}, Max: orb.Point{3, 4}}},
		{name: "lon/lat extent", extent: `{"xmin":1,"ymin":2,"xmax":3,"ymax":4,"spatialReference":{"wkid":4326}}`,
			want: orb.Bound{Min: orb.Point{1, 2}, Max: orb.Point{3, 4}}, wantFromExtent: true},
		{name: "mercator extent", extent: `{"xmin":0,"ymin":0,"xmax":0,"ymax":0,"spatialReference":{"wkid":102100,"latestWkid":3857}}`,
			want: orb.Bound{}, wantFromExtent: true},
		{name: "other wkid", extent: `{"xmin":0,"ymin":0,"xmax":1,"ymax":1,"spatialReference":{"wkid":25832}}`, wantErr: "wkid 25832"},
		{name: "unreadable extent", extent: `{"xmin":"NaN"}`, wantErr: "extent cannot be read"},
		{name: "null extent", extent: `null`, wantErr: "states no extent"},
		{name: "no extent", wantErr: "states no extent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, fromExtent, err := layerArea(tt.bbox, json.RawMessage(tt.extent))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || fromExtent != tt.wantFromExtent || !near(got, tt.want) {
				t.Errorf("layerArea = %v, %v, %v; want %v, %v", got, fromExtent, err, tt.want, tt.wantFromExtent)
			}
		})
	}
}

func near(a, b orb.Bound) bool {
	for i := range 2 {
		if math.Abs(a.Min[i]-b.Min[i]) > 1e-9 || math.Abs(a.Max[i]-b.Max[i]) > 1e-9 {
			return false
		}
	}
	return true
}

package spatial_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/paulmach/orb/encoding/wkt"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/esrijson"
	"github.com/geoflow/geoflow/spatial/geojson"
	"github.com/geoflow/geoflow/spatial/gml"
)

// TestReadersNeverRepair: the same bad geometry in GML, GeoJSON and Esri JSON is refused
// by every reader, either by the reader itself (a *spatial.FeatureError) or by
// spatial.Validate on what it decoded; no reader closes a ring or drops a point so that
// the result passes. The Esri JSON reader closed unclosed rings.
func TestReadersNeverRepair(t *testing.T) {
	const gmlHead = `<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs/2.0" xmlns:gml="http://www.opengis.net/gml/3.2" xmlns:a="urn:a"><wfs:member><a:f gml:id="f.1"><a:g>`
	const gmlTail = `</a:g></a:f></wfs:member></wfs:FeatureCollection>`
	polygonGML := func(posList string) string {
		return gmlHead + `<gml:Polygon><gml:exterior><gml:LinearRing><gml:posList>` + posList + `</gml:posList></gml:LinearRing></gml:exterior></gml:Polygon>` + gmlTail
	}
	geoJSON := func(g string) string {
		return `{"type":"FeatureCollection","features":[{"type":"Feature","id":"f.1","properties":{},"geometry":` + g + `}]}`
	}
	esri := func(g string) string {
		return `{"objectIdFieldName":"OBJECTID","features":[{"attributes":{"OBJECTID":1},"geometry":` + g + `}]}`
	}
	tests := []struct {
		name               string
		gml, geojson, esri string
		validateSays       string // what Validate says of what a reader decoded, when it did
		readerSaysOneOf    []string
	}{
		{name: "unclosed ring",
			gml:          polygonGML("0 0 1 0 1 1 0 1"),
			geojson:      geoJSON(`{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1]]]}`),
			esri:         esri(`{"rings":[[[0,0],[0,1],[1,1],[1,0]]]}`),
			validateSays: "polygon ring 0 is not closed (first 0,0 last 0,1)", readerSaysOneOf: []string{"ring 0 is not closed (first 0,0 last 1,0)"}},
		{name: "ring of three points",
			gml:          polygonGML("0 0 1 0 0 0"),
			geojson:      geoJSON(`{"type":"Polygon","coordinates":[[[0,0],[1,0],[0,0]]]}`),
			esri:         esri(`{"rings":[[[0,0],[1,0],[0,0]]]}`),
			validateSays: "polygon ring 0 has 3 points, fewer than 4", readerSaysOneOf: []string{"polygon ring with 3 positions, want at least 4", "ring 0 has 3 points"}},
		{name: "collapsed ring",
			gml:          polygonGML("0 0 1 1 0 0 0 0"),
			geojson:      geoJSON(`{"type":"Polygon","coordinates":[[[0,0],[1,1],[0,0],[0,0]]]}`),
			esri:         esri(`{"rings":[[[0,0],[1,1],[0,0],[0,0]]]}`),
			validateSays: "polygon ring 0 has 2 distinct points, fewer than 3"},
		{name: "line in one place",
			gml:          gmlHead + `<gml:LineString><gml:posList>3 4 3 4</gml:posList></gml:LineString>` + gmlTail,
			geojson:      geoJSON(`{"type":"LineString","coordinates":[[3,4],[3,4]]}`),
			esri:         esri(`{"paths":[[[3,4],[3,4]]]}`),
			validateSays: "linestring has 1 distinct points, fewer than 2 (all at 3,4)"},
		{name: "line of one point",
			gml:             gmlHead + `<gml:LineString><gml:posList>3 4</gml:posList></gml:LineString>` + gmlTail,
			geojson:         geoJSON(`{"type":"LineString","coordinates":[[3,4]]}`),
			esri:            esri(`{"paths":[[[3,4]]]}`),
			readerSaysOneOf: []string{"gml:LineString with 1 positions", "LineString with 1 positions", "path 0 has one point"}},
	}
	for _, tt := range tests {
		for _, format := range []string{"gml", "geojson", "esrijson"} {
			t.Run(tt.name+"/"+format, func(t *testing.T) {
				var r spatial.Reader
				switch format {
				case "gml":
					r = gml.NewReader(strings.NewReader(tt.gml), gml.Options{})
				case "geojson":
					r = geojson.NewReader(strings.NewReader(tt.geojson), geojson.Options{})
				default:
					r = esrijson.NewReader(strings.NewReader(tt.esri), esrijson.Options{})
				}
				f, err := r.Next()
				var fe *spatial.FeatureError
				switch {
				case errors.As(err, &fe):
					if !oneOf(fe.Err.Error(), tt.readerSaysOneOf) {
						t.Errorf("the reader refused it for %q, want one of %q", fe.Err, tt.readerSaysOneOf)
					}
				case err != nil:
					t.Fatalf("Next: %v, want the feature or its refusal", err)
				default:
					verr := spatial.Validate(f.Geometry)
					if verr == nil {
						t.Fatalf("decoded %s and Validate accepts it: the reader repaired it", wkt.MarshalString(f.Geometry))
					}
					if tt.validateSays == "" || !strings.Contains(verr.Error(), tt.validateSays) {
						t.Errorf("decoded %s; Validate says %q, want %q", wkt.MarshalString(f.Geometry), verr, tt.validateSays)
					}
				}
				if _, err := r.Next(); err != io.EOF {
					t.Errorf("after the one feature: %v, want io.EOF", err)
				}
			})
		}
	}
}

func oneOf(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

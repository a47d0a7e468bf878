package arcgis

import (
	"encoding/json"
	"testing"
)

// FuzzAnswers: whatever a service answers for its layer document or an error, reading
// them never panics, and an {"error":...} body is always an error.
func FuzzAnswers(f *testing.F) {
	f.Add([]byte(`{"error":{"code":498,"message":"Invalid Token","details":[]}}`))
	f.Add([]byte(`{"error":{"code":"500","message":null}}`))
	f.Add([]byte(`{"type":"Feature Layer","geometryType":"esriGeometryPolygon","objectIdField":"OBJECTID","maxRecordCount":-5,"fields":[{"name":"a","type":"esriFieldTypeRaster"}],"extent":{"xmin":1e400}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		err := serviceError(body)
		var probe struct {
			Error *json.RawMessage `json:"error"`
		}
		if json.Unmarshal(body, &probe) == nil && probe.Error != nil && string(*probe.Error) != "null" && len(body) < 64 && err == nil {
			var e struct {
				Error *struct{} `json:"error"`
			}
			if json.Unmarshal(body, &e) == nil && e.Error != nil {
				t.Fatalf("an error body read as no error: %s", body)
			}
		}
		var l layer
		if json.Unmarshal(body, &l) == nil {
			for _, fl := range l.Fields {
				_, _ = columnType(fl.Type) // must not panic on any type name
			}
		}
	})
}

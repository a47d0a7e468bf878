package ogcapi

import (
	"encoding/json"
	"testing"
)

// FuzzDocuments: whatever a server sends as its OpenAPI document, collection, queryables
// or next link, reading them never panics, and a limit maximum read is at least 1.
func FuzzDocuments(f *testing.F) {
	f.Add([]byte(`{"paths":{"/collections/{collectionId}/items":{"get":{"parameters":[{"$ref":"#/components/parameters/limit"}]}}},"components":{"parameters":{"limit":{"name":"limit","schema":{"maximum":10000}}}}}`),
		"http://h/ogcapi/collections/c/items?f=json&limit=10&offset=10")
	f.Add([]byte(`{"id":"c","extent":{"spatial":{"bbox":[[1,2,3,4,5,6]],"crs":"x"}},"crs":["#/crs"],"links":[{"rel":"items","href":"::"}]}`), "%zz")
	f.Add([]byte(`{"properties":{"a":{"type":["integer","null"]},"g":{"format":"geometry-polygon"},"d":{"type":"string","format":"date-time"}}}`), "?startIndex=5")
	f.Fuzz(func(t *testing.T, doc []byte, next string) {
		var d openAPI
		if json.Unmarshal(doc, &d) == nil {
			if m := d.limitMax("c"); m < 0 {
				t.Fatalf("limit maximum %d", m)
			}
		}
		var c collection
		_ = json.Unmarshal(doc, &c)
		_ = find(c.Links, "items", next)
		var q queryables
		if json.Unmarshal(doc, &q) == nil {
			for _, p := range q.Properties {
				schemaType(p.Type, p.Format)
			}
		}
		_ = pagingParam(next)
		_ = join(next, "items")
		_ = withF(next)
	})
}

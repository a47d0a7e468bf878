package cql_test

import (
	"testing"

	"github.com/geoflow/geoflow/spatial/cql"
)

// BenchmarkMatch is the cost of evaluating a filter on one feature (ns/op is ns per
// feature), for the docs of transform.where.
func BenchmarkMatch(b *testing.B) {
	props := map[string]any{"land_use": "residential", "area_m2": 812.5, "zone": "R1", "name": "O'Brien house",
		"value": "250000", "built": "1999-12-31", "owner": "x", "parcel_id": "P-1"}
	types := map[string]cql.Type{"land_use": cql.Text, "area_m2": cql.Number, "zone": cql.Text, "name": cql.Text,
		"value": cql.Number, "built": cql.Date}
	for _, bc := range []struct{ name, expr string }{
		{"equal", "land_use = 'residential'"},
		{"and_number", "land_use = 'residential' AND area_m2 > 500"},
		{"number_from_text", "value BETWEEN 100000 AND 300000"},
		{"like_in_or", "name LIKE 'O%house' AND zone IN ('R1', 'R2', 'R3') OR built < DATE('2000-01-01')"},
	} {
		e, err := cql.Parse(bc.expr)
		if err != nil {
			b.Fatal(err)
		}
		f, err := e.Bind(types)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				f.Match(props)
			}
		})
	}
}

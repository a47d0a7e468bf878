package esrijson_test

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/spatial/esrijson"
)

// benchFeatureSet writes an Esri JSON feature set of n polygon features as a feature
// service answers them: parcels of 17 vertices, every third with a hole, every fifth a
// two-part polygon, and every seventh wound backwards (exteriors counter-clockwise), so
// that the nesting fallback is measured too.
func benchFeatureSet(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"objectIdFieldName":"OBJECTID","globalIdFieldName":"","geometryType":"esriGeometryPolygon",` +
		`"spatialReference":{"wkid":4326,"latestWkid":4326},"fields":[{"name":"OBJECTID","type":"esriFieldTypeOID","alias":"OBJECTID"},` +
		`{"name":"NAME","type":"esriFieldTypeString","alias":"Name","length":64}],"features":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		x0, y0 := 11+float64(i%100)*0.01, 48+float64(i/100)*0.01
		backwards := i%7 == 0
		rings := []string{benchRing(x0, y0, 0.008, 16, !backwards)}
		if i%3 == 0 {
			rings = append(rings, benchRing(x0+0.003, y0+0.003, 0.002, 4, backwards))
		}
		if i%5 == 0 {
			rings = append(rings, benchRing(x0+0.0085, y0, 0.001, 4, !backwards))
		}
		fmt.Fprintf(&b, `{"attributes":{"OBJECTID":%d,"NAME":"parcel %d","AREA_HA":%g,"ZONE":"R%d","BUILT":%d,"OWNER_ID":%d},"geometry":{"rings":[%s]}}`,
			i+1, i, 0.64+float64(i%10)*0.01, i%4, 1900+i%120, 9007199254740000+i, strings.Join(rings, ","))
	}
	b.WriteString(`],"exceededTransferLimit":false}`)
	return []byte(b.String())
}

// benchRing writes a closed ring of k+1 vertices around the square at (x0, y0) of side s:
// clockwise (y up) as Esri writes exteriors, or counter-clockwise.
func benchRing(x0, y0, s float64, k int, cw bool) string {
	pts := make([]string, 0, k+1)
	for j := range k {
		side, t := j*4/k, float64(j*4%k)/float64(k)
		var x, y float64
		switch side {
		case 0:
			x, y = x0, y0+t*s
		case 1:
			x, y = x0+t*s, y0+s
		case 2:
			x, y = x0+s, y0+s-t*s
		default:
			x, y = x0+s-t*s, y0
		}
		pts = append(pts, fmt.Sprintf("[%.6f,%.6f]", x, y))
	}
	if !cw {
		for a, z := 0, len(pts)-1; a < z; a, z = a+1, z-1 {
			pts[a], pts[z] = pts[z], pts[a]
		}
	}
	pts = append(pts, pts[0])
	return "[" + strings.Join(pts, ",") + "]"
}

// BenchmarkReader reads a feature set of 3,000 polygon features.
func BenchmarkReader(b *testing.B) {
	const n = 3000
	doc := benchFeatureSet(n)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		r := esrijson.NewReader(bytes.NewReader(doc), esrijson.Options{})
		got := 0
		for {
			f, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if f.Geometry == nil {
				b.Fatalf("feature %d without geometry", got)
			}
			got++
		}
		if got != n {
			b.Fatalf("read %d features, want %d", got, n)
		}
	}
}

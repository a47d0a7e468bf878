package gml

import (
	"bytes"
	"fmt"
	"io"
)

// genReader writes a WFS 2.0 / GML 3.2 response of n polygon features on
// the fly, like a server streaming from its database: ~17 vertices and 8
// attributes each, lat/lon order under an EPSG URN. It never holds more than
// one feature.
type genReader struct {
	n, i  int
	buf   bytes.Buffer
	state int // 0 header, 1 features, 2 footer, 3 done
}

func newGen(n int) *genReader { return &genReader{n: n} }

const genHeader = `<?xml version="1.0" encoding="UTF-8"?>
<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs/2.0" xmlns:gml="http://www.opengis.net/gml/3.2" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:app="http://example.org/app" numberMatched="unknown" numberReturned="%d" timeStamp="2024-05-01T10:00:00.000Z">
`

func (g *genReader) fill() {
	switch g.state {
	case 0:
		fmt.Fprintf(&g.buf, genHeader, g.n)
		g.state = 1
	case 1:
		if g.i >= g.n {
			g.state = 2
			return
		}
		writeGenFeature(&g.buf, g.i)
		g.i++
	case 2:
		g.buf.WriteString("</wfs:FeatureCollection>\n")
		g.state = 3
	}
}

func writeGenFeature(b *bytes.Buffer, i int) {
	lat, lon := 50+float64(i%1000)*0.001, 5+float64(i/1000)*0.001
	fmt.Fprintf(b, `<wfs:member>
<app:parcels gml:id="parcels.%d">
<app:geom><gml:Polygon gml:id="parcels.%d.geom" srsName="urn:ogc:def:crs:EPSG::4326" srsDimension="2"><gml:exterior><gml:LinearRing><gml:posList>`, i, i)
	for k := 0; k < 16; k++ {
		fmt.Fprintf(b, "%.7f %.7f ", lat+float64(k%4)*0.0001+float64(k)*0.00001, lon+float64(k/4)*0.0001)
	}
	fmt.Fprintf(b, "%.7f %.7f", lat, lon)
	fmt.Fprintf(b, `</gml:posList></gml:LinearRing></gml:exterior></gml:Polygon></app:geom>
<app:parcel_id>P-%07d</app:parcel_id>
<app:name>Parcel number %d of the land register</app:name>
<app:area_m2>%d.25</app:area_m2>
<app:owner_type>municipal</app:owner_type>
<app:zoning>R-%d</app:zoning>
<app:updated>2023-11-%02dT12:00:00Z</app:updated>
<app:valid>true</app:valid>
<app:remarks xsi:nil="true"/>
</app:parcels>
</wfs:member>
`, i, i, 100+i%5000, i%7, 1+i%28)
}

func (g *genReader) Read(p []byte) (int, error) {
	for g.buf.Len() < len(p) && g.state < 3 {
		g.fill()
	}
	if g.buf.Len() == 0 {
		return 0, io.EOF
	}
	return g.buf.Read(p)
}

package tileserver

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/paulmach/orb"
)

// WMTSLayer is the one layer the server's WMTS capabilities advertise.
const WMTSLayer = "basemap"

// WMTSCapabilitiesURL is the RESTful capabilities document of a server mounted at base;
// base+"/wmts?SERVICE=WMTS&REQUEST=GetCapabilities" is the KVP form.
func WMTSCapabilitiesURL(base string) string { return base + "/wmts/1.0.0/WMTSCapabilities.xml" }

// isCapabilities tells a WMTS GetCapabilities request, KVP or RESTful.
func isCapabilities(r *http.Request) bool {
	if strings.HasSuffix(r.URL.Path, "/WMTSCapabilities.xml") {
		return true
	}
	for k, v := range r.URL.Query() {
		if strings.EqualFold(k, "REQUEST") && len(v) > 0 && strings.EqualFold(v[0], "GetCapabilities") {
			return strings.HasSuffix(r.URL.Path, "/wmts")
		}
	}
	return false
}

// capabilities writes a WMTS 1.0.0 capabilities document the way GeoServer's
// GeoWebCache and MapProxy do: one layer with its WGS84BoundingBox (the coverage), its
// format, a link to the GoogleMapsCompatible tile matrix set (levels 0 to MaxZoom) and a
// RESTful ResourceURL template, and the KVP GetTile endpoint.
func (s *Server) capabilities(w http.ResponseWriter, r *http.Request) {
	base := "http://" + r.Host
	c := s.o.Coverage
	if c == (orb.Bound{}) {
		c = orb.Bound{Min: orb.Point{-180, -85.051129}, Max: orb.Point{180, 85.051129}}
	}
	ext, ct := "png", "image/png"
	if s.o.Format == "jpeg" {
		ext, ct = "jpeg", "image/jpeg"
	}
	var matrices strings.Builder
	const origin = 20037508.342789244
	for z := 0; z <= s.o.MaxZoom; z++ {
		n := 1 << uint(z)
		fmt.Fprintf(&matrices, "<TileMatrix><ows:Identifier>%d</ows:Identifier><ScaleDenominator>%.10g</ScaleDenominator>"+
			"<TopLeftCorner>%.9f %.9f</TopLeftCorner><TileWidth>256</TileWidth><TileHeight>256</TileHeight>"+
			"<MatrixWidth>%d</MatrixWidth><MatrixHeight>%d</MatrixHeight></TileMatrix>",
			z, 559082264.0287178/float64(n), -origin, origin, n, n)
	}
	w.Header().Set("Content-Type", "application/xml")
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<Capabilities xmlns="http://www.opengis.net/wmts/1.0" xmlns:ows="http://www.opengis.net/ows/1.1" xmlns:xlink="http://www.w3.org/1999/xlink" version="1.0.0">
<ows:ServiceIdentification><ows:Title>fixture tiles</ows:Title><ows:ServiceType>OGC WMTS</ows:ServiceType><ows:ServiceTypeVersion>1.0.0</ows:ServiceTypeVersion></ows:ServiceIdentification>
<ows:OperationsMetadata><ows:Operation name="GetTile"><ows:DCP><ows:HTTP><ows:Get xlink:href="%[1]s/wmts?"><ows:Constraint name="GetEncoding"><ows:AllowedValues><ows:Value>KVP</ows:Value></ows:AllowedValues></ows:Constraint></ows:Get></ows:HTTP></ows:DCP></ows:Operation></ows:OperationsMetadata>
<Contents>
<Layer><ows:Title>Basemap</ows:Title><ows:WGS84BoundingBox><ows:LowerCorner>%[2]g %[3]g</ows:LowerCorner><ows:UpperCorner>%[4]g %[5]g</ows:UpperCorner></ows:WGS84BoundingBox>
<ows:Identifier>%[6]s</ows:Identifier><Style isDefault="true"><ows:Identifier>default</ows:Identifier></Style><Format>%[7]s</Format>
<TileMatrixSetLink><TileMatrixSet>GoogleMapsCompatible</TileMatrixSet></TileMatrixSetLink>
<ResourceURL format="%[7]s" resourceType="tile" template="%[1]s/wmts/rest/%[6]s/{Style}/{TileMatrixSet}/{TileMatrix}/{TileRow}/{TileCol}.%[8]s"/>
</Layer>
<TileMatrixSet><ows:Identifier>GoogleMapsCompatible</ows:Identifier><ows:SupportedCRS>urn:ogc:def:crs:EPSG:6.18.3:3857</ows:SupportedCRS><WellKnownScaleSet>urn:ogc:def:wkss:OGC:1.0:GoogleMapsCompatible</WellKnownScaleSet>%[9]s</TileMatrixSet>
</Contents>
<ServiceMetadataURL xlink:href="%[1]s/wmts/1.0.0/WMTSCapabilities.xml"/>
</Capabilities>`, base, c.Min[0], c.Min[1], c.Max[0], c.Max[1], WMTSLayer, ct, ext, matrices.String())
}

// parseREST reads a RESTful WMTS tile path, /wmts/rest/{layer}/{style}/{set}/{z}/{row}/{col}.ext.
func parseREST(p string) (z, x, y int, ok bool) {
	parts := strings.Split(p, "/")
	if len(parts) != 6 || parts[0] != WMTSLayer {
		return 0, 0, 0, false
	}
	last := parts[5]
	if i := strings.IndexByte(last, '.'); i >= 0 {
		last = last[:i]
	}
	if _, err := fmt.Sscanf(parts[3]+" "+parts[4]+" "+last, "%d %d %d", &z, &y, &x); err != nil {
		return 0, 0, 0, false
	}
	return z, x, y, valid(z, x, y)
}

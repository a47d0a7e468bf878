package wfsserver

import (
	"net/http"
	"strconv"
	"strings"
)

func (s *Server) baseURL(r *http.Request) string {
	if s.opts.BaseURL != "" {
		return s.opts.BaseURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + r.URL.Path
}

// outputFormats lists the GetFeature output formats advertised for version.
func (s *Server) outputFormats(version string) []string {
	var f []string
	switch version {
	case "2.0.0":
		f = []string{"application/gml+xml; version=3.2", "text/xml; subtype=gml/3.2"}
	case "1.1.0":
		f = []string{"text/xml; subtype=gml/3.1.1", "text/xml; subtype=gml/2.1.2", "GML2"}
	default:
		f = []string{"GML2", "GML3"}
	}
	if s.json {
		f = append(f, s.fl.jsonFormats[0])
	}
	return f
}

// wgs84Bound is the advertised extent: the grid plus the parcels' overhang.
func (s *Server) wgs84Bound() (minX, minY, maxX, maxY float64) {
	g := &s.grid
	return g.ext.Min[0] - maxOverhang*g.dx, g.ext.Min[1] - maxOverhang*g.dy,
		g.ext.Max[0] + maxOverhang*g.dx, g.ext.Max[1] + maxOverhang*g.dy
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func (s *Server) serveCapabilities(w http.ResponseWriter, r *http.Request, q *query) {
	base := escapeString(s.baseURL(r))
	var b strings.Builder
	b.WriteString(xmlHeader)
	switch q.version {
	case "2.0.0":
		s.capabilities20(&b, base)
	case "1.1.0":
		s.capabilities11(&b, base)
	default:
		s.capabilities10(&b, base)
	}
	w.Header().Set("Content-Type", "application/xml; charset=UTF-8")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	_, _ = w.Write([]byte(b.String()))
}

func boolText(v bool) string {
	if v {
		return "TRUE"
	}
	return "FALSE"
}

func (s *Server) title() string {
	return "geoflow sample parcels (" + s.fl.name + " flavor, " + strconv.Itoa(s.grid.n) + " features)"
}

func (s *Server) capabilities20(b *strings.Builder, base string) {
	p := func(parts ...string) {
		for _, x := range parts {
			b.WriteString(x)
		}
	}
	p(`<wfs:WFS_Capabilities version="2.0.0" xmlns:wfs="http://www.opengis.net/wfs/2.0" xmlns:ows="http://www.opengis.net/ows/1.1"`,
		` xmlns:fes="http://www.opengis.net/fes/2.0" xmlns:gml="http://www.opengis.net/gml/3.2" xmlns:xlink="http://www.w3.org/1999/xlink"`,
		` xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:`, s.prefix, `="`, s.ns, `"`,
		` xsi:schemaLocation="http://www.opengis.net/wfs/2.0 http://schemas.opengis.net/wfs/2.0/wfs.xsd">`, "\n")
	p(`<ows:ServiceIdentification><ows:Title>`, escapeString(s.title()), `</ows:Title>`,
		`<ows:Abstract>Deterministically generated parcels for testing WFS clients.</ows:Abstract>`,
		`<ows:ServiceType>WFS</ows:ServiceType>`)
	for _, v := range s.opts.Versions {
		p(`<ows:ServiceTypeVersion>`, v, `</ows:ServiceTypeVersion>`)
	}
	p(`<ows:Fees>NONE</ows:Fees><ows:AccessConstraints>NONE</ows:AccessConstraints></ows:ServiceIdentification>`, "\n",
		`<ows:ServiceProvider><ows:ProviderName>geoflow</ows:ProviderName></ows:ServiceProvider>`, "\n",
		`<ows:OperationsMetadata>`, "\n")
	op := func(name string, params ...[]string) {
		p(`<ows:Operation name="`, name, `"><ows:DCP><ows:HTTP><ows:Get xlink:href="`, base, `"/>`)
		if name == "GetFeature" {
			p(`<ows:Post xlink:href="`, base, `"/>`)
		}
		p(`</ows:HTTP></ows:DCP>`)
		for _, pv := range params {
			p(`<ows:Parameter name="`, pv[0], `"><ows:AllowedValues>`)
			for _, v := range pv[1:] {
				p(`<ows:Value>`, escapeString(v), `</ows:Value>`)
			}
			p(`</ows:AllowedValues></ows:Parameter>`)
		}
		p(`</ows:Operation>`, "\n")
	}
	op("GetCapabilities", append([]string{"AcceptVersions"}, s.opts.Versions...),
		[]string{"AcceptFormats", "text/xml"})
	op("DescribeFeatureType", []string{"outputFormat", "application/gml+xml; version=3.2"})
	op("GetFeature", append([]string{"outputFormat"}, s.outputFormats("2.0.0")...),
		[]string{"resultType", "results", "hits"})
	p(`<ows:Parameter name="version"><ows:AllowedValues><ows:Value>2.0.0</ows:Value></ows:AllowedValues></ows:Parameter>`, "\n")
	constraint := func(name, v string) {
		p(`<ows:Constraint name="`, name, `"><ows:NoValues/><ows:DefaultValue>`, v, `</ows:DefaultValue></ows:Constraint>`, "\n")
	}
	for _, c := range []struct {
		n string
		v bool
	}{
		{"ImplementsBasicWFS", true}, {"ImplementsTransactionalWFS", false}, {"ImplementsLockingWFS", false},
		{"KVPEncoding", true}, {"XMLEncoding", true}, {"SOAPEncoding", false},
		{"ImplementsInheritance", false}, {"ImplementsRemoteResolve", false},
		{"ImplementsResultPaging", true}, {"ImplementsStandardJoins", false},
		{"ImplementsSpatialJoins", false}, {"ImplementsTemporalJoins", false},
		{"ImplementsFeatureVersioning", false}, {"ManageStoredQueries", false},
		{"PagingIsTransactionSafe", false},
	} {
		constraint(c.n, boolText(c.v))
	}
	if !s.fl.noCountDefault {
		constraint("CountDefault", strconv.Itoa(s.opts.CountDefault))
	}
	p(`<ows:Constraint name="QueryExpressions"><ows:AllowedValues><ows:Value>wfs:Query</ows:Value></ows:AllowedValues></ows:Constraint>`, "\n",
		`</ows:OperationsMetadata>`, "\n")
	minX, minY, maxX, maxY := s.wgs84Bound()
	p(`<wfs:FeatureTypeList><wfs:FeatureType><wfs:Name>`, s.TypeName(), `</wfs:Name><wfs:Title>Parcels</wfs:Title>`,
		`<wfs:Abstract>Generated cadastral parcels with awkward attribute values.</wfs:Abstract>`,
		`<wfs:DefaultCRS>urn:ogc:def:crs:EPSG::4326</wfs:DefaultCRS><wfs:OutputFormats>`)
	for _, f := range s.outputFormats("2.0.0") {
		p(`<wfs:Format>`, escapeString(f), `</wfs:Format>`)
	}
	p(`</wfs:OutputFormats><ows:WGS84BoundingBox><ows:LowerCorner>`, ftoa(minX), " ", ftoa(minY),
		`</ows:LowerCorner><ows:UpperCorner>`, ftoa(maxX), " ", ftoa(maxY), `</ows:UpperCorner></ows:WGS84BoundingBox>`,
		`</wfs:FeatureType></wfs:FeatureTypeList>`, "\n")
	// ImplementsSorting is a Filter Encoding 2.0 conformance class, so it
	// lives here, not among the WFS constraints.
	p(`<fes:Filter_Capabilities><fes:Conformance>`)
	for _, c := range []struct {
		n string
		v bool
	}{
		{"ImplementsQuery", true}, {"ImplementsAdHocQuery", true}, {"ImplementsFunctions", false},
		{"ImplementsResourceId", true}, {"ImplementsMinStandardFilter", false}, {"ImplementsStandardFilter", false},
		{"ImplementsMinSpatialFilter", true}, {"ImplementsSpatialFilter", false},
		{"ImplementsMinTemporalFilter", false}, {"ImplementsTemporalFilter", false},
		{"ImplementsVersionNav", false}, {"ImplementsSorting", s.opts.ImplementsSorting},
		{"ImplementsExtendedOperators", false}, {"ImplementsMinimumXPath", false}, {"ImplementsSchemaElementFunc", false},
	} {
		p(`<fes:Constraint name="`, c.n, `"><ows:NoValues/><ows:DefaultValue>`, boolText(c.v), `</ows:DefaultValue></fes:Constraint>`)
	}
	p(`</fes:Conformance>`, "\n",
		`<fes:Id_Capabilities><fes:ResourceIdentifier name="fes:ResourceId"/></fes:Id_Capabilities>`, "\n",
		`<fes:Spatial_Capabilities><fes:GeometryOperands><fes:GeometryOperand name="gml:Envelope"/></fes:GeometryOperands>`,
		`<fes:SpatialOperators><fes:SpatialOperator name="BBOX"/></fes:SpatialOperators></fes:Spatial_Capabilities>`, "\n",
		`</fes:Filter_Capabilities>`, "\n</wfs:WFS_Capabilities>\n")
}

func (s *Server) capabilities11(b *strings.Builder, base string) {
	p := func(parts ...string) {
		for _, x := range parts {
			b.WriteString(x)
		}
	}
	p(`<wfs:WFS_Capabilities version="1.1.0" xmlns:wfs="http://www.opengis.net/wfs" xmlns:ows="http://www.opengis.net/ows"`,
		` xmlns:ogc="http://www.opengis.net/ogc" xmlns:gml="http://www.opengis.net/gml" xmlns:xlink="http://www.w3.org/1999/xlink"`,
		` xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:`, s.prefix, `="`, s.ns, `"`,
		` xsi:schemaLocation="http://www.opengis.net/wfs http://schemas.opengis.net/wfs/1.1.0/wfs.xsd">`, "\n")
	p(`<ows:ServiceIdentification><ows:Title>`, escapeString(s.title()), `</ows:Title>`,
		`<ows:ServiceType>WFS</ows:ServiceType><ows:ServiceTypeVersion>1.1.0</ows:ServiceTypeVersion>`,
		`<ows:Fees>NONE</ows:Fees><ows:AccessConstraints>NONE</ows:AccessConstraints></ows:ServiceIdentification>`, "\n",
		`<ows:ServiceProvider><ows:ProviderName>geoflow</ows:ProviderName></ows:ServiceProvider>`, "\n",
		`<ows:OperationsMetadata>`, "\n")
	op := func(name string, params ...[]string) {
		p(`<ows:Operation name="`, name, `"><ows:DCP><ows:HTTP><ows:Get xlink:href="`, base, `?"/>`)
		if name == "GetFeature" {
			p(`<ows:Post xlink:href="`, base, `"/>`)
		}
		p(`</ows:HTTP></ows:DCP>`)
		for _, pv := range params {
			p(`<ows:Parameter name="`, pv[0], `">`)
			for _, v := range pv[1:] {
				p(`<ows:Value>`, escapeString(v), `</ows:Value>`)
			}
			p(`</ows:Parameter>`)
		}
		p(`</ows:Operation>`, "\n")
	}
	op("GetCapabilities", append([]string{"AcceptVersions"}, s.opts.Versions...), []string{"AcceptFormats", "text/xml"})
	op("DescribeFeatureType", []string{"outputFormat", "text/xml; subtype=gml/3.1.1"})
	op("GetFeature", []string{"resultType", "results", "hits"}, append([]string{"outputFormat"}, s.outputFormats("1.1.0")...))
	if s.fl.defaultMaxFeaturesConstraint {
		p(`<ows:Constraint name="DefaultMaxFeatures"><ows:Value>`, strconv.Itoa(s.opts.CountDefault), `</ows:Value></ows:Constraint>`, "\n")
	}
	p(`</ows:OperationsMetadata>`, "\n")
	minX, minY, maxX, maxY := s.wgs84Bound()
	p(`<wfs:FeatureTypeList><wfs:Operations><wfs:Operation>Query</wfs:Operation></wfs:Operations>`,
		`<wfs:FeatureType><wfs:Name>`, s.TypeName(), `</wfs:Name><wfs:Title>Parcels</wfs:Title>`,
		`<wfs:DefaultSRS>urn:ogc:def:crs:EPSG::4326</wfs:DefaultSRS><wfs:OutputFormats>`)
	for _, f := range s.outputFormats("1.1.0") {
		p(`<wfs:Format>`, escapeString(f), `</wfs:Format>`)
	}
	p(`</wfs:OutputFormats><ows:WGS84BoundingBox><ows:LowerCorner>`, ftoa(minX), " ", ftoa(minY),
		`</ows:LowerCorner><ows:UpperCorner>`, ftoa(maxX), " ", ftoa(maxY), `</ows:UpperCorner></ows:WGS84BoundingBox>`,
		`</wfs:FeatureType></wfs:FeatureTypeList>`, "\n")
	p(`<ogc:Filter_Capabilities><ogc:Spatial_Capabilities><ogc:GeometryOperands><ogc:GeometryOperand>gml:Envelope</ogc:GeometryOperand></ogc:GeometryOperands>`,
		`<ogc:SpatialOperators><ogc:SpatialOperator name="BBOX"/></ogc:SpatialOperators></ogc:Spatial_Capabilities>`,
		`<ogc:Scalar_Capabilities><ogc:LogicalOperators/></ogc:Scalar_Capabilities>`,
		`<ogc:Id_Capabilities><ogc:FID/><ogc:EID/></ogc:Id_Capabilities></ogc:Filter_Capabilities>`, "\n",
		"</wfs:WFS_Capabilities>\n")
}

func (s *Server) capabilities10(b *strings.Builder, base string) {
	p := func(parts ...string) {
		for _, x := range parts {
			b.WriteString(x)
		}
	}
	p(`<WFS_Capabilities version="1.0.0" xmlns="http://www.opengis.net/wfs" xmlns:ogc="http://www.opengis.net/ogc"`,
		` xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:`, s.prefix, `="`, s.ns, `"`,
		` xsi:schemaLocation="http://www.opengis.net/wfs http://schemas.opengis.net/wfs/1.0.0/WFS-capabilities.xsd">`, "\n",
		`<Service><Name>WFS</Name><Title>`, escapeString(s.title()), `</Title><OnlineResource>`, base, `</OnlineResource>`,
		`<Fees>NONE</Fees><AccessConstraints>NONE</AccessConstraints></Service>`, "\n",
		`<Capability><Request>`)
	dcp := `<DCPType><HTTP><Get onlineResource="` + base + `?"/></HTTP></DCPType>`
	p(`<GetCapabilities>`, dcp, `</GetCapabilities>`,
		`<DescribeFeatureType><SchemaDescriptionLanguage><XMLSCHEMA/></SchemaDescriptionLanguage>`, dcp, `</DescribeFeatureType>`,
		`<GetFeature><ResultFormat><GML2/><GML3/>`)
	if s.json {
		p(`<JSON/>`)
	}
	p(`</ResultFormat>`, dcp, `<DCPType><HTTP><Post onlineResource="`, base, `"/></HTTP></DCPType></GetFeature>`,
		`</Request></Capability>`, "\n")
	minX, minY, maxX, maxY := s.wgs84Bound()
	p(`<FeatureTypeList><Operations><Query/></Operations><FeatureType><Name>`, s.TypeName(), `</Name><Title>Parcels</Title>`,
		`<SRS>EPSG:4326</SRS><LatLongBoundingBox minx="`, ftoa(minX), `" miny="`, ftoa(minY),
		`" maxx="`, ftoa(maxX), `" maxy="`, ftoa(maxY), `"/></FeatureType></FeatureTypeList>`, "\n",
		`<ogc:Filter_Capabilities><ogc:Spatial_Capabilities><ogc:Spatial_Operators><ogc:BBOX/></ogc:Spatial_Operators></ogc:Spatial_Capabilities>`,
		`<ogc:Scalar_Capabilities><ogc:Logical_Operators/></ogc:Scalar_Capabilities></ogc:Filter_Capabilities>`, "\n",
		"</WFS_Capabilities>\n")
}

// serveDescribe answers DescribeFeatureType with an XML Schema against the
// GML version of the request's WFS version.
func (s *Server) serveDescribe(w http.ResponseWriter, q *query) {
	gmlNS, gmlXSD, base, subst, ct := "http://www.opengis.net/gml/3.2", "http://schemas.opengis.net/gml/3.2.1/gml.xsd",
		"gml:AbstractFeatureType", "gml:AbstractFeature", "application/gml+xml; version=3.2"
	switch q.version {
	case "1.1.0":
		gmlNS, gmlXSD, subst, ct = "http://www.opengis.net/gml", "http://schemas.opengis.net/gml/3.1.1/base/gml.xsd",
			"gml:_Feature", "text/xml; subtype=gml/3.1.1"
	case "1.0.0":
		gmlNS, gmlXSD, subst, ct = "http://www.opengis.net/gml", "http://schemas.opengis.net/gml/2.1.2/feature.xsd",
			"gml:_Feature", "text/xml; subtype=gml/2.1.2"
	}
	var b strings.Builder
	p := func(parts ...string) {
		for _, x := range parts {
			b.WriteString(x)
		}
	}
	p(xmlHeader, `<xsd:schema xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:gml="`, gmlNS, `" xmlns:`, s.prefix, `="`, s.ns,
		`" targetNamespace="`, s.ns, `" elementFormDefault="qualified" version="1.0">`, "\n",
		`<xsd:import namespace="`, gmlNS, `" schemaLocation="`, gmlXSD, `"/>`, "\n",
		`<xsd:complexType name="`, s.local, `Type"><xsd:complexContent><xsd:extension base="`, base, `"><xsd:sequence>`, "\n",
		`<xsd:element name="`, geometryName, `" type="gml:GeometryPropertyType" nillable="true" minOccurs="0" maxOccurs="1"/>`, "\n")
	for _, a := range schemaAttrs {
		minOccurs := "1"
		if a.Nillable {
			minOccurs = "0"
		}
		p(`<xsd:element name="`, a.Name, `" type="xsd:`, a.XSDType, `" nillable="`, strconv.FormatBool(a.Nillable),
			`" minOccurs="`, minOccurs, `" maxOccurs="1"/>`, "\n")
	}
	p(`</xsd:sequence></xsd:extension></xsd:complexContent></xsd:complexType>`, "\n",
		`<xsd:element name="`, s.local, `" type="`, s.prefix, ":", s.local, `Type" substitutionGroup="`, subst, `"/>`, "\n",
		"</xsd:schema>\n")
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	_, _ = w.Write([]byte(b.String()))
}

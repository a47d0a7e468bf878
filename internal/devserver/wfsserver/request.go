package wfsserver

import (
	"encoding/xml"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/paulmach/orb"
)

// owsError is an OGC exception to report.
type owsError struct {
	status  int
	code    string
	locator string
	text    string
}

func badParam(locator, text string) *owsError {
	return &owsError{status: http.StatusBadRequest, code: "InvalidParameterValue", locator: locator, text: text}
}

func missingParam(locator string) *owsError {
	return &owsError{status: http.StatusBadRequest, code: "MissingParameterValue", locator: locator,
		text: "Parameter " + locator + " is required"}
}

type outFormat int

const (
	fmtGML32 outFormat = iota
	fmtGML311
	fmtGML2
	fmtJSON
)

// crs is the one CRS served (WGS 84) under one of its names; latLon says
// which axis order the name implies.
type crs struct {
	name   string
	latLon bool
}

// query is a parsed request.
type query struct {
	request    string // lower case
	rawRequest string
	version    string
	params     map[string]string // upper-case keys

	bbox       *orb.Bound // lon/lat
	srs        crs
	srsGiven   bool
	count      int
	startIndex int
	startGiven bool
	countGiven bool
	hits       bool
	sortDesc   bool
	sorted     bool
	format     outFormat
	ids        []int
	hasIDs     bool
	// ogcapi marks an OGC API - Features items request; ogcapiItems is its URL.
	ogcapi      bool
	ogcapiItems string
	// ogcapiItem marks items/{featureId}: the answer is a bare Feature.
	ogcapiItem bool
	// ogcapiLatLon: the items were asked for in EPSG:4326 (Part 2), latitude first.
	ogcapiLatLon bool
	// ignoredOffset is the offset an OGCAPIIgnoreOffset server was asked for.
	ignoredOffset int
}

func (q *query) get(k string) string { return q.params[k] }

// parseRequest reads KVP (GET, or POST form) or an XML GetFeature body. On
// error q.version is still set for the exception's format.
func (s *Server) parseRequest(r *http.Request) (*query, *owsError) {
	q := &query{params: map[string]string{}, version: s.opts.Versions[0]}
	for k, v := range r.URL.Query() {
		q.params[strings.ToUpper(k)] = v[0]
	}
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			return q, &owsError{status: http.StatusBadRequest, code: "OperationParsingFailed", text: "reading request body: " + err.Error()}
		}
		ct := r.Header.Get("Content-Type")
		if strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
			vals, err := parseQuery(string(body))
			if err != nil {
				return q, &owsError{status: http.StatusBadRequest, code: "OperationParsingFailed", text: err.Error()}
			}
			for k, v := range vals {
				q.params[strings.ToUpper(k)] = v[0]
			}
		} else if err := parseXMLGetFeature(body, q.params); err != nil {
			return q, err
		}
	}
	if v := q.get("SERVICE"); v != "" && !strings.EqualFold(v, "WFS") {
		return q, badParam("service", "No service: ( "+v+" )")
	}
	q.rawRequest = q.get("REQUEST")
	if q.rawRequest == "" {
		return q, missingParam("request")
	}
	q.request = strings.ToLower(q.rawRequest)
	if q.request == "getcapabilities" {
		q.version = s.negotiate(q.get("ACCEPTVERSIONS"), q.get("VERSION"))
		return q, nil
	}
	if v := q.get("VERSION"); v != "" {
		if v == "2.0.2" {
			v = "2.0.0"
		}
		if !slices.Contains(s.opts.Versions, v) {
			return q, badParam("version", "Version "+v+" is not offered; try "+strings.Join(s.opts.Versions, ", "))
		}
		q.version = v
	}
	switch q.request {
	case "describefeaturetype":
		if err := s.checkTypeNames(q); err != nil {
			return q, err
		}
	case "getfeature":
		if err := s.parseGetFeature(q); err != nil {
			return q, err
		}
	}
	return q, nil
}

func parseQuery(s string) (map[string][]string, error) {
	r, err := http.NewRequest(http.MethodGet, "/?"+s, nil)
	if err != nil {
		return nil, err
	}
	return r.URL.Query(), nil
}

// negotiate picks the capabilities version: the first acceptable offered
// version, else the requested one if offered, else the highest offered.
func (s *Server) negotiate(accept, version string) string {
	for v := range strings.SplitSeq(accept, ",") {
		if v = strings.TrimSpace(v); slices.Contains(s.opts.Versions, v) {
			return v
		}
	}
	if slices.Contains(s.opts.Versions, version) {
		return version
	}
	return s.opts.Versions[0]
}

// checkTypeNames accepts the feature type with its prefix, without one, with
// a prefix bound to our namespace by NAMESPACES, or in Clark notation.
func (s *Server) checkTypeNames(q *query) *owsError {
	names := cmpOr(q.get("TYPENAMES"), q.get("TYPENAME"))
	if names == "" {
		if q.request == "getfeature" {
			return missingParam("typeName")
		}
		return nil
	}
	for n := range strings.SplitSeq(strings.Trim(names, "()"), ",") {
		n = strings.TrimSpace(n)
		if !s.knownType(n, q.get("NAMESPACES")+q.get("NAMESPACE")) {
			return badParam("typeName", "Feature type "+n+" unknown")
		}
	}
	return nil
}

func (s *Server) knownType(n, namespaces string) bool {
	if n == s.local || n == s.prefix+":"+s.local || n == "{"+s.ns+"}"+s.local {
		return true
	}
	p, l, ok := strings.Cut(n, ":")
	return ok && l == s.local && strings.Contains(namespaces, p+","+s.ns)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (s *Server) parseGetFeature(q *query) *owsError {
	if err := s.checkTypeNames(q); err != nil {
		return err
	}
	var err *owsError
	if q.srs, q.srsGiven, err = s.outputCRS(q); err != nil {
		return err
	}
	if f := q.get("FILTER"); f != "" {
		if err := parseKVPFilter(f, q.params); err != nil {
			return err
		}
	}
	if b := q.get("BBOX"); b != "" {
		bb, err := s.parseBBox(b, q.version)
		if err != nil {
			return err
		}
		q.bbox = &bb
	}
	if ids := cmpOr(q.get("RESOURCEID"), cmpOr(q.get("FEATUREID"), q.get("GMLOBJECTID"))); ids != "" {
		q.hasIDs = true
		for id := range strings.SplitSeq(ids, ",") {
			id = strings.TrimSpace(id)
			tail, ok := strings.CutPrefix(id, s.local+".")
			n, err := strconv.Atoi(tail)
			if ok && err == nil && n >= 0 && n < s.grid.n {
				q.ids = append(q.ids, n)
			}
		}
		slices.Sort(q.ids)
		q.ids = slices.Compact(q.ids)
		if q.ids == nil {
			q.ids = []int{}
		}
	}
	q.count = s.opts.CountDefault
	if c := cmpOr(q.get("COUNT"), q.get("MAXFEATURES")); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil || n < 0 {
			return badParam("count", "count must be a non-negative integer, not "+strconv.Quote(c))
		}
		q.countGiven = true
		q.count = min(n, s.opts.CountDefault)
	}
	if v := q.get("STARTINDEX"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return badParam("startIndex", "startIndex must be a non-negative integer, not "+strconv.Quote(v))
		}
		q.startIndex, q.startGiven = n, true
	}
	switch rt := strings.ToLower(q.get("RESULTTYPE")); rt {
	case "", "results":
	case "hits":
		// WFS 1.0 has no resultType; servers answer results.
		q.hits = q.version != "1.0.0"
	default:
		return badParam("resultType", "resultType must be results or hits, not "+strconv.Quote(rt))
	}
	if sb := q.get("SORTBY"); sb != "" && s.opts.ImplementsSorting {
		prop, dir, _ := strings.Cut(strings.TrimSpace(sb), " ")
		if _, l, ok := strings.Cut(prop, ":"); ok {
			prop = l
		}
		if prop != "parcel_id" {
			return badParam("sortBy", "this server sorts by parcel_id only, not "+strconv.Quote(prop))
		}
		q.sorted = true
		switch strings.ToUpper(strings.TrimSpace(dir)) {
		case "", "ASC", "A":
		case "DESC", "D":
			q.sortDesc = true
		default:
			return badParam("sortBy", "sort order must be ASC or DESC, not "+strconv.Quote(dir))
		}
	}
	f, err := s.outputFormat(q.get("OUTPUTFORMAT"), q.version)
	if err != nil {
		return err
	}
	q.format = f
	return nil
}

func (s *Server) outputFormat(name, version string) (outFormat, *owsError) {
	def := map[string]outFormat{"2.0.0": fmtGML32, "1.1.0": fmtGML311, "1.0.0": fmtGML2}[version]
	if s.fl.name == FlavorMapServer && version != "2.0.0" {
		def = fmtGML2 // "By default MapServer serves GML2" (wfs_server.html)
	}
	n := strings.ToLower(strings.ReplaceAll(name, " ", ""))
	if n == "" {
		return def, nil
	}
	if s.json {
		for _, j := range s.fl.jsonFormats {
			if n == strings.ToLower(strings.ReplaceAll(j, " ", "")) {
				return fmtJSON, nil
			}
		}
	}
	var f outFormat
	switch n {
	case "application/gml+xml;version=3.2", "text/xml;subtype=gml/3.2", "text/xml;subtype=gml/3.2.1", "gml32":
		f = fmtGML32
	case "text/xml;subtype=gml/3.1.1", "gml3", "application/gml+xml;version=3.1":
		f = fmtGML311
	case "text/xml;subtype=gml/2.1.2", "gml2", "text/xml;subtype=gml/2":
		f = fmtGML2
	default:
		return 0, badParam("outputFormat", "Unsupported output format "+strconv.Quote(name))
	}
	if (version == "2.0.0") != (f == fmtGML32) {
		return 0, badParam("outputFormat", "Output format "+strconv.Quote(name)+" is not offered in WFS "+version)
	}
	return f, nil
}

// defaultCRS is the feature type's default CRS per version, as advertised.
func defaultCRS(version string) crs {
	if version == "1.0.0" {
		return crs{name: "http://www.opengis.net/gml/srs/epsg.xml#4326"}
	}
	return crs{name: "urn:ogc:def:crs:EPSG::4326", latLon: true}
}

func (s *Server) outputCRS(q *query) (crs, bool, *owsError) {
	name := q.get("SRSNAME")
	if name == "" {
		return defaultCRS(q.version), false, nil
	}
	c, ok := parseCRS(name)
	if !ok {
		return c, false, badParam("srsName", "Unsupported srsName "+strconv.Quote(name)+"; this server offers EPSG:4326 only")
	}
	return c, true, nil
}

// parseCRS recognises the names of WGS 84. URN and http URI forms of EPSG:4326
// mean latitude, longitude; "EPSG:4326", the GML2 srs URL and CRS84 mean
// longitude, latitude (the GeoServer convention docs/field-notes.md describes).
func parseCRS(name string) (crs, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	c := crs{name: name}
	switch {
	case n == "epsg:4326", n == "http://www.opengis.net/gml/srs/epsg.xml#4326",
		n == "urn:ogc:def:crs:ogc:1.3:crs84", n == "urn:ogc:def:crs:ogc::crs84",
		strings.HasSuffix(n, "//www.opengis.net/def/crs/ogc/1.3/crs84"):
		return c, true
	case strings.HasPrefix(n, "urn:ogc:def:crs:epsg:") || strings.HasPrefix(n, "urn:x-ogc:def:crs:epsg:"):
		c.latLon = true
		return c, strings.HasSuffix(n, ":4326")
	case strings.HasSuffix(n, "//www.opengis.net/def/crs/epsg/0/4326"):
		c.latLon = true
		return c, true
	}
	return c, false
}

// parseBBox reads minA,minB,maxA,maxB[,crs]. Without a CRS the feature
// type's default CRS applies: lat/lon in WFS 1.1 and 2.0, lon/lat in 1.0.
func (s *Server) parseBBox(v, version string) (orb.Bound, *owsError) {
	parts := strings.Split(v, ",")
	if len(parts) != 4 && len(parts) != 5 {
		return orb.Bound{}, badParam("bbox", "BBOX needs 4 numbers and an optional CRS, got "+strconv.Quote(v))
	}
	var f [4]float64
	for k := range 4 {
		x, err := strconv.ParseFloat(strings.TrimSpace(parts[k]), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return orb.Bound{}, badParam("bbox", "BBOX value "+strconv.Quote(parts[k])+" is not a number")
		}
		f[k] = x
	}
	c := defaultCRS(version)
	if len(parts) == 5 {
		var ok bool
		if c, ok = parseCRS(parts[4]); !ok {
			return orb.Bound{}, badParam("bbox", "Unsupported BBOX CRS "+strconv.Quote(parts[4]))
		}
	}
	if f[0] > f[2] || f[1] > f[3] {
		return orb.Bound{}, badParam("bbox", "BBOX minimum exceeds maximum: "+strconv.Quote(v))
	}
	if c.latLon {
		return orb.Bound{Min: orb.Point{f[1], f[0]}, Max: orb.Point{f[3], f[2]}}, nil
	}
	return orb.Bound{Min: orb.Point{f[0], f[1]}, Max: orb.Point{f[2], f[3]}}, nil
}

// XML request bodies and FILTER values are decoded by local name only.
type xmlGetFeature struct {
	XMLName      xml.Name
	Service      string     `xml:"service,attr"`
	Version      string     `xml:"version,attr"`
	Count        string     `xml:"count,attr"`
	MaxFeatures  string     `xml:"maxFeatures,attr"`
	StartIndex   string     `xml:"startIndex,attr"`
	ResultType   string     `xml:"resultType,attr"`
	OutputFormat string     `xml:"outputFormat,attr"`
	Queries      []xmlQuery `xml:"Query"`
}

type xmlQuery struct {
	TypeNames string     `xml:"typeNames,attr"`
	TypeName  string     `xml:"typeName,attr"`
	SrsName   string     `xml:"srsName,attr"`
	Filter    *xmlFilter `xml:"Filter"`
	SortBy    *struct {
		Props []struct {
			Ref   string `xml:"ValueReference"`
			Name  string `xml:"PropertyName"`
			Order string `xml:"SortOrder"`
		} `xml:"SortProperty"`
	} `xml:"SortBy"`
}

type xmlFilter struct {
	XMLName xml.Name
	BBOX    *struct {
		Envelope *struct {
			SrsName string `xml:"srsName,attr"`
			Lower   string `xml:"lowerCorner"`
			Upper   string `xml:"upperCorner"`
		} `xml:"Envelope"`
		Box *struct {
			SrsName     string `xml:"srsName,attr"`
			Coordinates string `xml:"coordinates"`
		} `xml:"Box"`
	} `xml:"BBOX"`
	ResourceIDs []struct {
		Rid string `xml:"rid,attr"`
	} `xml:"ResourceId"`
	FeatureIDs []struct {
		Fid string `xml:"fid,attr"`
	} `xml:"FeatureId"`
	And *xmlFilter `xml:"And"`
}

func parseXMLGetFeature(body []byte, p map[string]string) *owsError {
	var g xmlGetFeature
	if err := xml.Unmarshal(body, &g); err != nil {
		return &owsError{status: http.StatusBadRequest, code: "OperationParsingFailed", text: "parsing XML request: " + err.Error()}
	}
	if g.XMLName.Local != "GetFeature" {
		return &owsError{status: http.StatusNotImplemented, code: "OperationNotSupported", locator: g.XMLName.Local,
			text: "only GetFeature is accepted as XML; use KVP for " + g.XMLName.Local}
	}
	if len(g.Queries) != 1 {
		return badParam("Query", "exactly one wfs:Query is supported")
	}
	set := func(k, v string) {
		if v != "" {
			p[k] = v
		}
	}
	q := g.Queries[0]
	p["REQUEST"] = "GetFeature"
	set("SERVICE", g.Service)
	set("VERSION", g.Version)
	set("COUNT", cmpOr(g.Count, g.MaxFeatures))
	set("STARTINDEX", g.StartIndex)
	set("RESULTTYPE", g.ResultType)
	set("OUTPUTFORMAT", g.OutputFormat)
	set("TYPENAMES", cmpOr(q.TypeNames, q.TypeName))
	set("SRSNAME", q.SrsName)
	if q.SortBy != nil && len(q.SortBy.Props) > 0 {
		sp := q.SortBy.Props[0]
		set("SORTBY", strings.TrimSpace(cmpOr(sp.Ref, sp.Name))+" "+strings.TrimSpace(sp.Order))
	}
	if q.Filter != nil {
		return filterParams(q.Filter, p)
	}
	return nil
}

func parseKVPFilter(f string, p map[string]string) *owsError {
	var x xmlFilter
	if err := xml.Unmarshal([]byte(f), &x); err != nil {
		return badParam("filter", "parsing FILTER: "+err.Error())
	}
	return filterParams(&x, p)
}

// filterParams maps the filters this fixture understands (one BBOX, resource
// ids, or both under And) onto the equivalent KVP parameters.
func filterParams(f *xmlFilter, p map[string]string) *owsError {
	if f.And != nil {
		if err := filterParams(f.And, p); err != nil {
			return err
		}
	}
	if b := f.BBOX; b != nil {
		switch {
		case b.Envelope != nil:
			lo, hi := strings.Fields(b.Envelope.Lower), strings.Fields(b.Envelope.Upper)
			if len(lo) != 2 || len(hi) != 2 {
				return badParam("filter", "BBOX envelope needs two 2D corners")
			}
			p["BBOX"] = strings.Join([]string{lo[0], lo[1], hi[0], hi[1], cmpOr(b.Envelope.SrsName, "")}, ",")
		case b.Box != nil:
			pts := strings.Fields(b.Box.Coordinates)
			if len(pts) != 2 {
				return badParam("filter", "BBOX box needs two coordinates")
			}
			p["BBOX"] = pts[0] + "," + pts[1] + "," + cmpOr(b.Box.SrsName, "EPSG:4326")
		default:
			return badParam("filter", "BBOX needs a gml:Envelope or gml:Box")
		}
		p["BBOX"] = strings.TrimSuffix(p["BBOX"], ",")
	}
	var ids []string
	for _, r := range f.ResourceIDs {
		ids = append(ids, r.Rid)
	}
	for _, r := range f.FeatureIDs {
		ids = append(ids, r.Fid)
	}
	if len(ids) > 0 {
		p["RESOURCEID"] = strings.Join(ids, ",")
	}
	if f.BBOX == nil && len(ids) == 0 && f.And == nil {
		return badParam("filter", "this server understands BBOX and resource id filters only")
	}
	return nil
}

package wfs

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/internal/didyoumean"
	"github.com/geoflow/geoflow/spatial"
)

// node is a tiny DOM for the small XML documents of the protocol (capabilities, schemas);
// feature responses are never read this way.
type node struct {
	local    string
	attrs    []xml.Attr
	children []*node
	text     strings.Builder
}

func (n *node) attr(local string) string {
	for _, a := range n.attrs {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

// all returns every descendant with the given local name.
func (n *node) all(local string) []*node {
	var out []*node
	var walk func(*node)
	walk = func(x *node) {
		for _, c := range x.children {
			if c.local == local {
				out = append(out, c)
			}
			walk(c)
		}
	}
	walk(n)
	return out
}

func (n *node) child(local string) *node {
	for _, c := range n.children {
		if c.local == local {
			return c
		}
	}
	return nil
}

func (n *node) textOf(local string) string {
	if c := n.child(local); c != nil {
		return strings.TrimSpace(c.text.String())
	}
	return ""
}

// maxDocument bounds capabilities and schema documents; real ones are well below it.
const maxDocument = 32 << 20

// parseDOM reads an XML document. An exception report comes back as *spatial.ExceptionReport.
func parseDOM(r io.Reader) (*node, error) {
	d := xml.NewDecoder(io.LimitReader(r, maxDocument))
	d.Strict = false
	var stack []*node
	var root *node
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			if root == nil {
				return nil, &spatial.NotFeaturesError{Kind: "text", Snippet: "not XML: " + err.Error()}
			}
			return nil, fmt.Errorf("reading XML: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if root == nil && spatial.IsExceptionReportElement(t.Name.Local) {
				return nil, decodeException(d, t)
			}
			n := &node{local: t.Name.Local, attrs: t.Attr}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.children = append(p.children, n)
			} else if root == nil {
				root = n
			}
			stack = append(stack, n)
		case xml.EndElement:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text.Write(t)
			}
		}
	}
	if root == nil {
		return nil, &spatial.NotFeaturesError{Kind: "empty", Snippet: "empty document"}
	}
	if strings.EqualFold(root.local, "html") {
		return nil, &spatial.NotFeaturesError{Kind: "html", Snippet: "an HTML page"}
	}
	return root, nil
}

func decodeException(d *xml.Decoder, start xml.StartElement) error {
	rep, err := spatial.DecodeExceptionReport(d, start)
	if err != nil {
		return err
	}
	return rep
}

// Capabilities is what geoflow needs from GetCapabilities.
type Capabilities struct {
	Version string
	// Title is the service's title (ServiceIdentification, or Service in 1.0).
	Title             string
	OutputFormats     []string
	CountDefault      int  // 0 when not advertised
	ImplementsSorting bool // SORTBY honoured
	Hits              bool // RESULTTYPE=hits supported
	Paging            bool // STARTINDEX supported
	// NoStandardFilter says the server declares it cannot evaluate comparison and
	// logical filters (FES 2.0 ImplementsMinStandardFilter=false; for 1.x, filter
	// capabilities without logical operators): it would ignore a filter: and answer every
	// feature. False when it declares it can, or says nothing.
	NoStandardFilter bool
	FeatureTypes     []FeatureType
}

// FeatureType is one entry of the FeatureTypeList.
type FeatureType struct {
	Name       string // as advertised, with prefix
	Title      string
	DefaultCRS string
	OtherCRS   []string // OtherCRS (2.0) or OtherSRS (1.1)
	WGS84      *orb.Bound
}

// parseCapabilities reads a WFS_Capabilities document of any version.
func parseCapabilities(root *node) (*Capabilities, error) {
	if root.local != "WFS_Capabilities" {
		return nil, &spatial.NotFeaturesError{Kind: "xml", Snippet: fmt.Sprintf("expected WFS_Capabilities, got <%s>", root.local)}
	}
	c := &Capabilities{Version: root.attr("version")}
	if c.Version == "" {
		c.Version = "1.0.0"
	}
	for _, section := range []string{"ServiceIdentification", "Service"} {
		if n := root.child(section); n != nil && c.Title == "" {
			c.Title = n.textOf("Title")
		}
	}
	c.readGetFeature(root)
	c.readConstraints(root)
	if c.Version != "2.0.0" && !declaresLogicalOperators(root) {
		c.NoStandardFilter = true
	}
	switch c.Version {
	case "1.1.0":
		// 1.1 has no paging constraint; STARTINDEX is a common vendor extension.
		c.Hits = true
		c.Paging = true
	case "1.0.0":
		for _, rf := range root.all("ResultFormat") {
			for _, f := range rf.children {
				c.OutputFormats = append(c.OutputFormats, f.local)
			}
		}
		c.Paging = true // vendor STARTINDEX; a server that ignores it is caught by the repeat check
	case "2.0.0":
		c.Hits = true // mandatory in 2.0 (Basic conformance)
	}
	for _, ft := range root.all("FeatureType") {
		c.FeatureTypes = append(c.FeatureTypes, parseFeatureType(ft))
	}
	return c, nil
}

// readGetFeature takes the output formats and RESULTTYPE=hits from the parameters of the
// GetFeature operation.
func (c *Capabilities) readGetFeature(root *node) {
	for _, op := range root.all("Operation") {
		if op.attr("name") != "GetFeature" {
			continue
		}
		for _, p := range op.all("Parameter") {
			vals := values(p)
			switch strings.ToLower(p.attr("name")) {
			case "outputformat":
				c.OutputFormats = append(c.OutputFormats, vals...)
			case "resulttype":
				if slices.ContainsFunc(vals, func(v string) bool { return strings.EqualFold(v, "hits") }) {
					c.Hits = true
				}
			}
		}
	}
}

// readConstraints takes the page size, sorting, paging and filtering the server declares
// in its constraints. Of several page size constraints the smallest holds.
func (c *Capabilities) readConstraints(root *node) {
	for _, con := range root.all("Constraint") {
		val := strings.TrimSpace(con.textOf("DefaultValue"))
		if val == "" {
			if vs := values(con); len(vs) > 0 {
				val = vs[0]
			}
		}
		switch con.attr("name") {
		case "CountDefault", "DefaultMaxFeatures": // the latter is MapServer's, in 1.1
			if n, err := strconv.Atoi(val); err == nil && n > 0 && (c.CountDefault == 0 || n < c.CountDefault) {
				c.CountDefault = n
			}
		case "ImplementsSorting":
			c.ImplementsSorting = strings.EqualFold(val, "true")
		case "ImplementsResultPaging":
			c.Paging = strings.EqualFold(val, "true")
		case "ImplementsMinStandardFilter":
			c.NoStandardFilter = strings.EqualFold(val, "false")
		}
	}
}

// declaresLogicalOperators tells whether the (1.x) filter capabilities, where there are
// any, list logical operators; a document without filter capabilities says nothing
// against them.
func declaresLogicalOperators(root *node) bool {
	fc := root.all("Filter_Capabilities")
	return len(fc) == 0 || len(fc[0].all("Logical_Operators"))+len(fc[0].all("LogicalOperators")) > 0
}

// parseFeatureType reads one entry of the FeatureTypeList: its name, CRSs and WGS84
// extent (WGS84BoundingBox in 1.1 and 2.0, LatLongBoundingBox in 1.0), nil where it
// states none or one that does not parse.
func parseFeatureType(ft *node) FeatureType {
	f := FeatureType{Name: ft.textOf("Name"), Title: ft.textOf("Title")}
	f.DefaultCRS = firstNonEmpty(ft.textOf("DefaultCRS"), ft.textOf("DefaultSRS"), ft.textOf("SRS"))
	for _, o := range append(ft.all("OtherCRS"), ft.all("OtherSRS")...) {
		if s := strings.TrimSpace(o.text.String()); s != "" {
			f.OtherCRS = append(f.OtherCRS, s)
		}
	}
	if bb := ft.child("WGS84BoundingBox"); bb != nil {
		lo, hi := parsePair(bb.textOf("LowerCorner")), parsePair(bb.textOf("UpperCorner"))
		if lo != nil && hi != nil {
			f.WGS84 = &orb.Bound{Min: *lo, Max: *hi}
		}
	} else if bb := ft.child("LatLongBoundingBox"); bb != nil {
		f.WGS84 = latLongBoundingBox(bb)
	}
	return f
}

// latLongBoundingBox reads a WFS 1.0 LatLongBoundingBox; nil unless all four attributes
// are numbers.
func latLongBoundingBox(bb *node) *orb.Bound {
	var v [4]float64
	for i, a := range []string{"minx", "miny", "maxx", "maxy"} {
		x, err := strconv.ParseFloat(bb.attr(a), 64)
		if err != nil {
			return nil
		}
		v[i] = x
	}
	return &orb.Bound{Min: orb.Point{v[0], v[1]}, Max: orb.Point{v[2], v[3]}}
}

func values(n *node) []string {
	var out []string
	for _, v := range n.all("Value") {
		if s := strings.TrimSpace(v.text.String()); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func parsePair(s string) *orb.Point {
	f := strings.Fields(s)
	if len(f) < 2 {
		return nil
	}
	x, err1 := strconv.ParseFloat(f[0], 64)
	y, err2 := strconv.ParseFloat(f[1], 64)
	if err1 != nil || err2 != nil {
		return nil
	}
	return &orb.Point{x, y}
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// findType finds the advertised feature type matching name, with or without prefix.
func (c *Capabilities) findType(name string) (*FeatureType, error) {
	local := func(s string) string {
		if i := strings.LastIndexByte(s, ':'); i >= 0 {
			return s[i+1:]
		}
		return s
	}
	var byLocal []*FeatureType
	for i := range c.FeatureTypes {
		ft := &c.FeatureTypes[i]
		if ft.Name == name {
			return ft, nil
		}
		if local(ft.Name) == local(name) {
			byLocal = append(byLocal, ft)
		}
	}
	if len(byLocal) == 1 {
		return byLocal[0], nil
	}
	names := make([]string, 0, len(c.FeatureTypes))
	for _, ft := range c.FeatureTypes {
		names = append(names, ft.Name)
	}
	if len(byLocal) > 1 {
		return nil, fmt.Errorf("typename %q is ambiguous: give its prefix (%s)", name, strings.Join(names, ", "))
	}
	hint := ""
	if near := didyoumean.Nearest(name, names); near != "" {
		hint = fmt.Sprintf("; did you mean %q?", near)
	}
	if len(names) > 12 {
		names = append(names[:12], "...")
	}
	return nil, fmt.Errorf("the server has no feature type %q (it offers %s)%s", name, strings.Join(names, ", "), hint)
}

// Property is one non-geometry property of a feature type, from DescribeFeatureType.
type Property struct {
	Name    string
	XSDType string
}

// Schema is what DescribeFeatureType says of a feature type.
type Schema struct {
	Properties   []Property
	GeometryProp string
	// GeometryType is the geometry property's type without its PropertyType suffix
	// (MultiSurface, Point, Geometry).
	GeometryType string
}

// parseSchema reads the XSD of DescribeFeatureType for the feature type named typeName.
func parseSchema(root *node, typeName string) (*Schema, error) {
	if root.local != "schema" {
		return nil, fmt.Errorf("DescribeFeatureType answered <%s>, not an XML schema", root.local)
	}
	local := typeName
	if i := strings.LastIndexByte(local, ':'); i >= 0 {
		local = local[i+1:]
	}
	// The element for the type names its complexType; fall back to <local>Type or the
	// only complexType.
	typeRef := ""
	for _, el := range root.children {
		if el.local == "element" && el.attr("name") == local {
			typeRef = el.attr("type")
			if i := strings.LastIndexByte(typeRef, ':'); i >= 0 {
				typeRef = typeRef[i+1:]
			}
		}
	}
	var ct *node
	cts := root.all("complexType")
	for _, c := range cts {
		n := c.attr("name")
		if n != "" && (n == typeRef || n == local+"Type" || n == local+"_Type") {
			ct = c
			break
		}
	}
	if ct == nil && len(cts) == 1 {
		ct = cts[0]
	}
	if ct == nil {
		return nil, fmt.Errorf("DescribeFeatureType has no complexType for %q", typeName)
	}
	s := &Schema{}
	for _, el := range ct.all("element") {
		name := el.attr("name")
		if name == "" {
			continue
		}
		typ := el.attr("type")
		if typ == "" {
			// An inline simpleType with a restriction base.
			if r := el.all("restriction"); len(r) > 0 {
				typ = r[0].attr("base")
			}
		}
		lt := typ
		if i := strings.LastIndexByte(lt, ':'); i >= 0 {
			lt = lt[i+1:]
		}
		if strings.HasSuffix(lt, "PropertyType") && isGeometryType(lt) {
			if s.GeometryProp == "" {
				s.GeometryProp, s.GeometryType = name, strings.TrimSuffix(lt, "PropertyType")
			}
			continue
		}
		s.Properties = append(s.Properties, Property{Name: name, XSDType: lt})
	}
	if len(s.Properties) == 0 && s.GeometryProp == "" {
		return nil, errors.New("DescribeFeatureType lists no properties")
	}
	return s, nil
}

func isGeometryType(t string) bool {
	t = strings.TrimSuffix(t, "PropertyType")
	switch t {
	case "Geometry", "Point", "LineString", "Polygon", "MultiPoint", "MultiLineString", "MultiPolygon",
		"MultiSurface", "MultiCurve", "Surface", "Curve", "MultiGeometry", "GeometryCollection", "LinearRing", "Solid", "MultiSolid":
		return true
	}
	return false
}

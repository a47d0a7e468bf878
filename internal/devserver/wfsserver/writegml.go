// The GML GetFeature response: the collection element for GML 3.2, 3.1.1
// and 2, and each feature with its polygon or multi-surface geometry.

package wfsserver

import "strconv"

func (fw *featureWriter) schemaLocation(wfsNS, wfsXSD, gmlNS, gmlXSD string) []byte {
	s := fw.s
	dft := "?service=WFS&version=" + fw.q.version + "&request=DescribeFeatureType&typeName=" + s.TypeName()
	b := append(fw.b, ` xsi:schemaLocation="`...)
	b = append(b, s.ns...)
	b = append(b, ' ')
	b = appendEscaped(b, fw.baseURL+dft)
	b = append(b, ' ')
	b = append(b, wfsNS+" "+wfsXSD...)
	if gmlNS != "" {
		b = append(b, " "+gmlNS+" "+gmlXSD...)
	}
	return append(b, '"')
}

func (fw *featureWriter) writeGML() {
	s, q := fw.s, fw.q
	b := append(fw.b, xmlHeader...)
	ns := ` xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:` + s.prefix + `="` + s.ns + `"`
	stamp := s.opts.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	switch q.format {
	case fmtGML32:
		b = append(b, `<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs/2.0" xmlns:gml="http://www.opengis.net/gml/3.2"`...)
		b = append(b, ns...)
		m, _ := fw.matchedText()
		b = append(b, ` numberMatched="`+m+`" numberReturned="`...)
		b = appendInt(b, len(fw.ids))
		b = append(b, `" timeStamp="`+stamp+`"`...)
		if fw.next != "" {
			b = append(b, ` next="`...)
			b = appendEscaped(b, fw.next)
			b = append(b, '"')
		}
		if fw.previous != "" {
			b = append(b, ` previous="`...)
			b = appendEscaped(b, fw.previous)
			b = append(b, '"')
		}
		fw.b = b
		b = fw.schemaLocation("http://www.opengis.net/wfs/2.0", "http://schemas.opengis.net/wfs/2.0/wfs.xsd",
			"http://www.opengis.net/gml/3.2", "http://schemas.opengis.net/gml/3.2.1/gml.xsd")
	case fmtGML311:
		b = append(b, `<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs" xmlns:gml="http://www.opengis.net/gml"`...)
		b = append(b, ns...)
		b = append(b, ` numberOfFeatures="`...)
		if q.hits {
			b = appendInt(b, fw.total)
		} else {
			b = appendInt(b, len(fw.ids))
		}
		b = append(b, `" timeStamp="`+stamp+`"`...)
		fw.b = b
		b = fw.schemaLocation("http://www.opengis.net/wfs", "http://schemas.opengis.net/wfs/1.1.0/wfs.xsd", "", "")
	default:
		b = append(b, `<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs" xmlns:gml="http://www.opengis.net/gml"`...)
		b = append(b, ns...)
		fw.b = b
		b = fw.schemaLocation("http://www.opengis.net/wfs", "http://schemas.opengis.net/wfs/1.0.0/WFS-basic.xsd", "", "")
	}
	if q.hits {
		fw.b = append(b, "/>\n"...)
		fw.emit()
		return
	}
	b = append(b, ">\n"...)
	if q.format == fmtGML2 {
		// GeoServer's GML2 collections bound themselves with gml:null rather
		// than computing an envelope before streaming.
		b = append(b, "<gml:boundedBy><gml:null>unknown</gml:null></gml:boundedBy>\n"...)
	}
	members := q.format == fmtGML311 && !s.fl.featureMemberEach && len(fw.ids) > 0
	if members {
		b = append(b, "<gml:featureMembers>\n"...)
	}
	fw.b = b
	fw.emit()
	for k, i := range fw.ids {
		fw.gmlFeature(i, !members)
		fw.afterFeature(k)
	}
	if members {
		fw.b = append(fw.b, "</gml:featureMembers>\n"...)
	}
	if fw.truncate {
		fw.abort()
	}
	fw.b = append(fw.b, "</wfs:FeatureCollection>\n"...)
	fw.emit()
}

func (fw *featureWriter) gmlRing(b []byte, ring int) []byte {
	r := fw.sh.rings[ring]
	if fw.q.format == fmtGML2 {
		b = append(b, `<gml:LinearRing><gml:coordinates decimal="." cs="," ts=" ">`...)
		for j, p := range r {
			if j > 0 {
				b = append(b, ' ')
			}
			b = fw.appendCoord(b, p, ',')
		}
		return append(b, "</gml:coordinates></gml:LinearRing>"...)
	}
	b = append(b, `<gml:LinearRing><gml:posList srsDimension="2">`...)
	for j, p := range r {
		if j > 0 {
			b = append(b, ' ')
		}
		b = fw.appendCoord(b, p, ' ')
	}
	return append(b, "</gml:posList></gml:LinearRing>"...)
}

// gmlPolygon writes rings [first, last) as one polygon; id is its gml:id
// suffix (GML 3.2 requires ids on geometries) and srs is set only at the top.
func (fw *featureWriter) gmlPolygon(b []byte, first, last int, id string, srs bool) []byte {
	b = append(b, "<gml:Polygon"...)
	if fw.q.format == fmtGML32 {
		b = append(b, ` gml:id="`...)
		b = append(b, fw.gid...)
		b = append(b, id...)
		b = append(b, '"')
	}
	if srs {
		b = fw.srsAttr(b)
	}
	b = append(b, '>')
	for k := first; k < last; k++ {
		switch {
		case fw.q.format == fmtGML2 && k == first:
			b = fw.gmlRing(append(b, "<gml:outerBoundaryIs>"...), k)
			b = append(b, "</gml:outerBoundaryIs>"...)
		case fw.q.format == fmtGML2:
			b = fw.gmlRing(append(b, "<gml:innerBoundaryIs>"...), k)
			b = append(b, "</gml:innerBoundaryIs>"...)
		case k == first:
			b = fw.gmlRing(append(b, "<gml:exterior>"...), k)
			b = append(b, "</gml:exterior>"...)
		default:
			b = fw.gmlRing(append(b, "<gml:interior>"...), k)
			b = append(b, "</gml:interior>"...)
		}
	}
	return append(b, "</gml:Polygon>"...)
}

func (fw *featureWriter) srsAttr(b []byte) []byte {
	b = append(b, ` srsName="`...)
	b = appendEscaped(b, fw.q.srs.name)
	b = append(b, '"')
	if fw.q.format != fmtGML2 {
		b = append(b, ` srsDimension="2"`...)
	}
	return b
}

func (fw *featureWriter) gmlFeature(i int, member bool) {
	s := fw.s
	g := &s.grid
	e := fw.v.edit(i)
	g.shape(i, e, &fw.sh)
	a := g.attrs(i, e, &fw.sh)
	fw.gid = appendInt(append(append(fw.gid[:0], s.local...), '.'), i)
	b := fw.b
	if member {
		if fw.q.format == fmtGML32 {
			b = append(b, "<wfs:member>\n"...)
		} else {
			b = append(b, "<gml:featureMember>\n"...)
		}
	}
	p := s.prefix
	b = append(b, '<')
	b = append(b, p...)
	b = append(b, ':')
	b = append(b, s.local...)
	if fw.q.format == fmtGML2 {
		b = append(b, ` fid="`...)
	} else {
		b = append(b, ` gml:id="`...)
	}
	b = append(b, fw.gid...)
	b = append(b, "\">\n<"...)
	b = append(b, p+":"+geometryName+">"...)
	sh := &fw.sh
	switch {
	case sh.multi && fw.q.format == fmtGML2:
		b = fw.srsAttr(append(b, "<gml:MultiPolygon"...))
		b = append(b, '>')
		for k := range sh.nrings {
			b = append(b, "<gml:polygonMember>"...)
			b = fw.gmlPolygon(b, k, k+1, "", false)
			b = append(b, "</gml:polygonMember>"...)
		}
		b = append(b, "</gml:MultiPolygon>"...)
	case sh.multi:
		b = append(b, "<gml:MultiSurface"...)
		if fw.q.format == fmtGML32 {
			b = append(b, ` gml:id="`...)
			b = append(b, fw.gid...)
			b = append(b, `.geom"`...)
		}
		b = fw.srsAttr(b)
		b = append(b, '>')
		for k := range sh.nrings {
			b = append(b, "<gml:surfaceMember>"...)
			b = fw.gmlPolygon(b, k, k+1, ".geom."+strconv.Itoa(k), false)
			b = append(b, "</gml:surfaceMember>"...)
		}
		b = append(b, "</gml:MultiSurface>"...)
	default:
		b = fw.gmlPolygon(b, 0, sh.nrings, ".geom", true)
	}
	b = append(b, "</"+p+":"+geometryName+">\n"...)
	for k, at := range schemaAttrs {
		b = append(b, '<')
		b = append(b, p...)
		b = append(b, ':')
		b = append(b, at.Name...)
		mark := len(b)
		var ok bool
		b = append(b, '>')
		start := len(b)
		b, ok = a.appendValue(b, k)
		if !ok {
			b = append(b[:mark], ` xsi:nil="true"/>`+"\n"...)
			continue
		}
		if at.XSDType == "string" {
			v := string(b[start:])
			b = appendEscaped(b[:start], v)
		}
		b = append(b, "</"...)
		b = append(b, p...)
		b = append(b, ':')
		b = append(b, at.Name...)
		b = append(b, ">\n"...)
	}
	b = append(b, "</"...)
	b = append(b, p...)
	b = append(b, ':')
	b = append(b, s.local...)
	b = append(b, ">\n"...)
	if member {
		if fw.q.format == fmtGML32 {
			b = append(b, "</wfs:member>\n"...)
		} else {
			b = append(b, "</gml:featureMember>\n"...)
		}
	}
	fw.b = b
}

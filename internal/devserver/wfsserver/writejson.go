// The GeoJSON GetFeature response: the FeatureCollection with its counts,
// links and crs in the flavor's order, and each feature.

package wfsserver

func (fw *featureWriter) writeJSON() {
	s, q := fw.s, fw.q
	// GeoServer answers a URN srsName with lat/lon GeoJSON; everyone else
	// keeps RFC 7946 lon/lat.
	latLon := q.srsGiven && q.srs.latLon && s.fl.geojsonFollowsSRS || q.ogcapiLatLon
	fw.q.srs.latLon = latLon
	if q.ogcapiItem && len(fw.ids) == 1 {
		// items/{featureId}: the Feature itself, as OGC API - Features Part 1 says.
		fw.jsonFeature(fw.ids[0])
		fw.b = append(fw.b, '\n')
		fw.emit()
		return
	}
	b := append(fw.b, `{"type":"FeatureCollection"`...)
	counts := func(b []byte) []byte {
		m, known := fw.matchedText()
		if s.fl.geojsonCountsLast {
			b = append(b, `,"totalFeatures":`...)
			if known {
				b = append(b, m...)
			} else {
				b = append(b, `"unknown"`...)
			}
		}
		if known {
			b = append(b, `,"numberMatched":`...)
			b = append(b, m...)
		}
		b = append(b, `,"numberReturned":`...)
		b = appendInt(b, len(fw.ids))
		b = append(b, `,"timeStamp":"`...)
		b = s.opts.Now().UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z")
		return append(b, '"')
	}
	if !s.fl.geojsonCountsLast {
		b = counts(b)
	}
	b = append(b, `,"features":[`...)
	fw.b = b
	fw.emit()
	for k, i := range fw.ids {
		if k > 0 {
			fw.b = append(fw.b, ',')
		}
		fw.jsonFeature(i)
		fw.afterFeature(k)
	}
	if fw.truncate {
		fw.abort()
	}
	b = append(fw.b, ']')
	if s.fl.geojsonCountsLast {
		b = counts(b)
	}
	if fw.next != "" || fw.previous != "" {
		b = append(b, `,"links":[`...)
		if fw.next != "" {
			b = append(b, `{"rel":"next","type":"application/json","href":`...)
			b = appendJSONString(b, fw.next)
			b = append(b, '}')
		}
		if fw.previous != "" {
			if fw.next != "" {
				b = append(b, ',')
			}
			b = append(b, `{"rel":"previous","type":"application/json","href":`...)
			b = appendJSONString(b, fw.previous)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if latLon && !q.ogcapi {
		b = append(b, `,"crs":{"type":"name","properties":{"name":`...)
		b = appendJSONString(b, q.srs.name)
		b = append(b, "}}"...)
	}
	fw.b = append(b, "}\n"...)
	fw.emit()
}

func (fw *featureWriter) jsonRing(b []byte, ring int) []byte {
	b = append(b, '[')
	for j, p := range fw.sh.rings[ring] {
		if j > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = fw.appendCoord(b, p, ',')
		b = append(b, ']')
	}
	return append(b, ']')
}

func (fw *featureWriter) jsonFeature(i int) {
	s := fw.s
	g := &s.grid
	e := fw.v.edit(i)
	g.shape(i, e, &fw.sh)
	a := g.attrs(i, e, &fw.sh)
	sh := &fw.sh
	b := append(fw.b, `{"type":"Feature","id":"`...)
	b = append(b, s.local...)
	b = append(b, '.')
	b = appendInt(b, i)
	if sh.multi {
		b = append(b, `","geometry":{"type":"MultiPolygon","coordinates":[`...)
		for k := range sh.nrings {
			if k > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			b = fw.jsonRing(b, k)
			b = append(b, ']')
		}
	} else {
		b = append(b, `","geometry":{"type":"Polygon","coordinates":[`...)
		for k := range sh.nrings {
			if k > 0 {
				b = append(b, ',')
			}
			b = fw.jsonRing(b, k)
		}
	}
	b = append(b, `]},"geometry_name":"`+geometryName+`","properties":{`...)
	for k, at := range schemaAttrs {
		if k > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, at.Name)
		b = append(b, ':')
		mark := len(b)
		var ok bool
		b, ok = a.appendValue(b, k)
		switch {
		case !ok:
			b = append(b[:mark], "null"...)
		case jsonQuoted(at.XSDType):
			v := string(b[mark:])
			b = appendJSONString(b[:mark], v)
		}
	}
	fw.b = append(b, "}}"...)
}

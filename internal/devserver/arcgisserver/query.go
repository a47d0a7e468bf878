package arcgisserver

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/paulmach/orb"
)

func (s *Server) serveQuery(w http.ResponseWriter, r *http.Request) {
	q := r.Form
	f := q.Get("f")
	switch f {
	case "json", "pjson":
	case "geojson":
		if s.opts.NoGeoJSON {
			s.fail(w, 400, "Invalid or missing input parameters: f=geojson is not supported")
			return
		}
	default:
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body><h1>Query: Parcels (ID: 0)</h1><form></form></body></html>")
		return
	}
	if where := strings.TrimSpace(q.Get("where")); where != "" && where != "1=1" {
		s.fail(w, 400, "Unable to complete operation: the sample answers where=1=1 only")
		return
	}
	if sr := q.Get("inSR"); sr != "" && sr != "4326" && !strings.Contains(sr, `"wkid":4326`) {
		s.fail(w, 400, "Invalid or missing input parameters: inSR "+sr+" is not supported by the sample")
		return
	}
	if sr := q.Get("outSR"); sr != "" && sr != "4326" && !strings.Contains(sr, `"wkid":4326`) {
		s.fail(w, 400, "Invalid or missing input parameters: outSR "+sr+" is not supported by the sample")
		return
	}
	var ids []int
	// A revision switched during the query may show in its answer: the sample does not
	// hold one snapshot from the id list to the last feature.
	if g := strings.TrimSpace(q.Get("geometry")); g != "" {
		if t := q.Get("geometryType"); t != "" && t != "esriGeometryEnvelope" {
			s.fail(w, 400, "Invalid or missing input parameters: geometryType "+t)
			return
		}
		b, ok := envelope(g)
		if !ok {
			s.fail(w, 400, "Invalid or missing input parameters: geometry "+g)
			return
		}
		ids = s.ObjectIDsIn(b)
	} else {
		ids = s.ObjectIDs()
	}
	if s.Empty() {
		ids = []int{}
	}
	if list := strings.TrimSpace(q.Get("objectIds")); list != "" {
		want := map[int]bool{}
		for _, p := range strings.Split(list, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil {
				s.fail(w, 400, "Invalid or missing input parameters: objectIds "+p)
				return
			}
			if fi := s.opts.Faults.FailIDs; fi != nil && fi(n) {
				s.faults.Add(1)
				s.fail(w, 500, "Unable to complete operation.")
				return
			}
			want[n] = true
		}
		if q.Get("geometry") == "" && !s.Empty() {
			// Asked by id alone: every id the data holds, hidden from listings or not
			// (wfsserver.Changes.Hidden).
			ids = ids[:0]
			for id := range want {
				if s.Exists(id) {
					ids = append(ids, id)
				}
			}
			slices.Sort(ids)
		} else {
			ids = slices.DeleteFunc(ids, func(id int) bool { return !want[id] })
		}
	}
	idsOnly, countOnly := q.Get("returnIdsOnly") == "true", q.Get("returnCountOnly") == "true"
	switch {
	case countOnly:
		s.countQueries.Add(1)
	case idsOnly:
		s.idQueries.Add(1)
	default:
		s.featureQueries.Add(1)
	}
	fault := s.draw(countOnly)
	switch fault {
	case fault5xx:
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "<html><head><title>503 Service Unavailable</title></head><body>The server is temporarily unable to service your request.</body></html>")
		return
	case faultError200:
		s.fail(w, 500, "Unable to complete operation.")
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if countOnly {
		io.WriteString(w, `{"count":`+strconv.Itoa(len(ids))+`}`)
		return
	}
	if idsOnly {
		exceeded := false
		if m := s.opts.MaxIDs; m > 0 && len(ids) > m {
			ids, exceeded = ids[:m], true
		}
		b, _ := json.Marshal(map[string]any{"objectIdFieldName": "OBJECTID", "objectIds": ids})
		if exceeded {
			b = append(b[:len(b)-1], `,"exceededTransferLimit":true}`...)
		}
		w.Write(b)
		return
	}
	offset, _ := strconv.Atoi(q.Get("resultOffset"))
	if q.Has("resultOffset") && q.Get("orderByFields") == "" {
		// No order asked for: the rows come as the database scans them, differently each time.
		seed := s.seq.Add(1)
		slices.SortFunc(ids, func(a, b int) int {
			return int(mix(uint64(a)^seed*0x9e3779b97f4a7c15)>>1) - int(mix(uint64(b)^seed*0x9e3779b97f4a7c15)>>1)
		})
	}
	ids = ids[min(offset, len(ids)):]
	limit := s.opts.MaxRecordCount
	if n, err := strconv.Atoi(q.Get("resultRecordCount")); err == nil && n > 0 {
		limit = min(limit, n)
	}
	exceeded := len(ids) > limit || s.opts.AlwaysExceeded
	ids = ids[:min(limit, len(ids))]
	if v := s.opts.Vanished; v != nil {
		ids = slices.DeleteFunc(slices.Clone(ids), v)
	}
	out := strings.Split(q.Get("outFields"), ",")
	withGeom := q.Get("returnGeometry") != "false"
	s.write(w, f == "geojson", ids, out, withGeom, exceeded, fault == faultTruncate)
}

// envelope reads "xmin,ymin,xmax,ymax" or {"xmin":..,"ymin":..,"xmax":..,"ymax":..}.
func envelope(g string) (orb.Bound, bool) {
	if strings.HasPrefix(g, "{") {
		var e struct{ XMin, YMin, XMax, YMax *float64 }
		if json.Unmarshal([]byte(g), &e) != nil || e.XMin == nil || e.YMin == nil || e.XMax == nil || e.YMax == nil {
			return orb.Bound{}, false
		}
		return orb.Bound{Min: orb.Point{*e.XMin, *e.YMin}, Max: orb.Point{*e.XMax, *e.YMax}}, true
	}
	p := strings.Split(g, ",")
	if len(p) != 4 {
		return orb.Bound{}, false
	}
	var v [4]float64
	for i := range p {
		x, err := strconv.ParseFloat(strings.TrimSpace(p[i]), 64)
		if err != nil {
			return orb.Bound{}, false
		}
		v[i] = x
	}
	return orb.Bound{Min: orb.Point{v[0], v[1]}, Max: orb.Point{v[2], v[3]}}, true
}

const (
	faultNone = iota
	fault5xx
	faultError200
	faultTruncate
)

// draw picks the fault of one query (counts are spared, as the WFS sample spares hits).
func (s *Server) draw(count bool) int {
	f := s.opts.Faults
	if count || f.Rate5xx+f.RateError200+f.RateTruncate == 0 {
		return faultNone
	}
	s.mu.Lock()
	x := s.rnd.Float64()
	s.mu.Unlock()
	switch {
	case x < f.Rate5xx:
		s.faults.Add(1)
		return fault5xx
	case x < f.Rate5xx+f.RateError200:
		s.faults.Add(1)
		return faultError200
	case x < f.Rate5xx+f.RateError200+f.RateTruncate:
		s.faults.Add(1)
		return faultTruncate
	}
	return faultNone
}

func mix(a uint64) uint64 {
	a ^= a >> 33
	a *= 0xff51afd7ed558ccd
	a ^= a >> 33
	a *= 0xc4ceb9fe1a85ec53
	return a ^ a>>33
}

// write streams the features of ids, Esri JSON or GeoJSON.
func (s *Server) write(w http.ResponseWriter, geojson bool, ids []int, outFields []string, withGeom, exceeded, truncate bool) {
	all := slices.Contains(outFields, "*")
	fl, _ := w.(http.Flusher)
	var b []byte
	if geojson {
		b = append(b, `{"type":"FeatureCollection","features":[`...)
	} else {
		b = append(b, `{"objectIdFieldName":"OBJECTID","globalIdFieldName":"","geometryType":"esriGeometryPolygon","spatialReference":{"wkid":4326,"latestWkid":4326},"fields":`...)
		fb, _ := json.Marshal(fields)
		b = append(b, fb...)
		b = append(b, `,"features":[`...)
	}
	for k, id := range ids {
		if truncate && k == len(ids)/2 {
			w.Header().Set("Content-Length", strconv.Itoa(len(b)+4096))
			w.Write(b)
			if fl != nil {
				fl.Flush()
			}
			panic(http.ErrAbortHandler)
		}
		if k > 0 {
			b = append(b, ',')
		}
		attrs := s.Attributes(id - 1)
		if !all {
			for name := range attrs {
				if name != "OBJECTID" && !slices.Contains(outFields, name) {
					delete(attrs, name)
				}
			}
		}
		ab, _ := json.Marshal(attrs)
		g := s.parcels.Feature(id - 1).Geometry
		if geojson {
			b = append(b, `{"type":"Feature","id":`...)
			b = strconv.AppendInt(b, int64(id), 10)
			b = append(b, `,"properties":`...)
			b = append(b, ab...)
			b = append(b, `,"geometry":`...)
			if withGeom {
				gb, _ := json.Marshal(map[string]any{"type": g.GeoJSONType(), "coordinates": coords(g)})
				b = append(b, gb...)
			} else {
				b = append(b, "null"...)
			}
			b = append(b, '}')
		} else {
			b = append(b, `{"attributes":`...)
			b = append(b, ab...)
			if withGeom {
				b = append(b, `,"geometry":{"rings":`...)
				rb, _ := json.Marshal(esriRings(g))
				b = append(b, rb...)
				b = append(b, '}')
			}
			b = append(b, '}')
		}
		s.served.Add(1)
		if len(b) > 32<<10 {
			w.Write(b)
			b = b[:0]
		}
	}
	b = append(b, ']')
	if exceeded {
		if geojson {
			b = append(b, `,"properties":{"exceededTransferLimit":true}`...)
		} else {
			b = append(b, `,"exceededTransferLimit":true`...)
		}
	}
	b = append(b, "}\n"...)
	w.Write(b)
}

// coords is g's GeoJSON coordinates.
func coords(g orb.Geometry) any {
	switch v := g.(type) {
	case orb.Polygon:
		return ringsOf(v)
	case orb.MultiPolygon:
		out := make([][][][2]float64, len(v))
		for i, p := range v {
			out[i] = ringsOf(p)
		}
		return out
	}
	return nil
}

func ringsOf(p orb.Polygon) [][][2]float64 {
	out := make([][][2]float64, len(p))
	for i, r := range p {
		for _, pt := range r {
			out[i] = append(out[i], [2]float64{pt[0], pt[1]})
		}
	}
	return out
}

// esriRings is g's rings as Esri JSON lists them: one flat list, exteriors clockwise,
// holes counter-clockwise (the sample's polygons wind the other way round, as GeoJSON).
func esriRings(g orb.Geometry) [][][2]float64 {
	var polys []orb.Polygon
	switch v := g.(type) {
	case orb.Polygon:
		polys = []orb.Polygon{v}
	case orb.MultiPolygon:
		polys = v
	}
	var out [][][2]float64
	for _, p := range polys {
		for _, r := range p {
			ring := make([][2]float64, 0, len(r))
			for i := len(r) - 1; i >= 0; i-- {
				ring = append(ring, [2]float64{r[i][0], r[i][1]})
			}
			out = append(out, ring)
		}
	}
	return out
}

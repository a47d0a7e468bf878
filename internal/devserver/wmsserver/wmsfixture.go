// Package wmsfixture is a WMS for tests: GetCapabilities (1.3.0 and 1.1.1) advertising
// MaxWidth/MaxHeight and each layer's title, CRSs and extent (EX_GeographicBoundingBox in
// 1.3.0, LatLonBoundingBox in 1.1.1, as MapServer and GeoServer write them), and GetMap rendering PNG, JPEG or GeoTIFF chips, the way MapServer
// and GeoServer do: a GetMap larger than MaxWidth/MaxHeight, an unknown layer or an
// unoffered format is answered with a ServiceExceptionReport (with HTTP 200 and
// application/vnd.ogc.se_xml, as MapServer does), never an image; BBOX is latitude first
// for EPSG:4326 in 1.3.0 and x,y otherwise.
package wmsserver

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/paulmach/orb"
)

// Options configure a Server. Zero values mean the defaults noted.
type Options struct {
	// MaxWidth and MaxHeight are advertised and enforced. Default 512.
	MaxWidth, MaxHeight int
	// GeoTIFF offers image/geotiff besides image/png and image/jpeg.
	GeoTIFF bool
	// Layers are the layer names. Defaults to ["ortho"].
	Layers []string
	// Extent is the lon/lat extent every layer advertises. Defaults to 11.3..11.8E,
	// 47.9..48.3N (Munich, where the sample flows look).
	Extent orb.Bound
}

// GetMap is one GetMap request the server answered with an image.
type GetMap struct {
	Version, CRS, Format string
	BBox                 [4]float64 // as sent, in the CRS's axis order
	Width, Height        int
}

// Stats counts what the server saw.
type Stats struct {
	Capabilities, Exceptions int64
	GetMaps                  []GetMap
}

// Server is a WMS; it implements http.Handler and is safe for concurrent use.
type Server struct {
	o  Options
	mu sync.Mutex
	st Stats
}

// New returns a Server.
func New(o Options) *Server {
	if o.MaxWidth == 0 {
		o.MaxWidth = 512
	}
	if o.MaxHeight == 0 {
		o.MaxHeight = 512
	}
	if len(o.Layers) == 0 {
		o.Layers = []string{"ortho"}
	}
	if o.Extent == (orb.Bound{}) {
		o.Extent = orb.Bound{Min: orb.Point{11.3, 47.9}, Max: orb.Point{11.8, 48.3}}
	}
	return &Server{o: o}
}

// Stats returns a copy of the counts.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.GetMaps = append([]GetMap(nil), s.st.GetMaps...)
	return st
}

func (s *Server) formats() []string {
	f := []string{"image/png", "image/jpeg"}
	if s.o.GeoTIFF {
		f = append(f, "image/geotiff")
	}
	return f
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := map[string]string{}
	for k, v := range r.URL.Query() {
		q[strings.ToUpper(k)] = v[0]
	}
	switch strings.ToLower(q["REQUEST"]) {
	case "getcapabilities":
		s.mu.Lock()
		s.st.Capabilities++
		s.mu.Unlock()
		s.capabilities(w, q["VERSION"])
	case "getmap":
		s.getMap(w, q)
	default:
		s.exception(w, "OperationNotSupported", "unknown REQUEST "+q["REQUEST"])
	}
}

func (s *Server) capabilities(w http.ResponseWriter, version string) {
	var layers strings.Builder
	e := s.o.Extent
	for _, l := range s.o.Layers {
		if version == "1.1.1" {
			fmt.Fprintf(&layers, "<Layer queryable=\"0\"><Name>%s</Name><Title>%s</Title>"+
				"<LatLonBoundingBox minx=\"%g\" miny=\"%g\" maxx=\"%g\" maxy=\"%g\"/></Layer>",
				l, l, e.Min[0], e.Min[1], e.Max[0], e.Max[1])
			continue
		}
		fmt.Fprintf(&layers, "<Layer queryable=\"0\"><Name>%s</Name><Title>%s</Title>"+
			"<EX_GeographicBoundingBox><westBoundLongitude>%g</westBoundLongitude><eastBoundLongitude>%g</eastBoundLongitude>"+
			"<southBoundLatitude>%g</southBoundLatitude><northBoundLatitude>%g</northBoundLatitude></EX_GeographicBoundingBox>"+
			"<BoundingBox CRS=\"EPSG:4326\" minx=\"%g\" miny=\"%g\" maxx=\"%g\" maxy=\"%g\"/></Layer>",
			l, l, e.Min[0], e.Max[0], e.Min[1], e.Max[1], e.Min[1], e.Min[0], e.Max[1], e.Max[0])
	}
	var formats strings.Builder
	for _, f := range s.formats() {
		fmt.Fprintf(&formats, "<Format>%s</Format>", f)
	}
	if version == "1.1.1" {
		w.Header().Set("Content-Type", "application/vnd.ogc.wms_xml")
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<WMT_MS_Capabilities version="1.1.1"><Service><Name>OGC:WMS</Name><Title>fixture</Title></Service>
<Capability><Request><GetMap>%s</GetMap></Request><Layer><Title>root</Title><SRS>EPSG:3857</SRS><SRS>EPSG:4326</SRS>%s</Layer></Capability></WMT_MS_Capabilities>`,
			formats.String(), layers.String())
		return
	}
	w.Header().Set("Content-Type", "text/xml; charset=UTF-8")
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<WMS_Capabilities version="1.3.0" xmlns="http://www.opengis.net/wms" xmlns:xlink="http://www.w3.org/1999/xlink">
<Service><Name>WMS</Name><Title>fixture</Title><MaxWidth>%d</MaxWidth><MaxHeight>%d</MaxHeight></Service>
<Capability><Request><GetCapabilities><Format>text/xml</Format></GetCapabilities><GetMap>%s</GetMap></Request>
<Exception><Format>XML</Format></Exception>
<Layer><Title>root</Title><CRS>EPSG:3857</CRS><CRS>EPSG:4326</CRS>%s</Layer></Capability></WMS_Capabilities>`,
		s.o.MaxWidth, s.o.MaxHeight, formats.String(), layers.String())
}

func (s *Server) exception(w http.ResponseWriter, code, text string) {
	s.mu.Lock()
	s.st.Exceptions++
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/vnd.ogc.se_xml")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<ServiceExceptionReport version="1.3.0" xmlns="http://www.opengis.net/ogc"><ServiceException code="%s">%s</ServiceException></ServiceExceptionReport>`, code, text)
}

func (s *Server) getMap(w http.ResponseWriter, q map[string]string) {
	version := q["VERSION"]
	crs := q["CRS"]
	if version == "1.1.1" {
		crs = q["SRS"]
	}
	for _, l := range strings.Split(q["LAYERS"], ",") {
		found := false
		for _, have := range s.o.Layers {
			found = found || have == l
		}
		if !found {
			s.exception(w, "LayerNotDefined", fmt.Sprintf("msWMSLoadGetMapParams(): WMS server error. Invalid layer(s) given in the LAYERS parameter. A layer might be disabled for this request. Check wms/ows_enable_request settings. (%s)", l))
			return
		}
	}
	wd, err1 := strconv.Atoi(q["WIDTH"])
	ht, err2 := strconv.Atoi(q["HEIGHT"])
	if err1 != nil || err2 != nil || wd < 1 || ht < 1 || wd > s.o.MaxWidth || ht > s.o.MaxHeight {
		s.exception(w, "InvalidParameterValue", fmt.Sprintf("msWMSLoadGetMapParams(): WMS server error. Image size out of range, WIDTH and HEIGHT must be between 1 and %d pixels.", s.o.MaxWidth))
		return
	}
	var bb [4]float64
	parts := strings.Split(q["BBOX"], ",")
	if len(parts) != 4 {
		s.exception(w, "InvalidParameterValue", "BBOX needs four values")
		return
	}
	for i, p := range parts {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil {
			s.exception(w, "InvalidParameterValue", "BBOX: "+p)
			return
		}
		bb[i] = v
	}
	format := q["FORMAT"]
	offered := false
	for _, f := range s.formats() {
		offered = offered || strings.EqualFold(f, format)
	}
	if !offered {
		s.exception(w, "InvalidFormat", "unsupported image format "+format)
		return
	}
	s.mu.Lock()
	s.st.GetMaps = append(s.st.GetMaps, GetMap{Version: version, CRS: crs, Format: format, BBox: bb, Width: wd, Height: ht})
	s.mu.Unlock()
	img := image.NewGray(image.Rect(0, 0, wd, ht))
	for y := 0; y < ht; y++ {
		for x := 0; x < wd; x++ {
			img.SetGray(x, y, color.Gray{uint8((x ^ y) + int(math.Abs(bb[0]))%7)})
		}
	}
	var buf bytes.Buffer
	switch strings.ToLower(format) {
	case "image/png":
		_ = png.Encode(&buf, img)
	case "image/jpeg":
		_ = jpeg.Encode(&buf, img, nil)
	case "image/geotiff":
		epsg := 3857
		x0, y0, x1, y1 := bb[0], bb[1], bb[2], bb[3]
		if strings.HasSuffix(crs, "4326") {
			epsg = 4326
			if version != "1.1.1" {
				x0, y0, x1, y1 = bb[1], bb[0], bb[3], bb[2]
			}
		}
		writeGeoTIFF(&buf, img, epsg, x0, y1, (x1-x0)/float64(wd), (y1-y0)/float64(ht))
	}
	w.Header().Set("Content-Type", format)
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	_, _ = w.Write(buf.Bytes())
}

// writeGeoTIFF writes a minimal little-endian GeoTIFF: one uncompressed 8-bit strip,
// ModelPixelScale, ModelTiepoint (upper-left corner) and a GeoKeyDirectory naming the EPSG
// code (projected for 3857, geographic for 4326).
func writeGeoTIFF(buf *bytes.Buffer, img *image.Gray, epsg int, ulx, uly, sx, sy float64) {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	le := binary.LittleEndian
	type entry struct {
		tag, typ uint16
		count    uint32
		value    []byte // inline when <= 4 bytes
	}
	u16 := func(vs ...uint16) []byte {
		b := make([]byte, 2*len(vs))
		for i, v := range vs {
			le.PutUint16(b[2*i:], v)
		}
		return b
	}
	u32 := func(v uint32) []byte { b := make([]byte, 4); le.PutUint32(b, v); return b }
	f64 := func(vs ...float64) []byte {
		b := make([]byte, 8*len(vs))
		for i, v := range vs {
			le.PutUint64(b[8*i:], math.Float64bits(v))
		}
		return b
	}
	model, typeKey := uint16(1), uint16(3072) // projected, ProjectedCSTypeGeoKey
	if epsg == 4326 {
		model, typeKey = 2, 2048 // geographic, GeographicTypeGeoKey
	}
	keys := u16(1, 1, 0, 3, 1024, 0, 1, model, 1025, 0, 1, 1, typeKey, 0, 1, uint16(epsg))
	const nEntries = 12
	header := 8
	ifdSize := 2 + nEntries*12 + 4
	pixels := w * h
	dataStart := header + ifdSize
	entries := []entry{
		{256, 4, 1, u32(uint32(w))},
		{257, 4, 1, u32(uint32(h))},
		{258, 3, 1, u16(8)},
		{259, 3, 1, u16(1)},
		{262, 3, 1, u16(1)},
		{273, 4, 1, nil}, // strip offset, set below
		{277, 3, 1, u16(1)},
		{278, 4, 1, u32(uint32(h))},
		{279, 4, 1, u32(uint32(pixels))},
		{33550, 12, 3, f64(sx, sy, 0)},
		{33922, 12, 6, f64(0, 0, 0, ulx, uly, 0)},
		{34735, 3, uint32(len(keys) / 2), keys},
	}
	var extra bytes.Buffer
	offsets := make([]uint32, len(entries))
	for i, e := range entries {
		if len(e.value) > 4 {
			offsets[i] = uint32(dataStart + extra.Len())
			extra.Write(e.value)
		}
	}
	stripOffset := uint32(dataStart + extra.Len())
	entries[5].value = u32(stripOffset)
	buf.Write([]byte("II*\x00"))
	buf.Write(u32(uint32(header)))
	buf.Write(u16(nEntries))
	for i, e := range entries {
		buf.Write(u16(e.tag, e.typ))
		buf.Write(u32(e.count))
		if len(e.value) > 4 {
			buf.Write(u32(offsets[i]))
		} else {
			v := make([]byte, 4)
			copy(v, e.value)
			buf.Write(v)
		}
	}
	buf.Write(u32(0))
	buf.Write(extra.Bytes())
	buf.Write(img.Pix[:pixels])
}

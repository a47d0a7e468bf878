package tiles

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/paulmach/orb"
)

// wmtsCaps is what a WMTS 1.0.0 capabilities document says of its layers.
type wmtsCaps struct {
	XMLName xml.Name
	Version string `xml:"version,attr"`
	Title   string `xml:"ServiceIdentification>Title"`
	Ops     []struct {
		Name string `xml:"name,attr"`
		Gets []struct {
			Href      string   `xml:"href,attr"`
			Encodings []string `xml:"Constraint>AllowedValues>Value"`
		} `xml:"DCP>HTTP>Get"`
	} `xml:"OperationsMetadata>Operation"`
	Layers []wmtsLayer `xml:"Contents>Layer"`
	Sets   []wmtsSet   `xml:"Contents>TileMatrixSet"`
}

type wmtsLayer struct {
	Identifier string `xml:"Identifier"`
	Title      string `xml:"Title"`
	Lower      string `xml:"WGS84BoundingBox>LowerCorner"`
	Upper      string `xml:"WGS84BoundingBox>UpperCorner"`
	Styles     []struct {
		Default    bool   `xml:"isDefault,attr"`
		Identifier string `xml:"Identifier"`
	} `xml:"Style"`
	Formats []string `xml:"Format"`
	Links   []struct {
		Set    string   `xml:"TileMatrixSet"`
		Limits []string `xml:"TileMatrixSetLimits>TileMatrixLimits>TileMatrix"`
	} `xml:"TileMatrixSetLink"`
	Resources []struct {
		Format   string `xml:"format,attr"`
		Type     string `xml:"resourceType,attr"`
		Template string `xml:"template,attr"`
	} `xml:"ResourceURL"`
}

type wmtsSet struct {
	Identifier string `xml:"Identifier"`
	CRS        string `xml:"SupportedCRS"`
	WKSS       string `xml:"WellKnownScaleSet"`
	Matrices   []struct {
		Identifier string `xml:"Identifier"`
	} `xml:"TileMatrix"`
}

// parseWMTS reads a WMTS capabilities document; ok is false when b is none (another
// service's document, an exception report).
func parseWMTS(b []byte) (c *wmtsCaps, ok bool, err error) {
	head := b[:min(len(b), 4096)]
	if !bytes.Contains(head, []byte("<Capabilities")) || !bytes.Contains(head, []byte("wmts")) {
		return nil, false, nil
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = false
	dec.CharsetReader = func(_ string, in io.Reader) (io.Reader, error) { return in, nil }
	c = &wmtsCaps{}
	if err := dec.Decode(c); err != nil {
		return nil, true, fmt.Errorf("not a WMTS capabilities document: %w", err)
	}
	return c, c.XMLName.Local == "Capabilities", nil
}

// extent is the layer's WGS84BoundingBox, nil when it has none.
func (l *wmtsLayer) extent() *orb.Bound {
	lo, hi := strings.Fields(l.Lower), strings.Fields(l.Upper)
	if len(lo) != 2 || len(hi) != 2 {
		return nil
	}
	var v [4]float64
	for i, s := range []string{lo[0], lo[1], hi[0], hi[1]} {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil
		}
		v[i] = f
	}
	return &orb.Bound{Min: orb.Point{v[0], v[1]}, Max: orb.Point{v[2], v[3]}}
}

func (c *wmtsCaps) layer(id string) (*wmtsLayer, bool) {
	for i := range c.Layers {
		if c.Layers[i].Identifier == id {
			return &c.Layers[i], true
		}
	}
	return nil, false
}

func (c *wmtsCaps) set(id string) (*wmtsSet, bool) {
	for i := range c.Sets {
		if c.Sets[i].Identifier == id {
			return &c.Sets[i], true
		}
	}
	return nil, false
}

// mercatorLevels tells whether a tile matrix set is Web Mercator in XYZ numbering (what a
// tiles task fetches), and returns the prefix its matrix identifiers share before the
// zoom level ("" for "0", "1"...; "EPSG:900913:" for GeoWebCache's) and its zoom range.
// limits, when given, are the matrices a layer's link restricts it to.
func mercatorLevels(s *wmtsSet, limits []string) (prefix string, zmin, zmax int, ok bool) {
	crs := strings.ToUpper(s.CRS)
	if !strings.HasSuffix(crs, ":3857") && !strings.HasSuffix(crs, ":900913") && !strings.HasSuffix(crs, "/3857") &&
		!strings.Contains(s.WKSS, "GoogleMapsCompatible") {
		return "", 0, 0, false
	}
	ids := limits
	if len(ids) == 0 {
		for _, m := range s.Matrices {
			ids = append(ids, m.Identifier)
		}
	}
	zmin, zmax = MaxZoom+1, -1
	for i, id := range ids {
		j := len(id)
		for j > 0 && id[j-1] >= '0' && id[j-1] <= '9' {
			j--
		}
		z, err := strconv.Atoi(id[j:])
		if err != nil || (i > 0 && id[:j] != prefix) {
			return "", 0, 0, false
		}
		prefix = id[:j]
		zmin, zmax = min(zmin, z), max(zmax, z)
	}
	return prefix, zmin, min(zmax, MaxZoom), zmax >= 0
}

// wmtsTemplate is the tile URL template of a layer in a tile matrix set and format: the
// layer's RESTful ResourceURL when it has one for the format, else a KVP GetTile on the
// service's GetTile endpoint (or capsURL's).
func wmtsTemplate(c *wmtsCaps, l *wmtsLayer, set, prefix, format, capsURL string) string {
	style := "default"
	for i, s := range l.Styles {
		if s.Default || i == 0 {
			style = s.Identifier
		}
	}
	for _, r := range l.Resources {
		if r.Type == "tile" && (r.Format == format || format == "") {
			t := r.Template
			for _, kv := range [][2]string{{"{Style}", style}, {"{TileMatrixSet}", set}, {"{TileMatrix}", prefix + "{TileMatrix}"}} {
				t = strings.ReplaceAll(t, kv[0], kv[1])
			}
			return t
		}
	}
	base := kvpBase(capsURL)
	for _, op := range c.Ops {
		if op.Name == "GetTile" {
			for _, g := range op.Gets {
				if g.Href != "" && (len(g.Encodings) == 0 || contains(g.Encodings, "KVP")) {
					base = kvpBase(g.Href)
				}
			}
		}
	}
	v := url.Values{}
	for _, kv := range [][2]string{{"SERVICE", "WMTS"}, {"REQUEST", "GetTile"}, {"VERSION", "1.0.0"}, {"LAYER", l.Identifier},
		{"STYLE", style}, {"TILEMATRIXSET", set}, {"FORMAT", format}} {
		v.Set(kv[0], kv[1])
	}
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + v.Encode() + "&TILEMATRIX=" + url.QueryEscape(prefix) + "{TileMatrix}&TILEROW={TileRow}&TILECOL={TileCol}"
}

// kvpBase is a URL without the WMTS parameters a GetTile sets.
func kvpBase(u string) string {
	pu, err := url.Parse(u)
	if err != nil {
		return u
	}
	v := pu.Query()
	for k := range v {
		switch strings.ToUpper(k) {
		case "SERVICE", "REQUEST", "VERSION", "LAYER", "STYLE", "TILEMATRIXSET", "TILEMATRIX", "TILEROW", "TILECOL", "FORMAT":
			v.Del(k)
		}
	}
	pu.RawQuery = v.Encode()
	return strings.TrimSuffix(pu.String(), "?")
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// sortedKeys returns m's keys, sorted.
func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

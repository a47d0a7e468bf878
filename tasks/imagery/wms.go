package imagery

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/project"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/internal/ows"
	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/internal/files"
)

const (
	chipPrefix   = "chip/"
	maxChipBytes = 256 << 20
)

// wmsCaps is what a WMS GetCapabilities document says that chips need.
type wmsCaps struct {
	Version   string
	Title     string
	MaxWidth  int // 0 when not advertised
	MaxHeight int
	Formats   []string
	Layers    map[string]bool
	// Named are the layers with a name, in document order, with what they inherit.
	Named []wmsLayer
	// CRSs are the top layer's, which every layer inherits.
	CRSs []string
}

// wmsLayer is one named layer of a WMS: its title, CRSs (its own and those it inherits)
// and lon/lat extent (its own, else its parent's); Extent is nil when none is advertised.
type wmsLayer struct {
	Name, Title string
	CRSs        []string
	Extent      *orb.Bound
}

type capsDoc struct {
	XMLName xml.Name
	Version string `xml:"version,attr"`
	Service struct {
		Title     string `xml:"Title"`
		MaxWidth  int    `xml:"MaxWidth"`
		MaxHeight int    `xml:"MaxHeight"`
	} `xml:"Service"`
	Capability struct {
		Request struct {
			GetMap struct {
				Formats []string `xml:"Format"`
			} `xml:"GetMap"`
		} `xml:"Request"`
		Layers []capsLayer `xml:"Layer"`
	} `xml:"Capability"`
	// ServiceException is set when the document is an exception report.
	ServiceException []string `xml:"ServiceException"`
}

type capsLayer struct {
	Name  string   `xml:"Name"`
	Title string   `xml:"Title"`
	CRS   []string `xml:"CRS"` // 1.3.0
	SRS   []string `xml:"SRS"` // 1.1.1, sometimes several in one element
	Geo   *struct {
		W float64 `xml:"westBoundLongitude"`
		E float64 `xml:"eastBoundLongitude"`
		S float64 `xml:"southBoundLatitude"`
		N float64 `xml:"northBoundLatitude"`
	} `xml:"EX_GeographicBoundingBox"`
	LatLon *struct {
		MinX float64 `xml:"minx,attr"`
		MinY float64 `xml:"miny,attr"`
		MaxX float64 `xml:"maxx,attr"`
		MaxY float64 `xml:"maxy,attr"`
	} `xml:"LatLonBoundingBox"`
	Layers []capsLayer `xml:"Layer"`
}

// extent is the layer's own lon/lat extent, nil when it advertises none.
func (l *capsLayer) extent() *orb.Bound {
	switch {
	case l.Geo != nil:
		return &orb.Bound{Min: orb.Point{l.Geo.W, l.Geo.S}, Max: orb.Point{l.Geo.E, l.Geo.N}}
	case l.LatLon != nil:
		return &orb.Bound{Min: orb.Point{l.LatLon.MinX, l.LatLon.MinY}, Max: orb.Point{l.LatLon.MaxX, l.LatLon.MaxY}}
	}
	return nil
}

// crss are the layer's own CRSs.
func (l *capsLayer) crss() []string {
	var out []string
	for _, s := range append(append([]string(nil), l.CRS...), l.SRS...) {
		out = append(out, strings.Fields(s)...)
	}
	return out
}

// ParseCapabilities reads the parts of a WMS 1.3.0 or 1.1.1 capabilities document that
// chips need. An exception report is an error carrying its text.
func ParseCapabilities(r io.Reader) (*wmsCaps, error) {
	var d capsDoc
	dec := xml.NewDecoder(io.LimitReader(r, 32<<20))
	dec.Strict = false
	dec.CharsetReader = func(_ string, in io.Reader) (io.Reader, error) { return in, nil }
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("not a WMS capabilities document: %w", err)
	}
	switch d.XMLName.Local {
	case "WMS_Capabilities", "WMT_MS_Capabilities":
	case "ServiceExceptionReport":
		return nil, fmt.Errorf("the server answered an exception: %s", strings.TrimSpace(strings.Join(d.ServiceException, "; ")))
	default:
		return nil, fmt.Errorf("not a WMS capabilities document: root element <%s>", d.XMLName.Local)
	}
	c := &wmsCaps{Version: d.Version, Title: strings.TrimSpace(d.Service.Title), MaxWidth: max(d.Service.MaxWidth, 0),
		MaxHeight: max(d.Service.MaxHeight, 0), Layers: map[string]bool{}}
	for _, f := range d.Capability.Request.GetMap.Formats {
		if f = strings.TrimSpace(f); f != "" {
			c.Formats = append(c.Formats, f)
		}
	}
	for _, l := range d.Capability.Layers {
		c.CRSs = append(c.CRSs, l.crss()...)
	}
	c.walk(d.Capability.Layers, nil, nil, 0)
	return c, nil
}

// walk records the named layers of ls and below, each with the CRSs it adds to those of
// its parents and its own extent, else its parent's (WMS inheritance).
func (c *wmsCaps) walk(ls []capsLayer, crss []string, ext *orb.Bound, depth int) {
	for _, l := range ls {
		own := append(append([]string(nil), crss...), l.crss()...)
		e := ext
		if x := l.extent(); x != nil {
			e = x
		}
		if n := strings.TrimSpace(l.Name); n != "" {
			c.Layers[n] = true
			c.Named = append(c.Named, wmsLayer{Name: n, Title: strings.TrimSpace(l.Title), CRSs: own, Extent: e})
		}
		if depth < 32 {
			c.walk(l.Layers, own, e, depth+1)
		}
	}
}

// capabilities reads the server's capabilities once; a failure is not remembered.
func (t *Task) capabilities(ctx context.Context, env *tasks.Env) (*wmsCaps, error) {
	t.mu.Lock()
	c := t.caps
	t.mu.Unlock()
	if c != nil {
		return c, nil
	}
	w := t.cfg.WMS
	u := ows.URL(w.URL, [][2]string{{"SERVICE", "WMS"}, {"REQUEST", "GetCapabilities"}, {"VERSION", w.Version}})
	err := env.HTTP.Do(ctx, t.request(env, "capabilities", u, nil, nil), func(resp *http.Response) error {
		var err error
		c, err = ParseCapabilities(resp.Body)
		if err != nil {
			return retry.Permanent(dlq.ClassParse, err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the capabilities of %s: %w", redact.URL(w.URL), err)
	}
	for _, l := range strings.Split(w.Layers, ",") {
		if l = strings.TrimSpace(l); !c.Layers[l] {
			return nil, fmt.Errorf("wms.layers: the server has no layer %q", l)
		}
	}
	t.mu.Lock()
	t.caps = c
	t.mu.Unlock()
	return c, nil
}

// chooseFormat picks the GetMap format: GeoTIFF when offered (the georeferencing travels
// inside the file), else PNG, else JPEG, unless the configuration names one.
func chooseFormat(want string, offered []string) (string, error) {
	if want != "auto" {
		for _, f := range offered {
			if strings.EqualFold(f, want) {
				return f, nil
			}
		}
		return "", fmt.Errorf("wms.format %q: the server offers %s", want, strings.Join(offered, ", "))
	}
	for _, pref := range []string{"image/geotiff", "image/png", "image/jpeg"} {
		for _, f := range offered {
			if strings.EqualFold(f, pref) {
				return f, nil
			}
		}
	}
	return "", fmt.Errorf("the server offers no GeoTIFF, PNG or JPEG for GetMap (only %s)", strings.Join(offered, ", "))
}

// chipSpec is what a chip unit carries.
type chipSpec struct {
	BBox   [4]float64 `json:"bbox"` // in the chip CRS
	Width  int        `json:"w"`
	Height int        `json:"h"`
	Format string     `json:"format"`
}

// planWMS cuts the task's area into a grid of chips of the requested resolution, each
// within the server's MaxWidth/MaxHeight and max_size. The grid is laid over the task's
// own area, so a --bbox run plans the same chips (those touching it) under the same keys.
func (t *Task) planWMS(ctx context.Context, env *tasks.Env, a orb.Bound) ([]store.Unit, error) {
	c, err := t.capabilities(ctx, env)
	if err != nil {
		return nil, err
	}
	w := t.cfg.WMS
	if err := wmsAreaMeets(w, a, c); err != nil {
		return nil, err
	}
	format, err := chooseFormat(w.Format, c.Formats)
	if err != nil {
		return nil, err
	}
	cw, ch := w.MaxSize, w.MaxSize
	if c.MaxWidth > 0 {
		cw = min(cw, c.MaxWidth)
	}
	if c.MaxHeight > 0 {
		ch = min(ch, c.MaxHeight)
	}
	p := t.toCRS(a)
	gw, gh := float64(cw)*w.Resolution, float64(ch)*w.Resolution
	cols := max(1, int(math.Ceil((p.Max[0]-p.Min[0])/gw-1e-9)))
	rows := max(1, int(math.Ceil((p.Max[1]-p.Min[1])/gh-1e-9)))
	var units []store.Unit
	for r := range rows {
		for col := range cols {
			x0, y1 := p.Min[0]+float64(col)*gw, p.Max[1]-float64(r)*gh
			cb := orb.Bound{Min: orb.Point{x0, y1 - gh}, Max: orb.Point{x0 + gw, y1}}
			fp := t.toLonLat(cb)
			if env.Area != nil && !fp.Intersects(*env.Area) {
				continue
			}
			sp, _ := json.Marshal(chipSpec{BBox: [4]float64{cb.Min[0], cb.Min[1], cb.Max[0], cb.Max[1]}, Width: cw, Height: ch, Format: format})
			units = append(units, store.Unit{Key: fmt.Sprintf("%s%d/%d", chipPrefix, r, col), BBox: &fp, Spec: sp})
		}
	}
	env.Logger.Info("wms chips planned", "chips", len(units), "grid", fmt.Sprintf("%dx%d", rows, cols),
		"chip_px", fmt.Sprintf("%dx%d", cw, ch), "format", format, "server_max", fmt.Sprintf("%dx%d", c.MaxWidth, c.MaxHeight))
	return units, nil
}

func (t *Task) toCRS(b orb.Bound) orb.Bound {
	if t.epsg == 4326 {
		return b
	}
	return orb.Bound{Min: project.WGS84.ToMercator(b.Min), Max: project.WGS84.ToMercator(b.Max)}
}

func (t *Task) toLonLat(b orb.Bound) orb.Bound {
	if t.epsg == 4326 {
		return b
	}
	return orb.Bound{Min: project.Mercator.ToWGS84(b.Min), Max: project.Mercator.ToWGS84(b.Max)}
}

// getMap builds the GetMap URL of a chip: BBOX in the CRS's axis order, which for
// EPSG:4326 in WMS 1.3.0 is latitude first.
func (t *Task) getMap(sp chipSpec) string {
	w := t.cfg.WMS
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	b := sp.BBox
	box := strings.Join([]string{f(b[0]), f(b[1]), f(b[2]), f(b[3])}, ",")
	crsKey, crs := "CRS", fmt.Sprintf("EPSG:%d", t.epsg)
	if w.Version == "1.1.1" {
		crsKey = "SRS"
	} else if t.epsg == 4326 {
		box = strings.Join([]string{f(b[1]), f(b[0]), f(b[3]), f(b[2])}, ",")
	}
	return ows.URL(w.URL, [][2]string{{"SERVICE", "WMS"}, {"VERSION", w.Version}, {"REQUEST", "GetMap"},
		{"LAYERS", w.Layers}, {"STYLES", w.Styles}, {crsKey, crs}, {"BBOX", box},
		{"WIDTH", strconv.Itoa(sp.Width)}, {"HEIGHT", strconv.Itoa(sp.Height)}, {"FORMAT", sp.Format}})
}

// executeChip fetches one chip and stores it with its georeferencing.
func (t *Task) executeChip(ctx context.Context, env *tasks.Env, u store.Unit) (*tasks.Output, error) {
	var sp chipSpec
	if err := json.Unmarshal(u.Spec, &sp); err != nil || sp.Width <= 0 || sp.Height <= 0 {
		return nil, retry.Permanent(dlq.ClassInvalid, fmt.Errorf("unit %s: bad spec %s", u.Key, u.Spec))
	}
	w := t.cfg.WMS
	item := strings.TrimPrefix(u.Key, chipPrefix)
	stored, err := env.Assets.LookupAsset(ctx, t.table, w.Layers, u.Key, "image")
	if err != nil {
		return nil, err
	}
	revalidate := stored != nil && stored.ETag != "" && files.FileHas(stored.Path, stored.Bytes, stored.Hash)
	mapURL := t.getMap(sp)
	var body []byte
	var format, ct, etag, lastMod string
	notModified := false
	req := t.request(env, u.Key, mapURL, []int{http.StatusNotModified}, func(r *http.Request) {
		if revalidate {
			r.Header.Set("If-None-Match", stored.ETag)
		}
	})
	err = env.HTTP.Do(ctx, req, func(resp *http.Response) error {
		ct, etag, lastMod = resp.Header.Get("Content-Type"), resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
		if resp.StatusCode == http.StatusNotModified {
			if !revalidate {
				return retry.Permanent(dlq.ClassHTTP4xx, errNotConditional)
			}
			notModified = true
			return nil
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxChipBytes+1))
		if err != nil {
			return err
		}
		if len(b) > maxChipBytes {
			return retry.Permanent(dlq.ClassParse, fmt.Errorf("chip larger than %d MiB", maxChipBytes>>20))
		}
		// A WMS answers a bad request with a ServiceExceptionReport, often with 200:
		// CheckImage refuses it with the server's words in the snippet.
		if format, err = files.CheckImage(ct, b); err != nil {
			return err
		}
		body = b
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("fetching chip %s: %w", item, err)
	}
	if notModified {
		return skipped(), nil
	}
	base := filepath.Join(t.cfg.Target.Dir, "chip_"+strings.ReplaceAll(item, "/", "_"))
	path := base + "." + format
	sum := sha256.Sum256(body)
	geotiff := format == files.FormatTIFF && strings.Contains(strings.ToLower(sp.Format), "geotiff")
	world := ""
	if !geotiff {
		world = base + "." + worldExt(format)
	}
	res := float64(0)
	if sp.Width > 0 {
		res = (sp.BBox[2] - sp.BBox[0]) / float64(sp.Width)
	}
	props, _ := json.Marshal(map[string]any{
		"crs": fmt.Sprintf("EPSG:%d", t.epsg), "bbox": sp.BBox, "width": sp.Width, "height": sp.Height,
		"resolution": res, "format": sp.Format, "world_file": world, "georeferencing": map[bool]string{true: "geotiff", false: "world_file"}[geotiff],
	})
	fp := t.toLonLat(orb.Bound{Min: orb.Point{sp.BBox[0], sp.BBox[1]}, Max: orb.Point{sp.BBox[2], sp.BBox[3]}})
	row := store.AssetRow{Collection: w.Layers, Item: u.Key, Asset: "image", Footprint: boundPolygon(fp), Properties: props,
		Href: redact.URL(mapURL), Path: path, Hash: sum[:], Bytes: int64(len(body)), ContentType: ct, ETag: etag, LastModified: lastMod}
	return t.fileOutput(row, stored, func() error {
		if world != "" {
			if err := files.WriteFileAtomic(world, worldFile(sp)); err != nil {
				return err
			}
		}
		return files.WriteFileAtomic(path, body)
	})
}

// worldExt is the world file extension for an image format (ESRI's convention: the
// first and last letters of the image's extension and a "w").
func worldExt(format string) string {
	switch format {
	case files.FormatPNG:
		return "pgw"
	case files.FormatJPEG:
		return "jgw"
	case files.FormatTIFF:
		return "tfw"
	case files.FormatGIF:
		return "gfw"
	}
	return "wld"
}

// worldFile is the six-line ESRI world file of a chip: pixel size in x, two rotation
// terms, negative pixel size in y, and the centre of the upper-left pixel.
func worldFile(sp chipSpec) []byte {
	b := sp.BBox
	px := (b[2] - b[0]) / float64(sp.Width)
	py := (b[3] - b[1]) / float64(sp.Height)
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	return []byte(strings.Join([]string{f(px), "0", "0", f(-py), f(b[0] + px/2), f(b[3] - py/2)}, "\n") + "\n")
}

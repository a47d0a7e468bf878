// Package imagery is the `type: imagery` task: aerial and satellite imagery for an area,
// either as a grid of WMS GetMap chips at a ground resolution (each saved with its
// georeferencing: a world file, or GeoTIFF when the server offers it) or as the assets of
// the scenes a STAC API finds (POST /search, following next links; each asset downloaded
// with HTTP Range so that a cut transfer resumes where it stopped, and checked against the
// item's file:checksum). Footprints and metadata are indexed in a table of the store; files are
// written atomically before their rows commit. Chips and assets are units, so retries,
// the dead-letter queue, resume and --bbox reruns work per file.
package imagery

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// Kind returns the task kind to register.
func Kind() tasks.Kind {
	return tasks.Kind{Name: "imagery", NewConfig: func() tasks.Config { return NewConfig() }, Inspect: Inspect, Snippet: Snippet}
}

// Config is an imagery task's YAML configuration: exactly one of WMS and STAC.
type Config struct {
	WMS  *WMS  `yaml:"wms"`
	STAC *STAC `yaml:"stac"`
	// BBox is the lon/lat area.
	BBox *[4]float64 `yaml:"bbox"`
	// BBoxFrom names another task of the flow whose stored extent is the area (list it
	// in depends_on too, so that it has run first).
	BBoxFrom string `yaml:"bbox_from"`
	// Headers are sent with every request.
	Headers map[string]string `yaml:"headers"`
	Target  Target            `yaml:"target"`
}

// WMS configures GetMap chips.
type WMS struct {
	// URL is the service's base URL; it may carry its own query (?map=...).
	URL string `yaml:"url"`
	// Layers is the LAYERS value (comma-separated names).
	Layers string `yaml:"layers"`
	// Styles is the STYLES value; empty means the default styles.
	Styles string `yaml:"styles"`
	// Format is auto (default: GeoTIFF when offered, else PNG, else JPEG) or a MIME
	// type the server offers.
	Format string `yaml:"format"`
	// CRS is EPSG:3857 (default) or EPSG:4326.
	CRS string `yaml:"crs"`
	// Resolution is the ground size of a pixel in the CRS's units (metres for
	// EPSG:3857, degrees for EPSG:4326); required.
	Resolution float64 `yaml:"resolution"`
	// Version is 1.3.0 (default) or 1.1.1.
	Version string `yaml:"version" enum:"1.3.0,1.1.1"`
	// MaxSize caps a chip's side in pixels below the server's MaxWidth/MaxHeight.
	// Defaults to 2048.
	MaxSize int `yaml:"max_size"`
}

// STAC configures scenes from a STAC API.
type STAC struct {
	// URL is the API's root; searches go to URL/search.
	URL string `yaml:"url"`
	// Collections restricts the search; empty means all.
	Collections []string `yaml:"collections"`
	// Datetime is an RFC 3339 instant or interval ("2024-01-01T00:00:00Z/..").
	Datetime string `yaml:"datetime"`
	// Query is the search's query extension object, passed as is.
	Query map[string]any `yaml:"query"`
	// Assets are the asset keys to download. Defaults to [visual].
	Assets []string `yaml:"assets"`
	// Limit is items per page. Defaults to 100.
	Limit int `yaml:"limit"`
}

// Target says where imagery lands.
type Target struct {
	// Dir receives the files.
	Dir string `yaml:"dir"`
	// Table is the [schema.]table indexing them, created when missing.
	Table string `yaml:"table"`
}

// NewConfig returns a Config with its defaults.
func NewConfig() *Config { return &Config{} }

var taskIDRE = regexp.MustCompile(`^[a-z0-9_]+$`)

func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// Check implements tasks.Config: the one source (wms or stac), the area (bbox or
// bbox_from) and the target.
func (c *Config) Check(p tasks.Problems) {
	switch {
	case c.WMS == nil && c.STAC == nil:
		p.At("", "give wms or stac")
	case c.WMS != nil && c.STAC != nil:
		p.At("stac", "give wms or stac, not both")
	case c.WMS != nil:
		c.WMS.check(p)
	case c.STAC != nil:
		c.STAC.check(p)
	}
	switch {
	case c.BBox == nil && c.BBoxFrom == "":
		p.At("", "bbox or bbox_from is required")
	case c.BBox != nil && c.BBoxFrom != "":
		p.At("bbox_from", "give bbox or bbox_from, not both")
	case c.BBox != nil:
		if err := spatial.ValidateBBox(*c.BBox, true); err != nil {
			p.At("bbox", "%v", err)
		}
	case !taskIDRE.MatchString(c.BBoxFrom):
		p.At("bbox_from", "%q is not a task id", c.BBoxFrom)
	}
	if c.Target.Dir == "" {
		p.At("", "target.dir is required")
	}
	if c.Target.Table == "" {
		p.At("", "target.table is required")
	} else if _, _, err := store.SplitTable(c.Target.Table); err != nil {
		p.At("target.table", "%v", err)
	}
}

// check reports what is wrong with the wms section.
func (w *WMS) check(p tasks.Problems) {
	if !httpURL(w.URL) {
		p.At("wms.url", "%q is not an http(s) URL", redact.URL(w.URL))
	}
	if strings.TrimSpace(w.Layers) == "" {
		p.At("wms", "wms.layers is required")
	}
	if _, err := crsOf(w.CRS); err != nil {
		p.At("wms.crs", "%v", err)
	}
	if w.Resolution <= 0 {
		p.At("wms", "wms.resolution is required: the ground size of a pixel in the CRS's units")
	}
	if w.MaxSize < 0 {
		p.At("wms.max_size", "must not be negative")
	}
}

// check reports what is wrong with the stac section.
func (s *STAC) check(p tasks.Problems) {
	if !httpURL(s.URL) {
		p.At("stac.url", "%q is not an http(s) URL", redact.URL(s.URL))
	}
	if s.Limit < 0 {
		p.At("stac.limit", "must not be negative")
	}
	for _, a := range s.Assets {
		if a == "" || strings.ContainsAny(a, "/\\") {
			p.At("stac.assets", "%q is not an asset key", a)
		}
	}
}

// crsOf returns the EPSG code of a supported chip CRS.
func crsOf(s string) (int, error) {
	switch strings.ToUpper(s) {
	case "", "EPSG:3857", "EPSG:900913":
		return 3857, nil
	case "EPSG:4326", "CRS:84":
		return 4326, nil
	}
	return 0, fmt.Errorf("%q: only EPSG:3857 and EPSG:4326 are supported", s)
}

// SourceURL implements tasks.Source: the WMS's or the STAC API's URL (a STAC item's
// assets may be elsewhere).
func (c *Config) SourceURL() string {
	switch {
	case c.WMS != nil:
		return c.WMS.URL
	case c.STAC != nil:
		return c.STAC.URL
	}
	return ""
}

// New implements tasks.Config.
func (c *Config) New(id string) (tasks.Task, error) {
	schema, table, err := store.SplitTable(c.Target.Table)
	if err != nil {
		return nil, err
	}
	t := &Task{id: id, cfg: *c, table: &store.AssetTable{Schema: schema, Name: table}}
	service := ""
	switch {
	case c.WMS != nil:
		service = c.WMS.URL
	case c.STAC != nil:
		service = c.STAC.URL
	}
	if u, err := url.Parse(service); err == nil && u.Host != "" {
		t.origin = u
	}
	if c.STAC != nil {
		s := *c.STAC
		if len(s.Assets) == 0 {
			s.Assets = []string{"visual"}
		}
		if s.Limit == 0 {
			s.Limit = 100
		}
		t.cfg.STAC = &s
	}
	if c.WMS != nil {
		w := *c.WMS
		if w.Version == "" {
			w.Version = "1.3.0"
		}
		if w.MaxSize == 0 {
			w.MaxSize = 2048
		}
		if w.Format == "" {
			w.Format = "auto"
		}
		if t.epsg, err = crsOf(w.CRS); err != nil {
			return nil, err
		}
		t.cfg.WMS = &w
	}
	return t, nil
}

// Package tiles is the `type: tiles` task: it mirrors the map tiles of an XYZ, TMS or WMTS
// server over a bounding box and a zoom range into files (z/x/y.ext, written atomically)
// indexed in a table of the store. Tiles are fetched in blocks of up to 256, a unit each
// (block.go), and fail one by one: a tile that fails for good is a dead letter of its own,
// which a replay fetches alone. Tiles already stored are revalidated
// (If-None-Match, If-Modified-Since): a 304 rewrites nothing. A response that is not an
// image (a proxy's HTML page answered with 200) is never stored.
package tiles

import (
	"fmt"
	"regexp"

	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// Kind returns the task kind to register.
func Kind() tasks.Kind {
	return tasks.Kind{Name: "tiles", NewConfig: func() tasks.Config { return NewConfig() }, Inspect: Inspect, Snippet: Snippet}
}

// MaxZoom is the deepest zoom level accepted; level 24 tiles are a few millimetres.
const MaxZoom = 24

// Config is a tiles task's YAML configuration.
type Config struct {
	// URL is the tile URL template; see Template for its placeholders.
	URL string `yaml:"url"`
	// Scheme is xyz (default: rows from the north) or tms (rows from the south) and
	// says what {y} means.
	Scheme string `yaml:"scheme" enum:"xyz,tms"`
	// BBox is the lon/lat area to mirror.
	BBox *[4]float64 `yaml:"bbox"`
	// BBoxFrom names another task of the flow whose stored extent is the area (give it
	// in depends_on, so that it has run first).
	BBoxFrom string `yaml:"bbox_from"`
	// Zoom is [min, max] (or [z] for one level).
	Zoom []int `yaml:"zoom"`
	// MissingOK records a 404 (or 204) inside the range as a missing tile rather than
	// a failure: many servers have no tiles over the sea or beyond their data.
	MissingOK bool `yaml:"missing_ok"`
	// Headers are sent with every request (an API key, a Referer).
	Headers map[string]string `yaml:"headers"`
	Target  Target            `yaml:"target"`
}

// Target says where tiles land.
type Target struct {
	// Storage is files (default: z/x/y.ext files under Dir, indexed in Table) or
	// geopackage: the tiles go into the GeoPackage store itself, as a tile pyramid named
	// Table (what QGIS and GDAL open as a raster), indexed in Table_index. It needs a
	// GeoPackage store.
	Storage string `yaml:"storage" enum:"files,geopackage"`
	// Dir receives z/x/y.ext files (XYZ numbering whatever the server's scheme).
	Dir string `yaml:"dir"`
	// Table is the [schema.]table indexing the tiles, created when missing.
	Table string `yaml:"table"`
}

var _ tasks.Basemap = (*Config)(nil)

// BasemapTiles implements tasks.Basemap: tiles stored as files are a basemap for the UI.
func (c *Config) BasemapTiles() (dir string, minZoom, maxZoom int, ok bool) {
	if c.Target.Storage == StorageGeoPackage || c.Target.Dir == "" || len(c.Zoom) == 0 {
		return "", 0, 0, false
	}
	return c.Target.Dir, c.Zoom[0], c.Zoom[len(c.Zoom)-1], true
}

// PyramidTable is the [schema.]table of the tile pyramid the task keeps in a GeoPackage
// store (storage: geopackage), which the web UI serves as a basemap; ok is false when
// the task stores files.
func (c *Config) PyramidTable() (table string, ok bool) {
	return c.Target.Table, c.Target.Storage == StorageGeoPackage && c.Target.Table != ""
}

// Storages of Target.Storage.
const (
	StorageFiles      = "files"
	StorageGeoPackage = "geopackage"
)

// NewConfig returns a Config with its defaults.
func NewConfig() *Config {
	return &Config{Scheme: "xyz", Target: Target{Storage: StorageFiles}}
}

var (
	taskIDRE = regexp.MustCompile(`^[a-z0-9_]+$`)
)

// References implements tasks.Referrer: bbox_from names another task of the flow.
func (c *Config) References() map[string]string {
	if c.BBoxFrom == "" {
		return nil
	}
	return map[string]string{"bbox_from": c.BBoxFrom}
}

// Check implements tasks.Config.
func (c *Config) Check(p tasks.Problems) {
	if c.URL == "" {
		p.At("", "url is required (a tile URL template such as https://tiles.example.org/{z}/{x}/{y}.png)")
	} else if _, err := ParseTemplate(c.URL, c.Scheme == "tms"); err != nil {
		p.At("url", "%q: %v", redact.URL(c.URL), err)
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
	if _, _, err := zoomRange(c.Zoom); err != nil {
		p.At("zoom", "%v", err)
	}
	switch {
	case c.Target.Storage == StorageGeoPackage && c.Target.Dir != "":
		p.At("target.dir", "storage: geopackage keeps the tiles in the GeoPackage: drop target.dir")
	case c.Target.Storage != StorageGeoPackage && c.Target.Dir == "":
		p.At("", "target.dir is required (where z/x/y files are written), or storage: geopackage")
	}
	if c.Target.Table == "" {
		p.At("", "target.table is required")
	} else if _, _, err := store.SplitTable(c.Target.Table); err != nil {
		p.At("target.table", "%v", err)
	}
}

func zoomRange(z []int) (lo, hi int, err error) {
	switch len(z) {
	case 1:
		lo, hi = z[0], z[0]
	case 2:
		lo, hi = z[0], z[1]
	default:
		return 0, 0, fmt.Errorf("give [min, max] or [z], got %d values", len(z))
	}
	if lo < 0 || hi > MaxZoom || lo > hi {
		return 0, 0, fmt.Errorf("[%d, %d]: zoom levels must satisfy 0 <= min <= max <= %d", lo, hi, MaxZoom)
	}
	return lo, hi, nil
}

// SourceURL implements tasks.Source.
func (c *Config) SourceURL() string { return c.URL }

// New implements tasks.Config.
func (c *Config) New(id string) (tasks.Task, error) {
	schema, table, err := store.SplitTable(c.Target.Table)
	if err != nil {
		return nil, err
	}
	tpl, err := ParseTemplate(c.URL, c.Scheme == "tms")
	if err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	lo, hi, err := zoomRange(c.Zoom)
	if err != nil {
		return nil, fmt.Errorf("zoom: %w", err)
	}
	return &Task{id: id, cfg: *c, tpl: tpl, zmin: lo, zmax: hi, table: &store.TileTable{Schema: schema, Name: table, InStore: c.Target.Storage == StorageGeoPackage}}, nil
}

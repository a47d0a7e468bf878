// Package wfs is the `type: wfs` task: it harvests one feature type of a WFS server over
// a bounding box into a table of the store, completely (adaptive quadtree tiling sized by
// RESULTTYPE=hits, paging with SORTBY only where a tile cannot be split further), exactly
// (axis order checked against the requested box) and idempotently (payload-hash keys).
package wfs

import (
	"net/url"
	"strings"

	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// Kind returns the task kind to register.
func Kind() tasks.Kind {
	return tasks.Kind{Name: "wfs", NewConfig: func() tasks.Config { return NewConfig() }}
}

// Config is a wfs task's YAML configuration.
type Config struct {
	// URL is the service's base URL; it may carry its own query (?map=...).
	URL string `yaml:"url"`
	// TypeName is the feature type, with or without a namespace prefix.
	TypeName string `yaml:"typename"`
	// Version is auto (negotiated from GetCapabilities), 2.0.0, 1.1.0 or 1.0.0.
	Version string `yaml:"version" enum:"auto,2.0.0,1.1.0,1.0.0"`
	// BBox is the area to harvest, in BBoxCRS. Defaults to the feature type's
	// WGS84 extent from the capabilities.
	BBox *[4]float64 `yaml:"bbox"`
	// BBoxCRS is the CRS of BBox: EPSG:4326 (default, lon/lat) or EPSG:3857.
	BBoxCRS string `yaml:"bbox_crs"`
	// SRS is the CRS requested; features are stored with its SRID. Defaults to EPSG:4326.
	SRS string `yaml:"srs"`
	// OutputFormat is auto (GeoJSON when offered, else GML), geojson, gml, or a
	// server-specific MIME type passed as is.
	OutputFormat string `yaml:"output_format"`
	// Filter is an optional FES 2.0 (or OGC 1.1 for WFS 1.x) filter, passed through.
	// It replaces BBOX in the request, so tiling adds the tile as a BBOX inside it.
	Filter string `yaml:"filter"`
	// PageSize caps features per request. Defaults to the server's CountDefault, else 1000.
	PageSize int `yaml:"page_size"`
	// SortBy is the property to sort pages by where paging is needed. Defaults to the
	// upsert key, else the first property.
	SortBy string `yaml:"sort_by"`
	// Headers are sent with every request (an API key header, say).
	Headers map[string]string `yaml:"headers"`
	Target  Target            `yaml:"target"`
	// Transform selects and renames columns, filters and reshapes features on their
	// way to the table (tasks.Transform).
	Transform tasks.Transform `yaml:"transform"`
	// Limits bound one feature of a response (past them the unit fails as too_large) and
	// the work the harvest may plan (past them the task fails, naming the key).
	Limits tasks.FeatureLimits `yaml:"limits"`
}

// Target says where features land.
type Target = tasks.FeatureTarget

// NewConfig returns a Config with its defaults.
func NewConfig() *Config {
	return &Config{Version: "auto", SRS: "EPSG:4326", OutputFormat: "auto", BBoxCRS: "EPSG:4326", Target: Target{Mode: store.ModeAppend}}
}

// FeatureTarget is where the task's features land (a flow checks that no other task
// writes into a table a mirror deletes from).
func (c *Config) FeatureTarget() *tasks.FeatureTarget { return &c.Target }

// Check implements tasks.Config.
func (c *Config) Check(p tasks.Problems) {
	if c.URL == "" {
		p.At("", "url is required (the service's base URL)")
	} else if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.At("url", "%q is not an http(s) URL", redact.URL(c.URL))
	}
	if c.TypeName == "" {
		p.At("", "typename is required")
	}
	geographic := false
	switch strings.ToUpper(c.BBoxCRS) {
	case "EPSG:4326", "CRS:84", "":
		geographic = true
	case "EPSG:3857":
	default:
		p.At("bbox_crs", "%q: only EPSG:4326 and EPSG:3857 are supported", c.BBoxCRS)
	}
	if c.BBox != nil {
		if err := spatial.ValidateBBox(*c.BBox, geographic); err != nil {
			p.At("bbox", "%v", err)
		}
	}
	if _, err := spatial.SRID(c.SRS); err != nil {
		p.At("srs", "%q is not a CRS geoflow can store (use EPSG:NNNN): %v", c.SRS, err)
	}
	if c.PageSize < 0 {
		p.At("page_size", "must not be negative")
	}
	c.Limits.Check(p)
	c.Target.Check(p)
	c.Transform.Check(p, &c.Target)
}

// SourceURL implements tasks.Source.
func (c *Config) SourceURL() string { return c.URL }

// New implements tasks.Config.
func (c *Config) New(id string) (tasks.Task, error) {
	schema, table, err := store.SplitTable(c.Target.Table)
	if err != nil {
		return nil, err
	}
	t := &Task{id: id, cfg: *c, schema: schema, table: table}
	t.Task.Source = t
	return t, nil
}

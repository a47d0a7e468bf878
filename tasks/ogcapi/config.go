// Package ogcapi is the `type: ogcapi_features` task: it harvests one collection of an
// OGC API - Features server (pygeoapi, GeoServer, MapServer 8, QGIS Server, ldproxy,
// pg_featureserv) over a bounding box into a table of the store, completely and
// idempotently, as the wfs task does a feature type. It reads the landing page,
// conformance and the collection, then plans the work with the shared harvest engine:
// the area is counted (numberMatched of a one-feature page), tiles are split by bbox until
// each fits one page, and the stored distinct count is checked against the server's.
// Next links are not trusted to walk a collection: on a server without a stable order
// (MapServer over PostGIS) they repeat and miss features.
package ogcapi

import (
	"net/url"
	"strings"

	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/tasks"
)

// Kind returns the task kind to register.
func Kind() tasks.Kind {
	return tasks.Kind{Name: "ogcapi_features", NewConfig: func() tasks.Config { return NewConfig() }}
}

// Config is an ogcapi_features task's YAML configuration.
type Config struct {
	// URL is the landing page of the API; it may carry its own query (an API key).
	URL string `yaml:"url"`
	// Collection is the collection's id.
	Collection string `yaml:"collection"`
	// BBox is the area to harvest, lon/lat (CRS84). Defaults to the collection's extent.
	BBox *[4]float64 `yaml:"bbox"`
	// Datetime restricts the features by time, as the standard's datetime parameter
	// ("2024-01-01T00:00:00Z/..", an instant or an interval); passed as is.
	Datetime string `yaml:"datetime"`
	// Filter is a CQL2 text filter. The server must declare the Features Part 3 filter
	// and CQL2 text conformance classes; otherwise the task is refused before anything
	// is fetched (a server that ignored the filter would answer every feature).
	Filter string `yaml:"filter"`
	// Properties restricts the properties asked for (the properties parameter); the
	// table gets these columns only.
	Properties []string `yaml:"properties"`
	// CRS is the CRS asked for (Features Part 2), EPSG:NNNN or its URI. Defaults to
	// CRS84, stored as EPSG:4326 with x = longitude. Another CRS must be listed by the
	// collection.
	CRS string `yaml:"crs"`
	// PageSize is the features per request (limit). Defaults to 1000, lowered to the
	// maximum the server's OpenAPI document states for limit.
	PageSize int `yaml:"page_size"`
	// Headers are sent with every request (an API key header, say).
	Headers map[string]string   `yaml:"headers"`
	Target  tasks.FeatureTarget `yaml:"target"`
	// Transform selects and renames columns, filters and reshapes features on their
	// way to the table (tasks.Transform); its where is also sent to a server that
	// evaluates CQL2.
	Transform tasks.Transform `yaml:"transform"`
	// Limits bound one feature of a response (past them the unit fails as too_large) and
	// the work the harvest may plan (past them the task fails, naming the key).
	Limits tasks.FeatureLimits `yaml:"limits"`
}

// defaultPageSize is the limit asked for unless the server or page_size says less.
const defaultPageSize = 1000

// NewConfig returns a Config with its defaults.
func NewConfig() *Config {
	return &Config{Target: tasks.FeatureTarget{Mode: "append"}}
}

// FeatureTarget is where the task's features land (a flow checks that no other task
// writes into a table a mirror deletes from).
func (c *Config) FeatureTarget() *tasks.FeatureTarget { return &c.Target }

// Check implements tasks.Config.
func (c *Config) Check(p tasks.Problems) {
	if c.URL == "" {
		p.At("", "url is required (the API's landing page)")
	} else if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.At("url", "%q is not an http(s) URL", redact.URL(c.URL))
	}
	if c.Collection == "" {
		p.At("", "collection is required (the collection's id, as in /collections/{id})")
	} else if strings.ContainsAny(c.Collection, "/?#") {
		p.At("collection", "%q: a collection id, not a path or URL", c.Collection)
	}
	if c.BBox != nil {
		if err := spatial.ValidateBBox(*c.BBox, true); err != nil {
			p.At("bbox", "%v", err)
		}
	}
	if c.CRS != "" {
		if _, err := spatial.SRID(c.CRS); err != nil {
			p.At("crs", "%q is not a CRS geoflow can store (use EPSG:NNNN or its http://www.opengis.net/def/crs/EPSG/0/NNNN URI): %v", c.CRS, err)
		}
	}
	if strings.TrimSpace(c.Filter) == "" && c.Filter != "" {
		p.At("filter", "is blank")
	}
	for i, name := range c.Properties {
		if name == "" || strings.Contains(name, ",") {
			p.At("properties", "entry %d: %q is not a property name", i+1, name)
		}
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
	return newTask(id, *c)
}

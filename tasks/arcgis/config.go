// Package arcgis is the `type: arcgis_features` task: it harvests one layer of an ArcGIS
// REST feature or map service (.../FeatureServer/N, .../MapServer/N) completely, by object
// id. Offset paging (resultOffset) follows no stable order unless the server is asked for
// one and supports it, so the task never pages: it lists the area's object ids
// (returnIdsOnly, per bbox tile where the server caps the list), fetches them in batches of
// at most maxRecordCount (objectIds, POSTed), asks again for any the answer left out, and
// compares the stored count with the server's count of the area at the end.
package arcgis

import (
	"net/url"
	"os"
	"strings"

	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/tasks"
)

// Kind returns the task kind to register.
func Kind() tasks.Kind {
	return tasks.Kind{Name: "arcgis_features", NewConfig: func() tasks.Config { return NewConfig() }}
}

// Config is an arcgis_features task's YAML configuration.
type Config struct {
	// URL is the layer's URL, ending in /FeatureServer/N or /MapServer/N.
	URL string `yaml:"url"`
	// BBox is the area to harvest, lon/lat. Defaults to the layer's extent.
	BBox *[4]float64 `yaml:"bbox"`
	// Where is an SQL-92 filter, passed as the where parameter. Defaults to 1=1.
	Where string `yaml:"where"`
	// OutFields restricts the attributes fetched (and the table's columns). Defaults to all.
	OutFields []string `yaml:"out_fields"`
	// TokenEnv names the environment variable holding a token; it is sent in the
	// X-Esri-Authorization header, never in a URL, and never logged.
	TokenEnv string `yaml:"token_env"`
	// BatchSize is the object ids per request. Defaults to the layer's maxRecordCount,
	// and is never more.
	BatchSize int `yaml:"batch_size"`
	// Headers are sent with every request.
	Headers map[string]string   `yaml:"headers"`
	Target  tasks.FeatureTarget `yaml:"target"`
	// Transform selects and renames columns, filters and reshapes features on their
	// way to the table (tasks.Transform).
	Transform tasks.Transform `yaml:"transform"`
	// Limits bound one feature of a response (past them the unit fails as too_large) and
	// the work the harvest may plan (past them the task fails, naming the key).
	Limits tasks.FeatureLimits `yaml:"limits"`
}

// NewConfig returns a Config with its defaults.
func NewConfig() *Config {
	return &Config{Where: "1=1", Target: tasks.FeatureTarget{Mode: "append"}}
}

// FeatureTarget is where the task's features land (a flow checks that no other task
// writes into a table a mirror deletes from).
func (c *Config) FeatureTarget() *tasks.FeatureTarget { return &c.Target }

// Check implements tasks.Config.
func (c *Config) Check(p tasks.Problems) {
	if c.URL == "" {
		p.At("", "url is required (the layer's URL, .../FeatureServer/0)")
	} else if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.At("url", "%q is not an http(s) URL", redact.URL(c.URL))
	} else if !layerPath(u.Path) {
		p.At("url", "%q does not name a layer: it should end in /FeatureServer/N or /MapServer/N", redact.URL(c.URL))
	} else if u.Query().Has("token") {
		p.At("url", "carries a token: put it in an environment variable and name it in token_env, so that it stays out of logs")
	}
	if c.BBox != nil {
		if err := spatial.ValidateBBox(*c.BBox, true); err != nil {
			p.At("bbox", "%v", err)
		}
	}
	if strings.TrimSpace(c.Where) == "" {
		p.At("where", "is blank (1=1 selects every feature)")
	}
	if c.TokenEnv != "" && os.Getenv(c.TokenEnv) == "" {
		p.At("token_env", "the environment variable %s is not set", c.TokenEnv)
	}
	if c.BatchSize < 0 {
		p.At("batch_size", "must not be negative")
	}
	for i, f := range c.OutFields {
		if f == "" || strings.ContainsAny(f, ", ") {
			p.At("out_fields", "entry %d: %q is not a field name", i+1, f)
		}
	}
	c.Limits.Check(p)
	c.Target.Check(p)
	c.Transform.Check(p, &c.Target)
}

// layerPath tells whether p ends in /FeatureServer/N or /MapServer/N.
func layerPath(p string) bool {
	parts := strings.Split(strings.TrimSuffix(p, "/"), "/")
	if len(parts) < 2 {
		return false
	}
	svc, n := parts[len(parts)-2], parts[len(parts)-1]
	if svc != "FeatureServer" && svc != "MapServer" || n == "" {
		return false
	}
	for _, r := range n {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// SourceURL implements tasks.Source.
func (c *Config) SourceURL() string { return c.URL }

// New implements tasks.Config.
func (c *Config) New(id string) (tasks.Task, error) {
	return newTask(id, *c)
}

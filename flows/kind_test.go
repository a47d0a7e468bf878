package flows

import (
	"errors"
	"time"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/tasks"
)

// testConfig is a task kind for exercising the decoder: the keys a feature task has, and
// the checks one makes. Its tasks are never run here (the engine's tests run theirs).
type testConfig struct {
	URL      string            `yaml:"url"`
	Headers  map[string]string `yaml:"headers"`
	Typename string            `yaml:"typename"`
	BBox     *[4]float64       `yaml:"bbox"`
	BBoxCRS  string            `yaml:"bbox_crs"`
	Units    int               `yaml:"units"`
	Split    int               `yaml:"split"`
	Fail     []string          `yaml:"fail_units"`
	Parts    []string          `yaml:"fail_parts"`
	Sleep    time.Duration     `yaml:"sleep"`
	Mode     string            `yaml:"mode" enum:"append,upsert"`
	BBoxFrom string            `yaml:"bbox_from"`
	Target   struct {
		Table string   `yaml:"table"`
		Key   []string `yaml:"key"`
	} `yaml:"target"`
}

func (c *testConfig) Check(p tasks.Problems) {
	if c.BBox != nil {
		if err := spatial.ValidateBBox(*c.BBox, c.BBoxCRS == "" || c.BBoxCRS == "EPSG:4326"); err != nil {
			p.At("bbox", "%v", err)
		}
	}
	if c.Mode == "upsert" && len(c.Target.Key) == 0 {
		p.At("target.key", "upsert mode needs target.key")
	}
}

func (c *testConfig) References() map[string]string {
	if c.BBoxFrom == "" {
		return nil
	}
	return map[string]string{"bbox_from": c.BBoxFrom}
}

func (c *testConfig) New(string) (tasks.Task, error) {
	return nil, errors.New("the spec's tests build no tasks")
}

func testRegistry() *tasks.Registry {
	r := &tasks.Registry{}
	r.Register(tasks.Kind{Name: "fake", NewConfig: func() tasks.Config { return &testConfig{Units: 3} }})
	r.Register(tasks.Kind{Name: "other", NewConfig: func() tasks.Config { return &testConfig{Units: 1} }})
	return r
}

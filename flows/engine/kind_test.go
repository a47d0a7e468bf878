package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// testKind is a task kind for exercising the decoder and the runner: it plans Units units
// that commit nothing but their bookkeeping, through the real store.
type testConfig struct {
	URL      string        `yaml:"url"`
	Typename string        `yaml:"typename"`
	BBox     *[4]float64   `yaml:"bbox"`
	BBoxCRS  string        `yaml:"bbox_crs"`
	Units    int           `yaml:"units"`
	Split    int           `yaml:"split"` // units with this index plan two children
	Fail     []string      `yaml:"fail_units"`
	Parts    []string      `yaml:"fail_parts"` // units that try two parts themselves: "/x" fails, "/y" is planned
	Sleep    time.Duration `yaml:"sleep"`
	Mode     string        `yaml:"mode" enum:"append,upsert"`
	BBoxFrom string        `yaml:"bbox_from"`
	Target   struct {
		Table string   `yaml:"table"`
		Key   []string `yaml:"key"`
	} `yaml:"target"`

	rec  *recorder
	grow int // more units planned than Units says, as a new version of a task might
}

type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, s)
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
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

func (c *testConfig) New(id string) (tasks.Task, error) { return &testTask{id: id, c: c}, nil }

type testTask struct {
	id string
	c  *testConfig
}

func (t *testTask) Plan(ctx context.Context, env *tasks.Env) ([]store.Unit, error) {
	if t.c.rec != nil {
		t.c.rec.add("plan " + t.id)
	}
	if slices.Contains(t.c.Fail, "plan") {
		return nil, errors.New("cannot plan")
	}
	if b := t.c.BBox; b != nil && env.Area != nil {
		if own := (orb.Bound{Min: orb.Point{b[0], b[1]}, Max: orb.Point{b[2], b[3]}}); !own.Intersects(*env.Area) {
			return nil, &tasks.OutsideArea{Area: own}
		}
	}
	var out []store.Unit
	for i := range t.c.Units + t.c.grow {
		b := orb.Bound{Min: orb.Point{float64(i), 0}, Max: orb.Point{float64(i) + 1, 1}}
		if env.Area != nil && !env.Area.Intersects(b) {
			continue
		}
		out = append(out, store.Unit{Key: fmt.Sprintf("u%03d", i), BBox: &b})
	}
	return out, nil
}

func (t *testTask) Execute(ctx context.Context, env *tasks.Env, u store.Unit) (*tasks.Output, error) {
	if t.c.Sleep > 0 {
		select {
		case <-time.After(t.c.Sleep):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if slices.Contains(t.c.Fail, u.Key) {
		return nil, fmt.Errorf("unit %s fails on purpose", u.Key)
	}
	if t.c.rec != nil {
		t.c.rec.add(t.id + " " + u.Key)
	}
	out := &tasks.Output{Counts: store.Counts{Inserted: 1}}
	if slices.Contains(t.c.Parts, u.Key) {
		out.Failed = []tasks.Failure{{Unit: store.Unit{Key: u.Key + "/x"}, Err: retry.Permanent(dlq.ClassHTTP4xx, errors.New("part x is gone"))}}
		out.Children = []store.Unit{{Key: u.Key + "/y"}}
	}
	if t.c.Split > 0 && u.Key == fmt.Sprintf("u%03d", t.c.Split) {
		out.Children = []store.Unit{{Key: u.Key + "/a"}, {Key: u.Key + "/b"}}
	}
	return out, nil
}

func testRegistry(rec *recorder) *tasks.Registry {
	r := &tasks.Registry{}
	r.Register(tasks.Kind{Name: "fake", NewConfig: func() tasks.Config { return &testConfig{Units: 3, rec: rec} }})
	r.Register(tasks.Kind{Name: "other", NewConfig: func() tasks.Config { return &testConfig{Units: 1, rec: rec} }})
	return r
}

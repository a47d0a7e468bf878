package flows

import (
	"errors"
	"fmt"
	"strings"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/project"

	"github.com/geoflow/geoflow/spatial"
)

// Scope is the part of a flow a run covers, as a person asks for it on the command line
// (geoflow run --bbox --task) or through the web UI's API; both validate it here, so they
// accept and refuse the same scopes with the same messages.
type Scope struct {
	// BBox restricts spatial tasks to "minx,miny,maxx,maxy"; "" for the whole area.
	BBox string
	// BBoxCRS is the CRS of BBox: EPSG:4326 (the default) or EPSG:3857.
	BBoxCRS string
	// Tasks restricts the run to these task ids; nil runs them all.
	Tasks []string
	// WithDownstream adds, to Tasks, every task that depends on them.
	WithDownstream bool
}

// Resolve validates rq against f and returns the run's area (nil for none) and the
// tasks to run (nil for all), --with-downstream applied.
func (rq Scope) Resolve(f *Flow) (area *orb.Bound, only []string, err error) {
	if rq.WithDownstream && len(rq.Tasks) == 0 {
		return nil, nil, errors.New("--with-downstream needs --task")
	}
	for _, id := range rq.Tasks {
		if f.Task(id) == nil {
			return nil, nil, fmt.Errorf("--task %q: flow %q has no such task", id, f.Name)
		}
	}
	only = rq.Tasks
	if rq.WithDownstream {
		only = Downstream(f, only)
	}
	if area, err = ParseArea(rq.BBox, rq.BBoxCRS); err != nil {
		return nil, nil, err
	}
	return area, only, nil
}

// ParseArea reads a --bbox in crs (EPSG:4326 when "") into a lon/lat bound; "" is no
// area (nil).
func ParseArea(s, crs string) (*orb.Bound, error) {
	if s == "" {
		return nil, nil
	}
	b, err := spatial.ParseBBox(s)
	if err != nil {
		return nil, fmt.Errorf("--bbox %q: %w", s, err)
	}
	switch strings.ToUpper(crs) {
	case "", "EPSG:4326", "CRS:84", "4326":
	case "EPSG:3857", "EPSG:900913", "3857":
		b = orb.Bound{Min: project.Mercator.ToWGS84(b.Min), Max: project.Mercator.ToWGS84(b.Max)}
	default:
		return nil, fmt.Errorf("--bbox-crs %q: only EPSG:4326 and EPSG:3857 are supported", crs)
	}
	if err := spatial.ValidateBBox([4]float64{b.Min[0], b.Min[1], b.Max[0], b.Max[1]}, true); err != nil {
		return nil, fmt.Errorf("--bbox %q: %w", s, err)
	}
	return &b, nil
}

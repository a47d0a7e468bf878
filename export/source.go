package export

import (
	"context"
	"io"
	"strings"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// source is the job's features as the format writers pull them: the table's rows as
// the job's query selects them, or the run's changes to the table.
func (j *Job) source(ctx context.Context) (store.FeatureSource, func()) {
	idColumn := j.format != GeoJSONSeq
	if j.spec.Changes != nil {
		f := store.ChangeFilter{RunID: j.spec.Changes.RunID, Task: j.spec.Changes.Task, Features: true}
		return pull(ctx, func(ctx context.Context, send func(*spatial.Feature) error) error {
			if j.table.Name == "" {
				return nil // the run changed no table: an empty file
			}
			return j.r.ListChanges(ctx, f, func(c store.Change) error {
				if !sameTable(c.Table, j.table) || (j.spec.BBox != nil && (c.Geometry == nil || !j.spec.BBox.Intersects(c.Geometry.Bound()))) {
					return nil
				}
				props := make(map[string]any, len(c.Properties)+3)
				for k, v := range c.Properties {
					props[k] = v
				}
				props["gf_change"], props["gf_key"] = c.Kind, c.Key
				if idColumn && c.FeatureID != "" {
					props["gf_feature_id"] = c.FeatureID
				}
				return send(&spatial.Feature{ID: c.FeatureID, Geometry: c.Geometry, Properties: props})
			})
		})
	}
	return pull(ctx, func(ctx context.Context, send func(*spatial.Feature) error) error {
		return j.r.ReadFeatures(ctx, j.table, j.query, func(f *store.StoredFeature) error {
			if idColumn && f.ID != "" {
				f.Properties["gf_feature_id"] = f.ID
			}
			return send(&f.Feature)
		})
	})
}

// sameTable tells whether a change's table (schema.table, or table) is t.
func sameTable(name string, t store.StoredTable) bool {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	return name == t.Name
}

// pull turns a store's read, which calls back with each feature, into the
// FeatureSource a writer pulls from: the read runs in a goroutine and hands one feature
// at a time over. stop ends the read (when the writer gave up early) and waits for it.
func pull(ctx context.Context, read func(context.Context, func(*spatial.Feature) error) error) (store.FeatureSource, func()) {
	ctx, cancel := context.WithCancel(ctx)
	p := &puller{next: make(chan *spatial.Feature), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.err = read(ctx, func(f *spatial.Feature) error {
			if f.Properties == nil {
				f.Properties = map[string]any{}
			}
			select {
			case p.next <- f:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	return p, func() { cancel(); <-p.done }
}

type puller struct {
	next chan *spatial.Feature
	done chan struct{}
	err  error // set before done is closed
}

// Next implements store.FeatureSource.
func (p *puller) Next() (*spatial.Feature, error) {
	select {
	case f := <-p.next:
		return f, nil
	case <-p.done:
		if p.err != nil {
			return nil, p.err
		}
		return nil, io.EOF
	}
}

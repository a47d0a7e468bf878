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
// FeatureSource a writer pulls from: the read runs in a goroutine and hands the features
// over in batches of pullBatch, so that the two sides (a core each, where there are
// two) meet once per batch rather than once per feature, which cost more than a tenth
// of an export's time. stop ends the read (when the writer gave up early) and waits for
// it.
func pull(ctx context.Context, read func(context.Context, func(*spatial.Feature) error) error) (store.FeatureSource, func()) {
	ctx, cancel := context.WithCancel(ctx)
	p := &puller{next: make(chan []*spatial.Feature, pullAhead), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		batch := make([]*spatial.Feature, 0, pullBatch)
		send := func() error {
			select {
			case p.next <- batch:
				batch = make([]*spatial.Feature, 0, pullBatch)
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		p.err = read(ctx, func(f *spatial.Feature) error {
			if f.Properties == nil {
				f.Properties = map[string]any{}
			}
			if batch = append(batch, f); len(batch) < pullBatch {
				return nil
			}
			return send()
		})
		if p.err == nil && len(batch) > 0 {
			p.err = send()
		}
	}()
	return p, func() { cancel(); <-p.done }
}

// pullBatch is how many features the reading goroutine hands over at a time, and
// pullAhead how many batches it may read ahead of the writer.
const (
	pullBatch = 256
	pullAhead = 2
)

type puller struct {
	next  chan []*spatial.Feature
	batch []*spatial.Feature // what is left of the batch being taken
	done  chan struct{}
	err   error // set before done is closed
}

// Next implements store.FeatureSource.
func (p *puller) Next() (*spatial.Feature, error) {
	for len(p.batch) == 0 {
		select {
		case p.batch = <-p.next:
		case <-p.done:
			// The batches sent before the read ended come first.
			select {
			case p.batch = <-p.next:
				continue
			default:
			}
			if p.err != nil {
				return nil, p.err
			}
			return nil, io.EOF
		}
	}
	f := p.batch[0]
	p.batch[0], p.batch = nil, p.batch[1:]
	return f, nil
}

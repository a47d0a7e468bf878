package export

import (
	"cmp"
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
	if rr, ok := j.r.(store.RowReader); ok && j.format != GeoJSONSeq {
		return j.rows(ctx, rr)
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

// rows is the job's table read as rows (store.RowReader), a store.RowSource whose
// Values are the layer's columns in order: the table's, then gf_feature_id.
func (j *Job) rows(ctx context.Context, rr store.RowReader) (store.FeatureSource, func()) {
	at := map[string]int{}
	for i, c := range j.table.Columns {
		at[c.Name] = i
	}
	idx := make([]int, len(j.cols)) // where each layer column's value is in a row; -1: the id
	for i, c := range j.cols {
		k, ok := at[cmp.Or(c.Property, c.Name)]
		if !ok {
			k = -1 // gf_feature_id, the only column a table export adds
		}
		idx[i] = k
	}
	p, stop := pullBatches(ctx, func(ctx context.Context, send func(*store.FeatureRow) error) error {
		return rr.ReadRows(ctx, j.table, j.query, func(r *store.FeatureRow) error {
			vals := make([]any, len(idx))
			for i, k := range idx {
				switch {
				case k >= 0:
					vals[i] = r.Values[k]
				case r.ID != "":
					vals[i] = r.ID
				}
			}
			r.Values = vals
			return send(r)
		})
	})
	return &rowSource{p: p, cols: j.cols}, stop
}

// sameTable tells whether a change's table (schema.table, or table) is t.
func sameTable(name string, t store.StoredTable) bool {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	return name == t.Name
}

// pull turns a store's read, which calls back with each feature, into the
// FeatureSource a writer pulls from (pullBatches).
func pull(ctx context.Context, read func(context.Context, func(*spatial.Feature) error) error) (store.FeatureSource, func()) {
	p, stop := pullBatches(ctx, func(ctx context.Context, send func(*spatial.Feature) error) error {
		return read(ctx, func(f *spatial.Feature) error {
			if f.Properties == nil {
				f.Properties = map[string]any{}
			}
			return send(f)
		})
	})
	return featureSource{p}, stop
}

// pullBatches runs a store's read, which calls back with each item, in a goroutine that
// hands the items over in batches of pullBatch, so that the two sides (a core each,
// where there are two) meet once per batch rather than once per item, which cost more
// than a tenth of an export's time. stop ends the read (when the writer gave up early)
// and waits for it.
func pullBatches[T any](ctx context.Context, read func(context.Context, func(T) error) error) (*puller[T], func()) {
	ctx, cancel := context.WithCancel(ctx)
	p := &puller[T]{next: make(chan []T, pullAhead), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		batch := make([]T, 0, pullBatch)
		send := func() error {
			select {
			case p.next <- batch:
				batch = make([]T, 0, pullBatch)
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		p.err = read(ctx, func(v T) error {
			if batch = append(batch, v); len(batch) < pullBatch {
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

// pullBatch is how many items the reading goroutine hands over at a time, and
// pullAhead how many batches it may read ahead of the writer.
const (
	pullBatch = 256
	pullAhead = 2
)

type puller[T any] struct {
	next  chan []T
	batch []T // what is left of the batch being taken
	done  chan struct{}
	err   error // set before done is closed
}

// take is the next item, io.EOF at the end.
func (p *puller[T]) take() (T, error) {
	var zero T
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
				return zero, p.err
			}
			return zero, io.EOF
		}
	}
	v := p.batch[0]
	p.batch[0], p.batch = zero, p.batch[1:]
	return v, nil
}

// featureSource is a puller of features.
type featureSource struct{ p *puller[*spatial.Feature] }

// Next implements store.FeatureSource.
func (s featureSource) Next() (*spatial.Feature, error) { return s.p.take() }

// rowSource is a puller of rows whose Values are cols, in order.
type rowSource struct {
	p    *puller[*store.FeatureRow]
	cols []store.Column
}

// NextRow implements store.RowSource.
func (s *rowSource) NextRow() (*store.FeatureRow, error) { return s.p.take() }

// Next implements store.FeatureSource: the row with its values by property name.
func (s *rowSource) Next() (*spatial.Feature, error) {
	r, err := s.p.take()
	if err != nil {
		return nil, err
	}
	props := make(map[string]any, len(s.cols))
	for i, c := range s.cols {
		if r.Values[i] != nil {
			props[cmp.Or(c.Property, c.Name)] = r.Values[i]
		}
	}
	return &spatial.Feature{ID: r.ID, Geometry: r.Geometry, Properties: props}, nil
}

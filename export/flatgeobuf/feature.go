package flatgeobuf

import (
	"cmp"
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"
	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// featureEncoder encodes features of one layer as size-prefixed Feature tables. It
// reuses its buffers: what encode returns is valid until the next call.
type featureEncoder struct {
	cols  []store.Column
	types []columnType
	geom  geometryEncoder
	props []byte
}

func newFeatureEncoder(l Layer) *featureEncoder {
	e := &featureEncoder{cols: l.Columns, geom: geometryEncoder{b: flatbuffers.NewBuilder(4096)}}
	for _, c := range l.Columns {
		e.types = append(e.types, columnTypeFor(c.Type))
	}
	return e
}

// encode returns f as a size-prefixed Feature table, and the box of its geometry (empty
// when it has none).
func (e *featureEncoder) encode(f *spatial.Feature) ([]byte, bbox, error) {
	return e.encodeParts(f.ID, f.Geometry, f.Properties, nil)
}

// encodeRow is encode for a row whose Values are the layer's columns, in order.
func (e *featureEncoder) encodeRow(r *store.FeatureRow) ([]byte, bbox, error) {
	if len(r.Values) != len(e.cols) {
		return nil, emptyBox, fmt.Errorf("feature %q: %d values for %d columns", r.ID, len(r.Values), len(e.cols))
	}
	return e.encodeParts(r.ID, r.Geometry, nil, r.Values)
}

// encodeParts encodes a feature whose properties are props by name, or, when vals is
// not nil, vals by column.
func (e *featureEncoder) encodeParts(id string, g orb.Geometry, props map[string]any, vals []any) ([]byte, bbox, error) {
	buf := e.props[:0]
	for i, c := range e.cols {
		prop := cmp.Or(c.Property, c.Name)
		var v any
		if vals != nil {
			v = vals[i]
		} else {
			v = props[prop]
		}
		if v == nil {
			continue
		}
		var err error
		if buf, err = appendProperty(buf, i, e.types[i], v); err != nil {
			return nil, emptyBox, &store.PropertyError{FeatureID: id, Property: prop, Type: c.Type, Value: fmt.Sprint(v)}
		}
	}
	e.props = buf
	b := e.geom.b
	b.Reset()
	geom := e.geom.encode(g)
	var pv flatbuffers.UOffsetT
	if len(buf) > 0 {
		pv = b.CreateByteVector(buf)
	}
	b.StartObject(featureFields)
	b.PrependUOffsetTSlot(featureGeometry, geom, 0)
	b.PrependUOffsetTSlot(featureProperties, pv, 0)
	b.FinishSizePrefixed(b.EndObject())
	return b.FinishedBytes(), e.geom.box, nil
}

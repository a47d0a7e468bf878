package flatgeobuf

import (
	"cmp"
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"

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
	props := e.props[:0]
	for i, c := range e.cols {
		prop := cmp.Or(c.Property, c.Name)
		v, ok := f.Properties[prop]
		if !ok || v == nil {
			continue
		}
		var err error
		if props, err = appendProperty(props, i, e.types[i], v); err != nil {
			return nil, emptyBox, &store.PropertyError{FeatureID: f.ID, Property: prop, Type: c.Type, Value: fmt.Sprint(v)}
		}
	}
	e.props = props
	b := e.geom.b
	b.Reset()
	geom := e.geom.encode(f.Geometry)
	var pv flatbuffers.UOffsetT
	if len(props) > 0 {
		pv = b.CreateByteVector(props)
	}
	b.StartObject(featureFields)
	b.PrependUOffsetTSlot(featureGeometry, geom, 0)
	b.PrependUOffsetTSlot(featureProperties, pv, 0)
	b.FinishSizePrefixed(b.EndObject())
	return b.FinishedBytes(), e.geom.box, nil
}

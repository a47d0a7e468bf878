package geojson

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/paulmach/orb"
)

// CollectionWriter writes one FeatureCollection a feature at a time, so that a
// collection of any size costs the memory of one feature: what a download of a whole
// table streams. It is not safe for concurrent use; the first error (a feature that
// does not encode, a failed write) sticks: the collection cannot be ended whole after it.
type CollectionWriter struct {
	w       io.Writer
	buf     []byte
	n       int64
	started bool
	err     error
}

// NewCollectionWriter returns a writer of one FeatureCollection to w. Nothing is written
// before the first Feature or Close.
func NewCollectionWriter(w io.Writer) *CollectionWriter { return &CollectionWriter{w: w} }

// Feature writes one feature: id is left out when nil (else a string or a number), g is
// written by AppendGeometry, props is marshalled by encoding/json (nil is null).
func (c *CollectionWriter) Feature(id any, g orb.Geometry, props any) error {
	if c.err != nil {
		return c.err
	}
	b := c.start(c.buf[:0])
	if c.n > 0 {
		b = append(b, ',')
	}
	b, err := AppendFeature(append(b, '\n'), id, g, props)
	if err != nil {
		c.err = err
		return c.err
	}
	c.buf = b
	c.n++
	_, c.err = c.w.Write(b)
	return c.err
}

// AppendFeature appends one GeoJSON Feature object to dst, as CollectionWriter writes it:
// id is left out when nil (else a string or a number), g is written by AppendGeometry,
// props is marshalled by encoding/json (nil is null). On error dst may hold part of it.
func AppendFeature(dst []byte, id any, g orb.Geometry, props any) ([]byte, error) {
	b := append(dst, "{\"type\":\"Feature\""...)
	if id != nil {
		idb, err := json.Marshal(id)
		if err != nil {
			return b, fmt.Errorf("feature id %v: %w", id, err)
		}
		b = append(append(b, `,"id":`...), idb...)
	}
	b = append(b, `,"geometry":`...)
	b, err := AppendGeometry(b, g)
	if err != nil {
		return b, fmt.Errorf("feature %v: %w", id, err)
	}
	pb, err := json.Marshal(props)
	if err != nil {
		return b, fmt.Errorf("feature %v: properties: %w", id, err)
	}
	return append(append(append(b, `,"properties":`...), pb...), '}'), nil
}

func (c *CollectionWriter) start(b []byte) []byte {
	if c.started {
		return b
	}
	c.started = true
	return append(b, `{"type":"FeatureCollection","features":[`...)
}

// Count is how many features were written.
func (c *CollectionWriter) Count() int64 { return c.n }

// Close ends the collection. members, when not nil, are marshalled as the collection's
// foreign members after "features" (a map or a struct: {"numberReturned": 12}); it must
// marshal to a JSON object.
func (c *CollectionWriter) Close(members any) error {
	if c.err != nil {
		return c.err
	}
	b := append(c.start(c.buf[:0]), "\n]"...)
	if members != nil {
		mb, err := json.Marshal(members)
		if err != nil || len(mb) < 2 || mb[0] != '{' {
			return fmt.Errorf("collection members %T: not a JSON object (%v)", members, err)
		}
		if len(mb) > 2 {
			b = append(append(b, ','), mb[1:len(mb)-1]...)
		}
	}
	b = append(b, "}\n"...)
	_, c.err = c.w.Write(b)
	if c.err == nil {
		c.err = io.ErrClosedPipe // nothing may follow the end
		return nil
	}
	return c.err
}

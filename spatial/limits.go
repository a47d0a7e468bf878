package spatial

import (
	"errors"
	"fmt"
)

// Limits bound what one feature may cost a reader, so that a hostile or broken response
// (an unterminated string, millions of nested elements, a polygon of ten million vertices)
// fails with a *TooLargeError instead of taking the machine's memory. A zero field takes
// its default from DefaultLimits; the defaults are far above any real parcel, road or
// coastline, and a task can raise them.
type Limits struct {
	// FeatureBytes bounds the encoded size of one feature in the response.
	FeatureBytes int64
	// StringBytes bounds one property value, attribute or other text token. The text of
	// a coordinate list (gml:posList, gml:coordinates) counts against FeatureBytes and
	// Vertices instead.
	StringBytes int64
	// Depth bounds nesting: of elements in a GML document, of arrays and objects in one
	// JSON value.
	Depth int
	// Vertices bounds the coordinates of one feature, over all its geometries.
	Vertices int
}

// The defaults bound one feature's memory to a few hundred MB. Real features stay far
// below them (GML nests a feature's coordinates a dozen elements deep; the depth is the
// one encoding/json and encoding/xml allow); a task whose data is genuinely larger
// raises them.
const (
	DefaultFeatureBytes = 128 << 20
	DefaultStringBytes  = 16 << 20
	DefaultDepth        = 10000
	DefaultVertices     = 5_000_000
)

// DefaultLimits returns the defaults.
func DefaultLimits() Limits {
	return Limits{FeatureBytes: DefaultFeatureBytes, StringBytes: DefaultStringBytes, Depth: DefaultDepth, Vertices: DefaultVertices}
}

// OrDefault returns l with every zero (or negative) field set to its default.
func (l Limits) OrDefault() Limits {
	d := DefaultLimits()
	if l.FeatureBytes > 0 {
		d.FeatureBytes = l.FeatureBytes
	}
	if l.StringBytes > 0 {
		d.StringBytes = l.StringBytes
	}
	if l.Depth > 0 {
		d.Depth = l.Depth
	}
	if l.Vertices > 0 {
		d.Vertices = l.Vertices
	}
	return d
}

// FeatureMeter is implemented by a reader's source that charges what is read of it to a
// memory budget (a spooled response: see tasks.Memory). A reader calls StartFeature, with
// its limits, as each feature begins, so that each feature's text is charged on its own
// and the previous feature's charge ends. The source's Read may then wait for budget, or
// fail with an error matching ErrTooLarge (a feature that may need more memory than the
// budget can give one).
type FeatureMeter interface {
	StartFeature(Limits)
}

// ErrTooLarge is matched (errors.Is) by every *TooLargeError.
var ErrTooLarge = errors.New("spatial: feature too large")

// TooLargeError is a response beyond one of a reader's Limits. It is final: the reader
// stops there, since what follows an unterminated string or a runaway nesting cannot be
// read as features. Retrying the same request gets the same answer.
type TooLargeError struct {
	// Limit is the limit's key in a task's limits: (max_feature_bytes,
	// max_string_bytes, max_depth, max_vertices), Max its value.
	Limit string
	Max   int64
	// Offset is the byte of the response where the limit was passed.
	Offset int64
	// ID and Index name the feature when the limit was passed inside one; Index is -1
	// outside features.
	ID    string
	Index int
}

func (e *TooLargeError) Error() string {
	what := map[string]string{
		"max_feature_bytes": "bytes in one feature",
		"max_string_bytes":  "bytes in one value",
		"max_depth":         "levels of nesting",
		"max_vertices":      "vertices in one feature",
	}[e.Limit]
	where := fmt.Sprintf("at byte %d of the response", e.Offset)
	switch {
	case e.Index >= 0 && e.ID != "":
		where = fmt.Sprintf("feature %q (#%d), %s", e.ID, e.Index, where)
	case e.Index >= 0:
		where = fmt.Sprintf("feature #%d, %s", e.Index, where)
	}
	return fmt.Sprintf("spatial: too large: more than %d %s (%s; raise limits.%s if the data is genuine)", e.Max, what, where, e.Limit)
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

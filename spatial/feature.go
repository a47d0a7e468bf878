package spatial

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/paulmach/orb"
)

// Feature is one decoded feature.
//
// Geometry is in the CRS's x/y order as PostGIS wants it: x is the longitude
// for geographic CRSs, whatever axis order the server wrote. It is nil when
// the feature has no geometry. Properties is never nil for features returned
// by the readers in this module; see each reader for the value types it uses.
type Feature struct {
	ID         string
	Geometry   orb.Geometry
	Properties map[string]any
	// Hash, when not nil, is the payload hash of the feature as its source delivered
	// it, kept by a transform that changed it since (its geometry made multi, say), so
	// that a stored row keeps the identity of what the server sent (Hasher.Source).
	Hash *[32]byte
}

// Reader yields features one at a time. Next returns io.EOF after the last
// feature. Besides the per-feature *FeatureError (after which Next may be
// called again), any other error is final and is returned again by later
// calls. A Reader is not safe for concurrent use.
type Reader interface {
	Next() (*Feature, error)
}

// FeatureReuser is a Reader that can reuse what it made for one feature for the next.
// After ReuseFeatures, a feature Next returned, its Properties map and its geometry's
// coordinates are valid until the next call to Next only: the Feature is overwritten,
// the map cleared and filled anew, the coordinates overwritten. It is for a caller that
// is done with each feature before it asks for the next one (a store writing rows), and
// saves the allocations of a Feature, a map and coordinate slices per feature; a caller
// that keeps features must not call it.
type FeatureReuser interface {
	ReuseFeatures()
}

// Meta is what a reader learns from the collection element or object.
// Readers may learn it only after some or all features have been read (GeoJSON
// members may follow "features"), so ask once Next has returned io.EOF for the
// full picture.
type Meta struct {
	// NumberMatched is the total number of features matching the query, -1
	// when unknown (absent, or the server said "unknown").
	NumberMatched int64
	// NumberReturned is the number of features in this response, -1 when
	// unknown.
	NumberReturned int64
	// Next is the URL of the next page when the server gave one.
	Next string
	// SRSName is the CRS the response declares (the collection's
	// boundedBy or the first geometry's srsName in GML, the "crs" member in
	// GeoJSON), empty when none was seen.
	SRSName string
}

// UnknownMeta returns a Meta with both counts unknown.
func UnknownMeta() Meta { return Meta{NumberMatched: -1, NumberReturned: -1} }

// ExceptionReport is an OGC ows:ExceptionReport (WFS 1.1/2.0) or
// ServiceExceptionReport (WFS 1.0), or the JSON equivalent, returned as the
// error of Next: servers send them with HTTP 200 too. When a report carries
// several exceptions, Code and Locator come from the first and Text joins
// all texts with "; ".
type ExceptionReport struct {
	Code    string
	Locator string
	Text    string
	Version string
}

// Error renders the code, locator and text the server sent.
func (e *ExceptionReport) Error() string {
	var b strings.Builder
	b.WriteString("spatial: server exception")
	if e.Code != "" {
		b.WriteString(" ")
		b.WriteString(e.Code)
	}
	if e.Locator != "" {
		fmt.Fprintf(&b, " (locator %q)", e.Locator)
	}
	if e.Text != "" {
		b.WriteString(": ")
		b.WriteString(e.Text)
	}
	return b.String()
}

// FeatureError is a problem with one feature, such as a curve geometry
// (gml:Arc) or malformed coordinates: that feature is refused, and the reader
// can continue with Next. Index is the 0-based position of the feature in the
// response, counting refused features; ID is empty when the feature had none.
type FeatureError struct {
	ID    string
	Index int
	Err   error
}

// Error names the feature and why it was refused.
func (e *FeatureError) Error() string {
	if e.ID == "" {
		return fmt.Sprintf("spatial: feature #%d refused: %v", e.Index, e.Err)
	}
	return fmt.Sprintf("spatial: feature %q (#%d) refused: %v", e.ID, e.Index, e.Err)
}

// Unwrap returns the cause, so errors.Is(err, ErrCurve) works.
func (e *FeatureError) Unwrap() error { return e.Err }

// NotFeaturesError says the body is not a feature collection at all: an HTML
// error page from a proxy, plain text, a JSON object of another kind. Kind is
// a one-word guess ("html", "text", "json", "xml", "empty") and Snippet the
// start of the body, whitespace collapsed, at most about 200 bytes.
type NotFeaturesError struct {
	Kind    string
	Snippet string
}

// Error gives the guessed kind and the start of the body.
func (e *NotFeaturesError) Error() string {
	return fmt.Sprintf("spatial: response is not a feature collection (%s): %q", e.Kind, e.Snippet)
}

// TruncatedError reports a body that ended before the document did: a
// connection cut mid-stream, not bad data. It matches io.ErrUnexpectedEOF
// under errors.Is, and unwraps to the parser's own error.
type TruncatedError struct {
	// Offset is how many bytes of the body were read, when known, else -1.
	Offset int64
	Err    error
}

// Error says where the body ended.
func (e *TruncatedError) Error() string {
	if e.Offset >= 0 {
		return fmt.Sprintf("spatial: body cut off after %d bytes: %v", e.Offset, e.Err)
	}
	return fmt.Sprintf("spatial: body cut off: %v", e.Err)
}

// Unwrap returns the parser's own error.
func (e *TruncatedError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, io.ErrUnexpectedEOF) true.
func (e *TruncatedError) Is(target error) bool { return target == io.ErrUnexpectedEOF }

// ErrCurve is wrapped by the FeatureError of a feature whose geometry uses
// curve segments (arcs, circles, splines) that cannot be stored as straight
// lines without inventing vertices.
var ErrCurve = errors.New("spatial: curved geometry not supported")

// Snippet returns the start of b for error messages: invalid UTF-8 dropped,
// whitespace runs collapsed to one space, cut to about max bytes.
func Snippet(b []byte, max int) string {
	var sb strings.Builder
	space := false
	for len(b) > 0 && sb.Len() < max {
		r, n := utf8.DecodeRune(b)
		b = b[n:]
		if r == utf8.RuneError && n <= 1 {
			continue
		}
		switch r {
		case ' ', '\t', '\n', '\r', '\f', '\v':
			space = true
			continue
		}
		if space && sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		space = false
		sb.WriteRune(r)
	}
	return sb.String()
}

// Walk reads r to its end, calling fn (when not nil) with each feature. Features the
// reader refuses (*FeatureError) are skipped; any other error ends the walk and is
// returned, as is an error of fn. The end of the features is a nil error.
func Walk(r Reader, fn func(*Feature) error) error {
	for {
		f, err := r.Next()
		if err == io.EOF {
			return nil
		}
		var fe *FeatureError
		if errors.As(err, &fe) {
			continue
		}
		if err != nil {
			return err
		}
		if fn != nil {
			if err := fn(f); err != nil {
				return err
			}
		}
	}
}

// Package readertest checks the contract every spatial.Reader keeps, for the readers'
// tests and fuzzers: it is test support, reached only from tests.
package readertest

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/geoflow/geoflow/spatial"
)

// Results reads r to its final error and returns each result as text: a feature's id and
// payload hash, or the error. It fails t when the reader breaks its contract: a nil
// feature (or properties) without an error, more than limit results (a reader that does
// not advance), or a final error that a further Next does not return again. A
// *spatial.FeatureError is not final: reading goes on after it.
func Results(t testing.TB, r spatial.Reader, limit int) []string {
	t.Helper()
	var out []string
	for i := 0; ; i++ {
		if i > limit {
			t.Fatalf("more results (%d) than bytes: reader does not advance", i)
		}
		f, err := r.Next()
		if err == nil {
			if f == nil || f.Properties == nil {
				t.Fatal("nil feature or properties without error")
			}
			out = append(out, fmt.Sprintf("%s %x", f.ID, spatial.PayloadHash(f)))
			continue
		}
		out = append(out, err.Error())
		var fe *spatial.FeatureError
		if errors.As(err, &fe) {
			continue
		}
		if _, again := r.Next(); again != err && !(err == io.EOF && again == io.EOF) {
			t.Fatalf("final error not sticky: %v then %v", err, again)
		}
		return out
	}
}

package harvest

import (
	"errors"
	"fmt"
	"io"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/tasks"
)

// ReadFeatures decodes a response of features asked for by id (a tasks.IDLookup) as a
// unit's response is decoded: the protocol's decoder, x/y swapped where the server writes
// latitude first (judged against the task's area), features with coordinates
// outside the CRS's domain refused and logged. An error decoding is classified by the
// protocol, for the retry handler.
func (e *Engine) ReadFeatures(env *tasks.Env, body io.Reader) ([]*spatial.Feature, error) {
	src := e.source(env, "confirm-by-id", body, e.cfg.Area)
	var out []*spatial.Feature
	for {
		f, err := src.Next()
		if errors.Is(err, io.EOF) {
			if n := src.refused.Total; n > 0 {
				// Answered but refused (a curve, coordinates off the Earth): still served, so the
				// answer is no evidence that they are gone.
				return nil, fmt.Errorf("%d features answered by id could not be read: %w", n, &src.refused)
			}
			return out, nil
		}
		if err != nil {
			return nil, e.cfg.Protocol.Classify(err)
		}
		out = append(out, f)
	}
}

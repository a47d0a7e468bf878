package export

import (
	"context"

	"github.com/geoflow/geoflow/spatial"
)

// Drain pulls every feature of j's source into fn, for the benchmarks of the reading
// side; it returns io.EOF at the end.
func Drain(ctx context.Context, j *Job, fn func(*spatial.Feature)) error {
	src, stop := j.source(ctx)
	defer stop()
	for {
		f, err := src.Next()
		if err != nil {
			return err
		}
		fn(f)
	}
}

//go:build !unix

package geojson

import "time"

func cpuTime() time.Duration { return 0 }

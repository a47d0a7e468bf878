//go:build !unix

package postgis

import "time"

func cpuTime() time.Duration { return 0 }

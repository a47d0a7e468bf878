//go:build unix

package gml

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) the process has used so far:
// on a shared machine a steadier measure of work than wall time, which
// includes waiting for a core.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

//go:build unix

package postgis

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process used, all threads (the GC's too):
// on a shared machine it says more than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

//go:build unix && !linux

package gpkg

import "golang.org/x/sys/unix"

// setLock and getLock are POSIX record locks (F_SETLK, F_GETLK): outside Linux there are
// no open file description locks. These are weaker, and geoflow's guarantees with them:
// they conflict across processes only, never within one, and closing any descriptor of
// the lock file drops all of the process's locks on it, so a process that released one
// lock (or failed to take one) may have dropped the others. A second process is refused
// only while the first one's locks stand; use Linux, or PostgreSQL, where runs must be
// kept apart for sure.
const (
	setLock = unix.F_SETLK
	getLock = unix.F_GETLK
)

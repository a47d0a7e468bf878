//go:build !linux

package gpkg

import "golang.org/x/sys/unix"

// setLock is F_SETLK: outside Linux there are no open file description locks, and POSIX
// record locks are weaker: they conflict across processes only, and closing any
// descriptor of the file drops all of the process's locks on it. A second process is
// still refused while the first one holds its locks, which is what the one-writer rule
// needs; within one process, the store's own bookkeeping (runs recorded as running) is
// what tells runs apart.
const setLock = unix.F_SETLK

package gpkg

import "golang.org/x/sys/unix"

// setLock and getLock are the open file description locks (F_OFD_SETLK, F_OFD_GETLK): a
// lock belongs to the descriptor, conflicts with any other descriptor's, this process's
// included, and ends when it is closed or the process dies.
const (
	setLock = unix.F_OFD_SETLK
	getLock = unix.F_OFD_GETLK
)

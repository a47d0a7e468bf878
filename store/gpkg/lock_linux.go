package gpkg

import "golang.org/x/sys/unix"

// setLock is F_OFD_SETLK: an open file description lock belongs to the descriptor,
// conflicts with any other descriptor's, this process's included, and ends when it is
// closed or the process dies.
const setLock = unix.F_OFD_SETLK

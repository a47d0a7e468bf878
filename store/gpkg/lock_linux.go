package gpkg

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// tryLock takes a one-byte open file description lock (F_OFD_SETLK) at off: it belongs to
// the descriptor, conflicts with any other descriptor's, and ends when it is closed or
// the process dies.
func tryLock(f *os.File, off int64, exclusive bool) (bool, error) {
	typ := int16(unix.F_RDLCK)
	if exclusive {
		typ = unix.F_WRLCK
	}
	lk := unix.Flock_t{Type: typ, Whence: io.SeekStart, Start: off, Len: 1}
	err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EACCES):
		return false, nil
	}
	return false, fmt.Errorf("locking %s: %w", f.Name(), err)
}

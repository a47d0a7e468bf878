//go:build !linux

package gpkg

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// tryLock takes a one-byte POSIX record lock at off. Outside Linux there are no open
// file description locks, and POSIX locks are weaker: they conflict across processes
// only, and closing any descriptor of the file drops all of the process's locks on it.
// A second process is still refused while the first one holds its locks, which is what
// the one-writer rule needs; within one process, the store's own bookkeeping (runs
// recorded as running) is what tells runs apart.
func tryLock(f *os.File, off int64, exclusive bool) (bool, error) {
	typ := int16(unix.F_RDLCK)
	if exclusive {
		typ = unix.F_WRLCK
	}
	lk := unix.Flock_t{Type: typ, Whence: io.SeekStart, Start: off, Len: 1}
	err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EACCES):
		return false, nil
	}
	return false, fmt.Errorf("locking %s: %w", f.Name(), err)
}

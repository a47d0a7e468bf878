//go:build unix

package gpkg

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// tryLock takes a one-byte lock at off on f (setLock: see lock_linux.go), shared or
// exclusive, without waiting; false when a conflicting lock is held.
func tryLock(f *os.File, off int64, exclusive bool) (bool, error) {
	typ := int16(unix.F_RDLCK)
	if exclusive {
		typ = unix.F_WRLCK
	}
	lk := unix.Flock_t{Type: typ, Whence: io.SeekStart, Start: off, Len: 1}
	err := unix.FcntlFlock(f.Fd(), setLock, &lk)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EACCES):
		return false, nil
	}
	return false, fmt.Errorf("locking %s: %w", f.Name(), err)
}

// probeLock tells whether a lock at off would conflict with an exclusive one, without
// taking anything (getLock).
func probeLock(f *os.File, off int64) (bool, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: off, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), getLock, &lk); err != nil {
		return false, fmt.Errorf("testing a lock of %s: %w", f.Name(), err)
	}
	return lk.Type != unix.F_UNLCK, nil
}

package gpkg

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// tryLock takes a one-byte LockFileEx lock at off: it belongs to the handle, conflicts
// with any other handle's, and ends when the handle is closed or the process dies.
func tryLock(f *os.File, off int64, exclusive bool) (bool, error) {
	flags := uint32(windows.LOCKFILE_FAIL_IMMEDIATELY)
	if exclusive {
		flags |= windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	ov := &windows.Overlapped{Offset: uint32(off), OffsetHigh: uint32(off >> 32)}
	err := windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, 1, 0, ov)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION), errors.Is(err, windows.ERROR_IO_PENDING):
		return false, nil
	}
	return false, fmt.Errorf("locking %s: %w", f.Name(), err)
}

// probeLock tells whether a lock at off is held, by taking it exclusively and letting it
// go at once (Windows has no test-only call).
func probeLock(f *os.File, off int64) (bool, error) {
	ok, err := tryLock(f, off, true)
	if err != nil || !ok {
		return !ok && err == nil, err
	}
	ov := &windows.Overlapped{Offset: uint32(off), OffsetHigh: uint32(off >> 32)}
	return false, windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, ov)
}

package files

import (
	"os"

	"golang.org/x/sys/unix"
)

// SyncFS makes every file written on the file system holding dir durable, in one call
// (syncfs(2)): the batch flush of files written with WriteFileAtomicLater.
func SyncFS(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return unix.Syncfs(int(d.Fd()))
}

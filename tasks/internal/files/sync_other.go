//go:build !linux && !windows

package files

import "syscall"

// SyncFS makes files written with WriteFileAtomicLater durable: outside Linux there is
// no syncfs(2), so every file system is flushed (sync(2)).
func SyncFS(dir string) error {
	syscall.Sync()
	return nil
}

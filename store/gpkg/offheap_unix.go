//go:build unix

package gpkg

import "golang.org/x/sys/unix"

// mapAnon is n zeroed bytes the Go collector neither scans nor counts (an anonymous
// mapping); unmapAnon unmaps them. offHeap and freeOffHeap wrap them with the
// collector's pacing (gcPace).
func mapAnon(n int) ([]byte, error) {
	return unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
}

func unmapAnon(b []byte) { _ = unix.Munmap(b) }

//go:build unix

package gpkg

import "golang.org/x/sys/unix"

// offHeap is n zeroed bytes the Go collector neither scans nor counts (an anonymous
// mapping), for fidTable; freeOffHeap unmaps them.
func offHeap(n int) ([]byte, error) {
	return unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
}

func freeOffHeap(b []byte) { _ = unix.Munmap(b) }

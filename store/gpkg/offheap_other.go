//go:build !unix

package gpkg

// offHeap is n zeroed bytes for fidTable: on the Go heap on this system.
func offHeap(n int) ([]byte, error) { return make([]byte, n), nil }

func freeOffHeap([]byte) {}

//go:build !unix

package gpkg

// mapAnon is n zeroed bytes: on the Go heap on this system.
func mapAnon(n int) ([]byte, error) { return make([]byte, n), nil }

func unmapAnon([]byte) {}

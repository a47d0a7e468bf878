package tasks

import (
	"strings"
	"testing"
)

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]ByteSize{
		"0": 0, "1048576": 1 << 20, "512KiB": 512 << 10, "64MiB": 64 << 20, "64mib": 64 << 20,
		"1 GiB": 1 << 30, "500kB": 500_000, "64MB": 64_000_000, "2GB": 2_000_000_000, "10B": 10,
	} {
		if got, err := ParseByteSize(in); err != nil || got != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1", "1.5MiB", "12 parsecs", "9999999999999GiB", "0x10"} {
		if _, err := ParseByteSize(in); err == nil || !strings.Contains(err.Error(), "size") && !strings.Contains(err.Error(), "too large") {
			t.Errorf("ParseByteSize(%q): %v; want an error", in, err)
		}
	}
}

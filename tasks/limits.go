package tasks

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/geoflow/geoflow/spatial"
)

// FeatureLimits is the `limits:` key of a task that reads features: how large one
// feature may be before the unit fails as too_large (a hostile or broken response must
// not take the machine's memory). Zero keeps spatial's default.
type FeatureLimits struct {
	MaxFeatureBytes ByteSize `yaml:"max_feature_bytes"`
	MaxStringBytes  ByteSize `yaml:"max_string_bytes"`
	MaxDepth        int      `yaml:"max_depth"`
	MaxVertices     int      `yaml:"max_vertices"`
}

// Spatial returns the limits for the readers, defaults filled in.
func (l FeatureLimits) Spatial() spatial.Limits {
	return spatial.Limits{FeatureBytes: int64(l.MaxFeatureBytes), StringBytes: int64(l.MaxStringBytes),
		Depth: l.MaxDepth, Vertices: l.MaxVertices}.OrDefault()
}

// Check reports negative limits at their keys below limits.
func (l FeatureLimits) Check(p Problems) {
	if l.MaxFeatureBytes < 0 {
		p.At("limits.max_feature_bytes", "must not be negative")
	}
	if l.MaxStringBytes < 0 {
		p.At("limits.max_string_bytes", "must not be negative")
	}
	if l.MaxDepth < 0 {
		p.At("limits.max_depth", "must not be negative")
	}
	if l.MaxVertices < 0 {
		p.At("limits.max_vertices", "must not be negative")
	}
}

// ByteSize is a size in bytes written as a whole number with an optional unit: 1048576,
// 512KiB, 64MiB, 1GiB (powers of 1024) or 500kB, 64MB, 1GB (powers of 1000).
type ByteSize int64

var byteUnits = []struct {
	suffix string
	mult   int64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"b", 1},
}

// ParseByteSize reads a ByteSize.
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a size (examples: 1048576, 512KiB, 64MiB, 1GB)", s)
	}
	if n > (1<<63-1)/mult {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return ByteSize(n * mult), nil
}

// UnmarshalText implements encoding.TextUnmarshaler, which the flow decoder uses.
func (b *ByteSize) UnmarshalText(text []byte) error {
	v, err := ParseByteSize(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

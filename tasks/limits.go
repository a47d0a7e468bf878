package tasks

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/geoflow/geoflow/spatial"
)

// FeatureLimits is the `limits:` key of a task that reads features: how large one
// feature may be before the unit fails as too_large (a hostile or broken response must
// not take the machine's memory), and how much work the harvest may plan whatever the
// server claims (a count, a next link, a transfer-limit flag). Zero keeps the default.
type FeatureLimits struct {
	MaxFeatureBytes ByteSize `yaml:"max_feature_bytes"`
	MaxStringBytes  ByteSize `yaml:"max_string_bytes"`
	MaxDepth        int      `yaml:"max_depth"`
	MaxVertices     int      `yaml:"max_vertices"`

	// MaxUnits bounds the units one task plans (tiles, pages, batches).
	MaxUnits int64 `yaml:"max_units"`
	// MaxPagesPerTile bounds the pages of one tile that cannot be split further.
	MaxPagesPerTile int64 `yaml:"max_pages_per_tile"`
	// MaxSplitDepth bounds how often a tile is cut into smaller ones.
	MaxSplitDepth int `yaml:"max_split_depth"`
	// MaxListedIDs bounds the object ids one listing may hold (arcgis_features); a
	// tile listing more is cut into smaller ones.
	MaxListedIDs int64 `yaml:"max_listed_ids"`
}

// Budget is how much work a harvest may plan: limits geoflow sets, never derived from a
// server's claims, so that a server counting 10^12 features, or flagging every answer as
// cut short, makes a task fail in seconds naming the key to raise instead of running
// without end.
type Budget struct {
	Units        int64 // limits.max_units
	PagesPerTile int64 // limits.max_pages_per_tile
	Depth        int   // limits.max_split_depth
	ListedIDs    int64 // limits.max_listed_ids
}

// The budget's defaults. A harvest plans about one and a half units per page of
// features: 100,000 units is some 60 million features at 1,000 a page. 10,000 pages of
// one spot is 10 million features stacked on it. 24 cuts take a tile of the whole world
// to a few metres. A million ids is a listing of some 8 MB.
const (
	DefaultMaxUnits        = 100_000
	DefaultMaxPagesPerTile = 10_000
	DefaultMaxSplitDepth   = 24
	DefaultMaxListedIDs    = 1_000_000
)

// Budget returns the harvest's budget, defaults filled in.
func (l FeatureLimits) Budget() Budget {
	return Budget{
		Units:        cmp.Or(l.MaxUnits, DefaultMaxUnits),
		PagesPerTile: cmp.Or(l.MaxPagesPerTile, DefaultMaxPagesPerTile),
		Depth:        cmp.Or(l.MaxSplitDepth, DefaultMaxSplitDepth),
		ListedIDs:    cmp.Or(l.MaxListedIDs, DefaultMaxListedIDs),
	}
}

// OrDefault fills the zero fields of b with the defaults.
func (b Budget) OrDefault() Budget {
	return FeatureLimits{MaxUnits: b.Units, MaxPagesPerTile: b.PagesPerTile, MaxSplitDepth: b.Depth, MaxListedIDs: b.ListedIDs}.Budget()
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
	if l.MaxUnits < 0 {
		p.At("limits.max_units", "must not be negative")
	}
	if l.MaxPagesPerTile < 0 {
		p.At("limits.max_pages_per_tile", "must not be negative")
	}
	if l.MaxSplitDepth < 0 || l.MaxSplitDepth > 40 {
		p.At("limits.max_split_depth", "must be between 1 and 40 (0 keeps the default, 24)")
	}
	if l.MaxListedIDs < 0 {
		p.At("limits.max_listed_ids", "must not be negative")
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

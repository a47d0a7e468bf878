package store

import (
	"context"

	"github.com/paulmach/orb"
)

// FeatureTables sets up and inspects feature tables.
type FeatureTables interface {
	// EnsureFeatureTable creates t when it is missing, with its geometry, bookkeeping
	// columns and indexes, and fails with a clear error when a table of that name exists
	// with incompatible columns. It is called before anything is fetched.
	EnsureFeatureTable(ctx context.Context, t *FeatureTable) error
	// FinishFeatureTable creates indexes that EnsureFeatureTable deferred for a table it
	// created. It is idempotent and cheap when there is nothing to do.
	FinishFeatureTable(ctx context.Context, t *FeatureTable) error
	// CountFeatures counts the distinct features of t inside a lon/lat box, for
	// completeness checks.
	CountFeatures(ctx context.Context, t *FeatureTable, bbox orb.Bound) (int64, error)
}

// TileStore keeps the index of map tiles written to disk.
type TileStore interface {
	// EnsureTileTable creates t when it is missing (a spatial index on footprint, a
	// unique key on z, x, y) and fails clearly when a table of that name has other columns.
	EnsureTileTable(ctx context.Context, t *TileTable) error
	// LookupTiles returns what is stored of the tiles of r that have a row, by [x, y]; a
	// tile without a row is absent from the map. One query answers a whole block of tiles.
	LookupTiles(ctx context.Context, t *TileTable, r TileRange) (map[[2]int]*StoredFile, error)
}

// AssetStore keeps the index of imagery files (WMS chips, STAC assets) written to disk.
type AssetStore interface {
	// EnsureAssetTable creates t when it is missing and fails clearly when a table of
	// that name has other columns.
	EnsureAssetTable(ctx context.Context, t *AssetTable) error
	// LookupAsset returns what is stored of one asset, or nil when it has no row.
	LookupAsset(ctx context.Context, t *AssetTable, collection, item, asset string) (*StoredFile, error)
}

package tiles

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// Blocks: a unit of many tiles.
//
// A tile is small: a few hundred bytes from a fast server, fetched in well under a
// millisecond. With a unit per tile, the unit's bookkeeping (its row recorded as a child,
// the tile looked up, the row upserted, the unit completed and committed) cost more than
// the tile itself. A block unit ("b/z/x/y/s") covers the tiles x..x+s-1 by y..y+s-1 of
// level z, x and y multiples of s, cut to the task's area, as a metatile does in
// MapProxy and TileCache: it looks its tiles up in one query, fetches them one after
// another (the run has a few more workers than rate_limit.concurrency, and the rate-limit
// handler keeps that many requests in flight), and commits every row with its done
// state in one transaction.
//
// A tile that fails for good is dead-lettered alone, as a unit "z/x/y" of its own that a
// replay fetches again by itself. When its failure says the host is in trouble (5xx,
// 429, timeouts, the network), the block's tiles not yet tried become units of their own
// instead, each with its own retries, rather than waiting out the same trouble one after
// another inside the block. When the run is asked to stop, a block stops starting tiles,
// commits those it has, and leaves the rest as single-tile units for a resume.

const (
	// maxBlockSide is the side of the largest block: 256 tiles. With blocks of 64, the
	// per-unit round trips of PostGIS still cost it a tenth of its rate
	// (docs/benchmarks.md, Tiles).
	maxBlockSide = 16
	// blocksPerWorker is how many blocks a level needs per worker for its blocks to
	// be as large as they can: fewer, and the last workers to finish would fetch alone.
	blocksPerWorker = 4
	// blockPrefix starts the keys of block units ("b/z/x/y/s").
	blockPrefix = "b/"
)

// maxBlockData bounds what a block holds of tiles kept in the store (a GeoPackage
// pyramid), whose content waits in memory for the block's commit: once past it, the
// block's remaining tiles become units of their own. The bound is checked before each
// tile, so a block holds at most this and one more tile (maxTileBytes at worst). A
// variable for tests.
var maxBlockData = 8 << 20

// groupKey names a group of tiles: "z/x/y" for one tile, "z/x/y/side" for more, after
// prefix.
func groupKey(prefix string, z, x, y, s int) string {
	if s <= 1 {
		return prefix + tileKey(z, x, y)
	}
	return prefix + tileKey(z, x, y) + "/" + strconv.Itoa(s)
}

// parseBlock reads "z/x/y/s" (a block key without its prefix) and checks the block
// exists: a side of 2 to maxBlockSide, a power of two, and a corner on a multiple of it.
func parseBlock(k string) (z, x, y, s int, err error) {
	if strings.Count(k, "/") != 3 {
		return 0, 0, 0, 0, fmt.Errorf("unit key %q is not b/z/x/y/side", blockPrefix+k)
	}
	return parseGroup(blockPrefix, k)
}

// parseGroup reads a group of tiles, "z/x/y" (one tile) or "z/x/y/s", whose key began
// with prefix, and checks it exists: a side of 2 to maxBlockSide, a power of two, and a
// corner on a multiple of it.
func parseGroup(prefix, k string) (z, x, y, s int, err error) {
	if strings.Count(k, "/") == 2 {
		z, x, y, err = parseKey(k)
		if err != nil {
			return 0, 0, 0, 0, fmt.Errorf("unit key %q: %w", prefix+k, err)
		}
		return z, x, y, 1, nil
	}
	i := strings.LastIndexByte(k, '/')
	if i < 0 {
		return 0, 0, 0, 0, fmt.Errorf("unit key %q is not %sz/x/y/side", prefix+k, prefix)
	}
	if z, x, y, err = parseKey(k[:i]); err != nil {
		return 0, 0, 0, 0, fmt.Errorf("unit key %q is not %sz/x/y/side: %w", prefix+k, prefix, err)
	}
	s, err = strconv.Atoi(k[i+1:])
	if err != nil || s < 2 || s > maxBlockSide || s&(s-1) != 0 || x%s != 0 || y%s != 0 {
		return 0, 0, 0, 0, fmt.Errorf("unit key %q is not a group of tiles: its side must be 2, 4, 8 or 16 and its corner a multiple of it", prefix+k)
	}
	return z, x, y, s, nil
}

// inFlight is how many requests the task has in flight: rate_limit.concurrency.
func inFlight(env *tasks.Env) int {
	return cmp.Or(env.RateLimit.Concurrency, retry.DefaultConcurrency)
}

// blockSide is the side of the blocks of level z over area a: the largest of 16, 8, 4 and
// 2 that still gives each request in flight blocksPerWorker blocks, else 1 (a unit per
// tile).
func blockSide(a orb.Bound, z, workers int) int {
	x0, x1, y0, y1 := tileRange(a, z)
	for s := maxBlockSide; s > 1; s /= 2 {
		if (x1/s-x0/s+1)*(y1/s-y0/s+1) >= blocksPerWorker*workers {
			return s
		}
	}
	return 1
}

// fetchUnits are the units fetching tiles x0..x1 by y0..y1 of level z: blocks of side s
// whose corners are on multiples of s, each cut to the range, or a unit per tile when s
// is 1. sp is the area the blocks are cut to, as the task's spec carries it.
func fetchUnits(z, x0, x1, y0, y1, s int, sp json.RawMessage) []store.Unit {
	if s <= 1 {
		var units []store.Unit
		for x := x0; x <= x1; x++ {
			for y := y0; y <= y1; y++ {
				units = append(units, fetchUnit(z, x, y))
			}
		}
		return units
	}
	return groups(blockPrefix, z, x0, x1, y0, y1, s, sp)
}

// expandUnits are the expansion units of tiles x0..x1 by y0..y1 of level z, one for each
// group of side s (one tile when s is 1), each planning its group's descendants.
func expandUnits(z, x0, x1, y0, y1, s int, sp json.RawMessage) []store.Unit {
	return groups(expandPrefix, z, x0, x1, y0, y1, max(s, 1), sp)
}

// groups are units named prefix+"z/x/y[/s]" for the groups of side s, corners on
// multiples of s, covering x0..x1 by y0..y1 of level z, each with the footprint of its
// tiles in that range.
func groups(prefix string, z, x0, x1, y0, y1, s int, sp json.RawMessage) []store.Unit {
	var units []store.Unit
	for bx := x0 / s * s; bx <= x1; bx += s {
		for by := y0 / s * s; by <= y1; by += s {
			b := rangeBound(store.TileRange{Z: z, X0: max(bx, x0), Y0: max(by, y0), X1: min(bx+s-1, x1), Y1: min(by+s-1, y1)})
			units = append(units, store.Unit{Key: groupKey(prefix, z, bx, by, s), BBox: &b, Spec: sp})
		}
	}
	return units
}

// specArea is the area a block or expansion unit carries in its spec, as planned.
func specArea(u store.Unit) (orb.Bound, error) {
	var sp spec
	if err := json.Unmarshal(u.Spec, &sp); err != nil {
		return orb.Bound{}, retry.Permanent(dlq.ClassInvalid, fmt.Errorf("unit %s: bad spec %s: %w", u.Key, u.Spec, err))
	}
	return orb.Bound{Min: orb.Point{sp.Area[0], sp.Area[1]}, Max: orb.Point{sp.Area[2], sp.Area[3]}}, nil
}

// rangeBound is the lon/lat footprint of a range of tiles.
func rangeBound(r store.TileRange) orb.Bound {
	return tileBound(r.Z, r.X0, r.Y0).Union(tileBound(r.Z, r.X1, r.Y1))
}

// block fetches a block's tiles (key without its prefix) one after another.
func (t *Task) block(ctx context.Context, env *tasks.Env, u store.Unit, key string) (*tasks.Output, error) {
	z, bx, by, s, err := parseBlock(key)
	if err != nil {
		return nil, retry.Permanent(dlq.ClassInvalid, err)
	}
	a, err := specArea(u)
	if err != nil {
		return nil, err
	}
	x0, x1, y0, y1 := tileRange(a, z)
	r := store.TileRange{Z: z, X0: max(bx, x0), Y0: max(by, y0), X1: min(bx+s-1, x1), Y1: min(by+s-1, y1)}
	out := &tasks.Output{TileTable: t.table}
	if r.X0 > r.X1 || r.Y0 > r.Y1 {
		return out, nil // outside the area: never planned so
	}
	stored, err := env.Tiles.LookupTiles(ctx, t.table, r)
	if err != nil {
		return nil, err
	}
	var old []string
	hostTrouble, held, stopping := false, 0, false
	for x := r.X0; x <= r.X1; x++ {
		for y := r.Y0; y <= r.Y1; y++ {
			if !stopping {
				select {
				case <-env.Stopping:
					stopping = true
				default:
				}
			}
			if hostTrouble || held > maxBlockData || stopping {
				out.Children = append(out.Children, fetchUnit(z, x, y))
				continue
			}
			g, err := t.get(ctx, env, z, x, y, stored[[2]int{x, y}])
			if err == nil {
				g.addTo(out)
				old = append(old, g.oldPath)
				if g.row != nil {
					held += len(g.row.Data)
				}
				continue
			}
			if _, sink := store.AsFault(err); sink || ctx.Err() != nil {
				// The disk (full, say), or the end of the shutdown's grace period:
				// the whole block is executed again once the runner has waited for
				// the disk, or by a resume (the files it wrote have no rows yet, and
				// are written again). A disk fault is rare, and a block retried
				// whole waits for it once instead of once per tile.
				return nil, err
			}
			out.Failed = append(out.Failed, tasks.Failure{Unit: fetchUnit(z, x, y), Err: err})
			hostTrouble = troubled(retry.ClassOf(err))
		}
	}
	switch {
	case stopping && len(out.Children) > 0:
		env.Logger.Info("stopping: the block commits the tiles it has, the rest are left for a resume",
			"unit", u.Key, "tiles_left", len(out.Children))
	case hostTrouble:
		env.Logger.Warn("a tile failed with the host in trouble: the block's remaining tiles are units of their own",
			"unit", u.Key, "tiles_left", len(out.Children))
	case len(out.Children) > 0:
		env.Logger.Info("the block holds as much tile content as it may: its remaining tiles are units of their own",
			"unit", u.Key, "bytes", held, "tiles_left", len(out.Children))
	}
	out.Remove = removeOld(old...)
	return out, nil
}

// troubled tells whether a failure of one tile says its host is in trouble, rather than
// that tile alone.
func troubled(c dlq.Class) bool {
	switch c {
	case dlq.ClassHTTP5xx, dlq.ClassRateLimited, dlq.ClassTimeout, dlq.ClassNetwork, dlq.ClassCircuitOpen, dlq.ClassTruncated:
		return true
	}
	return false
}

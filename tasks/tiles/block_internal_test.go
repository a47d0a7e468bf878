package tiles

import (
	"fmt"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

func testEnv(workers int) *tasks.Env {
	return &tasks.Env{RateLimit: retry.RateLimit{Concurrency: workers}}
}

func TestParseBlock(t *testing.T) {
	tests := []struct {
		key     string
		z, x, y int
		s       int
		err     string
	}{
		{key: "16/34800/22696/8", z: 16, x: 34800, y: 22696, s: 8},
		{key: "3/4/2/2", z: 3, x: 4, y: 2, s: 2},
		{key: "16/34800/22696", err: "is not b/z/x/y/side"},
		{key: "16/34800/22696/3", err: "side must be 2, 4, 8 or 16"},
		{key: "16/34800/22688/16", z: 16, x: 34800, y: 22688, s: 16},
		{key: "16/34800/22696/16", err: "corner a multiple"},
		{key: "16/34800/22688/32", err: "side must be 2, 4, 8 or 16"},
		{key: "16/34800/22696/1", err: "side must be 2, 4, 8 or 16"},
		{key: "16/34801/22696/8", err: "corner a multiple"},
		{key: "16/34800/22697/2", err: "corner a multiple"},
		{key: "2/8/0/4", err: "is not a tile"},
		{key: "16/a/1/8", err: "is not z/x/y"},
		{key: "16/0/0/x", err: "side must be"},
		{key: "", err: "is not b/z/x/y/side"},
		{key: "16/0/0/16/16", err: "is not b/z/x/y/side"},
	}
	for _, tt := range tests {
		z, x, y, s, err := parseBlock(tt.key)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("parseBlock(%q): %v", tt.key, err)
		case tt.err == "" && (z != tt.z || x != tt.x || y != tt.y || s != tt.s):
			t.Errorf("parseBlock(%q) = %d/%d/%d side %d", tt.key, z, x, y, s)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("parseBlock(%q) = %v, want an error with %q", tt.key, err, tt.err)
		}
	}
}

func FuzzParseBlock(f *testing.F) {
	for _, k := range []string{"16/34800/22696/8", "3/4/2/2", "0/0/0/2", "16/34800/22696/16", "///", "1/1/1/-2"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, k string) {
		z, x, y, s, err := parseBlock(k)
		if err != nil {
			return
		}
		back := strings.TrimPrefix(groupKey(blockPrefix, z, x, y, s), blockPrefix)
		if z2, x2, y2, s2, err := parseBlock(back); err != nil || z2 != z || x2 != x || y2 != y || s2 != s {
			t.Errorf("parseBlock(%q) = %d/%d/%d side %d, written %q, read back as %d/%d/%d side %d (%v)", k, z, x, y, s, back, z2, x2, y2, s2, err)
		}
		if x%s != 0 || y%s != 0 || s < 2 || s > maxBlockSide || x >= 1<<uint(z) || y >= 1<<uint(z) {
			t.Errorf("parseBlock(%q) accepted a block that does not exist", k)
		}
	})
}

func TestBlockSide(t *testing.T) {
	munich := orb.Bound{Min: orb.Point{11.45, 48.05}, Max: orb.Point{11.55, 48.15}}
	tests := []struct {
		z, workers, want int
	}{
		{z: 10, workers: 4, want: 1},  // 1x2 tiles
		{z: 16, workers: 8, want: 4},  // 19x28 tiles: 12 blocks of 8, 35 of 4
		{z: 16, workers: 2, want: 8},  // 4 blocks of 16, 12 of 8, for 2 workers
		{z: 18, workers: 8, want: 16}, // 74x110 tiles: 35 blocks of 16
		{z: 17, workers: 8, want: 8},  // 38x56 tiles: 12 blocks of 16, 35 of 8
		{z: 14, workers: 16, want: 1}, // 5x7 tiles: 12 blocks of 2
	}
	for _, tt := range tests {
		if got := blockSide(munich, tt.z, tt.workers); got != tt.want {
			x0, x1, y0, y1 := tileRange(munich, tt.z)
			t.Errorf("blockSide(z%d: %dx%d tiles, %d workers) = %d, want %d", tt.z, x1-x0+1, y1-y0+1, tt.workers, got, tt.want)
		}
	}
}

// TestPlanCoversEveryTileOnce: the units Plan and the expansions plan, followed to the
// deepest level, fetch every tile of the cover exactly once, whatever the zoom range, the
// area and the number of requests in flight; no block reaches outside the descendants of
// the expansion that planned it, so no two units share a key; and a large cover takes at
// least ten tiles a unit on average, on its deep levels too.
func TestPlanCoversEveryTileOnce(t *testing.T) {
	areas := []orb.Bound{
		{Min: orb.Point{11.45, 48.05}, Max: orb.Point{11.55, 48.15}},
		{Min: orb.Point{-0.2, 51.45}, Max: orb.Point{0.05, 51.6}}, // across the prime meridian
		{Min: orb.Point{11.4999, 48.0999}, Max: orb.Point{11.5001, 48.1001}},
	}
	for _, a := range areas {
		for _, zr := range [][2]int{{8, 18}, {12, 12}, {14, 19}, {0, 5}} {
			for _, w := range []int{1, 4, 16} {
				t.Run(fmt.Sprintf("%v z%d-%d w%d", a, zr[0], zr[1], w), func(t *testing.T) {
					tk := &Task{zmin: zr[0], zmax: zr[1], table: &store.TileTable{}}
					queue := tk.firstUnits(a, w)
					keys := map[string]bool{}
					fetched := map[string]int{}
					for len(queue) > 0 {
						u := queue[0]
						queue = queue[1:]
						if keys[u.Key] {
							t.Fatalf("unit %s planned twice", u.Key)
						}
						keys[u.Key] = true
						switch {
						case strings.HasPrefix(u.Key, expandPrefix):
							env := testEnv(w)
							out, err := tk.expand(env, u, strings.TrimPrefix(u.Key, expandPrefix))
							if err != nil {
								t.Fatal(err)
							}
							queue = append(queue, out.Children...)
						case strings.HasPrefix(u.Key, blockPrefix):
							z, bx, by, s, err := parseBlock(strings.TrimPrefix(u.Key, blockPrefix))
							if err != nil {
								t.Fatal(err)
							}
							ax0, ax1, ay0, ay1 := tileRange(a, z)
							n := 0
							for x := max(bx, ax0); x <= min(bx+s-1, ax1); x++ {
								for y := max(by, ay0); y <= min(by+s-1, ay1); y++ {
									fetched[tileKey(z, x, y)]++
									n++
								}
							}
							if n == 0 || u.BBox == nil {
								t.Errorf("block %s holds no tile of the area (bbox %v)", u.Key, u.BBox)
							}
						default:
							fetched[u.Key]++
						}
					}
					// Deep levels come in blocks too, not a unit or two per handful of
					// tiles below each expansion.
					if len(fetched) >= 10000 && len(fetched) < 10*len(keys) {
						t.Errorf("%d tiles in %d units: fewer than 10 tiles a unit", len(fetched), len(keys))
					}
					if want := CountTiles(a, tk.zmin, tk.zmax); int64(len(fetched)) != want {
						t.Errorf("%d tiles fetched, the cover has %d", len(fetched), want)
					}
					for k, n := range fetched {
						if n != 1 {
							t.Errorf("tile %s fetched %d times", k, n)
						}
					}
				})
			}
		}
	}
}

package tiles

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/internal/files"
)

var (
	_ tasks.Task     = (*Task)(nil)
	_ tasks.Finisher = (*Task)(nil)
)

const (
	// expandDepth is how many zoom levels one expansion unit plans: a tile's
	// descendants down to 4 levels (at most 340 tiles), and expansion units for the
	// level after, so a deep zoom range is planned as it goes, never all at once.
	expandDepth = 4
	// maxTileBytes bounds a tile read into memory.
	maxTileBytes = 32 << 20
	// expandPrefix starts the keys of expansion units ("e/z/x/y"); units of one tile
	// are "z/x/y", blocks of tiles "b/z/x/y/side" (block.go).
	expandPrefix = "e/"
)

// Task is a configured tiles task. Execute is safe for concurrent use and works for any
// unit it ever planned, in this process or another (resume, dead-letter replay).
type Task struct {
	id         string
	cfg        Config
	tpl        *Template
	zmin, zmax int
	table      *store.TileTable

	mu      sync.Mutex
	ensured bool
}

// spec is what an expansion unit carries: the area its descendants are cut to, so that
// a replay plans exactly what the run would have (bbox_from and --bbox included).
type spec struct {
	Area [4]float64 `json:"area"`
}

// ensure creates the index table once; a failure is not remembered, so a later unit
// (or a replay) tries again.
func (t *Task) ensure(ctx context.Context, env *tasks.Env) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ensured {
		return nil
	}
	if err := env.Tiles.EnsureTileTable(ctx, t.table); err != nil {
		return err
	}
	if !t.table.InStore {
		if err := os.MkdirAll(t.cfg.Target.Dir, 0o755); err != nil {
			return store.DiskFault("creating target.dir "+t.cfg.Target.Dir, err)
		}
	}
	t.ensured = true
	return nil
}

// area returns the lon/lat area to mirror: bbox, or the extent bbox_from names, cut to
// the run's --bbox. ok is false when nothing is left.
func (t *Task) area(ctx context.Context, env *tasks.Env) (orb.Bound, bool, error) {
	var a orb.Bound
	switch {
	case t.cfg.BBox != nil:
		b := *t.cfg.BBox
		a = orb.Bound{Min: orb.Point{b[0], b[1]}, Max: orb.Point{b[2], b[3]}}
	default:
		b, ok, err := env.Records.TaskExtent(ctx, env.Flow, t.cfg.BBoxFrom)
		if err != nil {
			return a, false, fmt.Errorf("bbox_from %q: %w", t.cfg.BBoxFrom, err)
		}
		if !ok {
			return a, false, fmt.Errorf("bbox_from: task %q of flow %q has no finished run that stored anything "+
				"(is it a task of this flow? list it in depends_on: [%s] so that it runs first)", t.cfg.BBoxFrom, env.Flow, t.cfg.BBoxFrom)
		}
		a = b
		env.Logger.Info("area from another task's extent", "bbox_from", t.cfg.BBoxFrom, "bbox", fmtBound(a))
	}
	if env.Area != nil {
		if !a.Intersects(*env.Area) {
			return a, false, nil
		}
		a = intersect(a, *env.Area)
	}
	return a, true, nil
}

// Plan implements tasks.Task: the tiles of the first zoom level, in blocks, and an
// expansion unit per block of it that plans the levels below as the run goes.
func (t *Task) Plan(ctx context.Context, env *tasks.Env) ([]store.Unit, error) {
	if err := t.ensure(ctx, env); err != nil {
		return nil, err
	}
	a, ok, err := t.area(ctx, env)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &tasks.OutsideArea{Area: a}
	}
	if err := t.areaMeets(ctx, env, a); err != nil {
		return nil, err
	}
	units := t.firstUnits(a, inFlight(env))
	x0, x1, y0, y1 := tileRange(a, t.zmin)
	env.Logger.Info("tiles planned", "zoom", fmt.Sprintf("%d-%d", t.zmin, t.zmax), "first_level_tiles", (x1-x0+1)*(y1-y0+1),
		"total_tiles", CountTiles(a, t.zmin, t.zmax), "units", len(units), "bbox", fmtBound(a))
	return units, nil
}

// firstUnits are the units Plan plans over area a with n requests in flight.
func (t *Task) firstUnits(a orb.Bound, n int) []store.Unit {
	sp, _ := json.Marshal(spec{Area: [4]float64{a.Min[0], a.Min[1], a.Max[0], a.Max[1]}})
	x0, x1, y0, y1 := tileRange(a, t.zmin)
	side := blockSide(a, t.zmin, n)
	units := fetchUnits(t.zmin, x0, x1, y0, y1, side, sp)
	if t.zmax > t.zmin {
		units = append(units, expandUnits(t.zmin, x0, x1, y0, y1, side, sp)...)
	}
	return units
}

func fetchUnit(z, x, y int) store.Unit {
	b := tileBound(z, x, y)
	return store.Unit{Key: tileKey(z, x, y), BBox: &b}
}

func tileKey(z, x, y int) string {
	return strconv.Itoa(z) + "/" + strconv.Itoa(x) + "/" + strconv.Itoa(y)
}

// parseKey reads "z/x/y" and checks the tile exists.
func parseKey(k string) (z, x, y int, err error) {
	parts := strings.Split(k, "/")
	if len(parts) != 3 {
		return 0, 0, 0, fmt.Errorf("unit key %q is not z/x/y", k)
	}
	var v [3]int
	for i, p := range parts {
		if v[i], err = strconv.Atoi(p); err != nil {
			return 0, 0, 0, fmt.Errorf("unit key %q is not z/x/y", k)
		}
	}
	z, x, y = v[0], v[1], v[2]
	if z < 0 || z > MaxZoom || x < 0 || y < 0 || x >= 1<<uint(z) || y >= 1<<uint(z) {
		return 0, 0, 0, fmt.Errorf("unit key %q is not a tile", k)
	}
	return z, x, y, nil
}

// CountTiles returns how many tiles levels zmin..zmax hold over a.
func CountTiles(a orb.Bound, zmin, zmax int) int64 {
	var n int64
	for z := zmin; z <= zmax; z++ {
		x0, x1, y0, y1 := tileRange(a, z)
		n += int64(x1-x0+1) * int64(y1-y0+1)
	}
	return n
}

// Execute implements tasks.Task.
func (t *Task) Execute(ctx context.Context, env *tasks.Env, u store.Unit) (*tasks.Output, error) {
	if err := t.ensure(ctx, env); err != nil {
		return nil, err
	}
	if rest, ok := strings.CutPrefix(u.Key, expandPrefix); ok {
		return t.expand(env, u, rest)
	}
	if rest, ok := strings.CutPrefix(u.Key, blockPrefix); ok {
		return t.block(ctx, env, u, rest)
	}
	z, x, y, err := parseKey(u.Key)
	if err != nil {
		return nil, retry.Permanent(dlq.ClassInvalid, err)
	}
	return t.fetch(ctx, env, u, z, x, y)
}

// expand plans an expansion unit's children: the descendants of its group of tiles over
// the area for the next expandDepth levels, in blocks no wider than the group's
// descendants on each level (so that two expansion units never plan the same block), and
// expansion units below them, one for each block of the last level.
func (t *Task) expand(env *tasks.Env, u store.Unit, key string) (*tasks.Output, error) {
	z, x, y, s, err := parseGroup(expandPrefix, key)
	if err != nil {
		return nil, retry.Permanent(dlq.ClassInvalid, err)
	}
	a, err := specArea(u)
	if err != nil {
		return nil, err
	}
	var children []store.Unit
	last := min(z+expandDepth, t.zmax)
	for zz := z + 1; zz <= last; zz++ {
		d := uint(zz - z)
		ax0, ax1, ay0, ay1 := tileRange(a, zz)
		cx0, cx1 := max(x<<d, ax0), min((x+s)<<d-1, ax1)
		cy0, cy1 := max(y<<d, ay0), min((y+s)<<d-1, ay1)
		if cx0 > cx1 || cy0 > cy1 {
			continue
		}
		side := min(blockSide(a, zz, inFlight(env)), s<<d)
		children = append(children, fetchUnits(zz, cx0, cx1, cy0, cy1, side, u.Spec)...)
		if zz == last && last < t.zmax {
			children = append(children, expandUnits(zz, cx0, cx1, cy0, cy1, side, u.Spec)...)
		}
	}
	return &tasks.Output{Children: children}, nil
}

// response is what a tile request brought back.
type response struct {
	notModified bool
	missing     bool
	body        []byte
	format      string
	contentType string
	etag        string
	lastMod     string
}

// fetch downloads one tile, revalidating what is stored, and puts its file in place: a
// unit of one tile (a replayed dead letter, or a tile left over from a block).
func (t *Task) fetch(ctx context.Context, env *tasks.Env, u store.Unit, z, x, y int) (*tasks.Output, error) {
	found, err := env.Tiles.LookupTiles(ctx, t.table, store.TileRange{Z: z, X0: x, Y0: y, X1: x, Y1: y})
	if err != nil {
		return nil, err
	}
	got, err := t.get(ctx, env, z, x, y, found[[2]int{x, y}])
	if err != nil {
		return nil, err
	}
	out := &tasks.Output{TileTable: t.table}
	got.addTo(out)
	out.Remove = removeOld(got.oldPath)
	return out, nil
}

// got is what one tile's request brought, for the unit's output: its row (nil for a
// 304), its counts, and a file the tile no longer needs once the row commits.
type got struct {
	row     *store.TileRow
	counts  store.Counts
	oldPath string
}

func (g got) addTo(out *tasks.Output) {
	if g.row != nil {
		out.Tiles = append(out.Tiles, *g.row)
	}
	out.Counts.Add(g.counts)
}

// removeOld lists the files tiles no longer need once their rows commit (a tile whose
// format changed has its previous file under another name), for Output.Remove.
func removeOld(paths ...string) []string {
	var old []string
	for _, p := range paths {
		if p != "" {
			old = append(old, p)
		}
	}
	return old
}

// get downloads tile z/x/y, revalidating what is stored of it, and puts its file in
// place.
func (t *Task) get(ctx context.Context, env *tasks.Env, z, x, y int, stored *store.StoredFile) (got, error) {
	key := tileKey(z, x, y)
	// Revalidate only what is really on disk, byte for byte: a row whose file was
	// deleted, or lost its last rename in a crash, is fetched in full again.
	revalidate := t.intact(stored) && (stored.ETag != "" || stored.LastModified != "")
	accept := []int{http.StatusNotModified}
	if t.cfg.MissingOK {
		accept = append(accept, http.StatusNotFound)
	}
	tileURL := t.tpl.Expand(z, x, y)
	req := retry.Request{
		Unit: env.TaskID + "/" + key, Policy: env.Retry, RateLimit: env.RateLimit, Redirects: env.Redirects, AcceptStatus: accept,
		New: func(ctx context.Context) (*http.Request, error) {
			r, err := http.NewRequestWithContext(ctx, http.MethodGet, tileURL, nil)
			if err != nil {
				return nil, err
			}
			for k, v := range t.cfg.Headers {
				r.Header.Set(k, v)
			}
			if r.Header.Get("User-Agent") == "" {
				r.Header.Set("User-Agent", "geoflow")
			}
			r.Header.Set("Accept", "image/*")
			if revalidate {
				if stored.ETag != "" {
					r.Header.Set("If-None-Match", stored.ETag)
				}
				if stored.LastModified != "" {
					r.Header.Set("If-Modified-Since", stored.LastModified)
				}
			}
			return r, nil
		},
	}
	var resp response
	err := env.HTTP.Do(ctx, req, func(hr *http.Response) error {
		resp = response{contentType: hr.Header.Get("Content-Type"), etag: hr.Header.Get("ETag"), lastMod: hr.Header.Get("Last-Modified")}
		switch {
		case hr.StatusCode == http.StatusNotModified:
			if !revalidate {
				return retry.Permanent(dlq.ClassHTTP4xx, errors.New("304 Not Modified to a request that was not conditional"))
			}
			resp.notModified = true
			return nil
		case hr.StatusCode == http.StatusNotFound, hr.StatusCode == http.StatusNoContent:
			if !t.cfg.MissingOK {
				return retry.Permanent(dlq.ClassHTTP4xx, fmt.Errorf("%s: no tile here (set missing_ok: true to record such tiles as missing)", hr.Status))
			}
			resp.missing = true
			return nil
		}
		body, err := io.ReadAll(io.LimitReader(hr.Body, maxTileBytes+1))
		if err != nil {
			return err // the handler classifies a cut-off body as truncated, and retries
		}
		if len(body) > maxTileBytes {
			return retry.Permanent(dlq.ClassParse, fmt.Errorf("tile larger than %d MiB", maxTileBytes>>20))
		}
		if cl := hr.ContentLength; cl >= 0 && int64(len(body)) != cl {
			return retry.Transient(dlq.ClassTruncated, fmt.Errorf("%d of %d bytes", len(body), cl))
		}
		resp.format, err = files.CheckImage(resp.contentType, body)
		if err != nil {
			return err
		}
		resp.body = body
		return nil
	})
	if err != nil {
		return got{}, fmt.Errorf("fetching tile %s: %w", key, err)
	}
	return t.output(z, x, y, stored, resp)
}

// output is what a tile's response means for the unit: nothing for a 304, a missing row
// for a 404 with missing_ok, else the file (written atomically here, before the row
// commits; a crash in between leaves a file without a row, which the next run does not
// trust and overwrites; a crash that loses the rename leaves a row whose hash the file
// does not match, which the next run detects and fetches again) and its row.
func (t *Task) output(z, x, y int, stored *store.StoredFile, resp response) (got, error) {
	row := store.TileRow{Z: z, X: x, Y: y, Footprint: tileBound(z, x, y), ContentType: resp.contentType, ETag: resp.etag, LastModified: resp.lastMod}
	var g got
	switch {
	case resp.notModified:
		g.counts.Skipped = 1
		return g, nil
	case resp.missing:
		row.Status = store.FileMissing
		if stored != nil && stored.Status == store.FileOK {
			g.oldPath = stored.Path // the server no longer has it
		}
		g.counts.Skipped = 1
	default:
		sum := sha256.Sum256(resp.body)
		row.Status, row.Hash, row.Bytes = store.FileOK, sum[:], int64(len(resp.body))
		if !t.table.InStore {
			row.Path = filepath.Join(t.cfg.Target.Dir, strconv.Itoa(z), strconv.Itoa(x), strconv.Itoa(y)+"."+resp.format)
		}
		g.counts.Bytes = row.Bytes
		switch {
		case t.table.InStore:
			// Kept in the store: the content goes with its row, in the unit's
			// transaction, so there is no file to write or to lose.
			row.Path, row.Data = "", resp.body
			switch {
			case stored == nil:
				g.counts.Inserted = 1
			case bytes.Equal(stored.Hash, row.Hash):
				g.counts.Skipped = 1
			default:
				g.counts.Updated = 1
			}
		case t.intact(stored) && bytes.Equal(stored.Hash, row.Hash) && stored.Path == row.Path:
			// Same content from a server that does not revalidate: refresh the
			// validators, leave the file alone.
			g.counts.Skipped = 1
		default:
			if err := files.WriteFileAtomicLater(row.Path, resp.body); err != nil {
				return got{}, store.DiskFault("writing "+row.Path, err)
			}
			if stored != nil && stored.Path != "" && stored.Path != row.Path {
				g.oldPath = stored.Path // another format than before
			}
			if stored == nil {
				g.counts.Inserted = 1
			} else {
				g.counts.Updated = 1
			}
		}
	}
	g.row = &row
	return g, nil
}

// Finish implements tasks.Finisher: the tiles written during the run, without a flush
// each, are made durable in one syncfs before the run can report them done. An
// interrupted run skips this; a tile it lost in an OS crash fails its sha-256 check on
// the next run and is fetched again.
func (t *Task) Finish(ctx context.Context, env *tasks.Env) error {
	if t.table.InStore {
		return nil
	}
	if err := files.SyncFS(t.cfg.Target.Dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return store.DiskFault("flushing the tiles under "+t.cfg.Target.Dir, err)
	}
	return nil
}

// intact tells whether a stored tile is really there, byte for byte: a row whose file was
// deleted, or lost its last rename in a crash, is not. A tile kept in the store is there
// whenever its row is.
func (t *Task) intact(stored *store.StoredFile) bool {
	if stored == nil || stored.Status != store.FileOK {
		return false
	}
	return t.table.InStore || files.FileHas(stored.Path, stored.Bytes, stored.Hash)
}

func fmtBound(b orb.Bound) string {
	return fmt.Sprintf("%g,%g,%g,%g", b.Min[0], b.Min[1], b.Max[0], b.Max[1])
}

func intersect(a, b orb.Bound) orb.Bound {
	return orb.Bound{
		Min: orb.Point{math.Max(a.Min[0], b.Min[0]), math.Max(a.Min[1], b.Min[1])},
		Max: orb.Point{math.Min(a.Max[0], b.Max[0]), math.Min(a.Max[1], b.Max[1])},
	}
}

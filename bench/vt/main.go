// Command vt measures what a map costs a geoflow UI: it asks a running geoflow ui for
// the vector tiles of one table that cover an area, across zoom levels, one request at
// a time as a cold browser would (no ETag), and prints the latency (p50, p95, max), the
// tile sizes and how many were thinned, by zoom and in all. bench/vt.sh runs it against
// both stores.
//
//	go run ./bench/vt -url http://127.0.0.1:8080 -table parcels -bbox 11.45,48.05,11.55,48.15
package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/maptile"
)

func main() {
	base := flag.String("url", "http://127.0.0.1:8080", "the geoflow UI")
	table := flag.String("table", "parcels", "the table")
	bbox := flag.String("bbox", "11.45,48.05,11.55,48.15", "the area the tiles cover, lon/lat")
	n := flag.Int("tiles", 200, "how many tiles, spread over the zoom levels")
	lo := flag.Int("min-zoom", 10, "the first zoom level")
	hi := flag.Int("max-zoom", 16, "the last zoom level")
	label := flag.String("label", "", "the store, for the table's first column")
	flag.Parse()
	b, err := parseBBox(*bbox)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	tiles := pick(b, maptile.Zoom(*lo), maptile.Zoom(*hi), *n)
	res, err := fetch(*base, *table, tiles)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	report(os.Stdout, *label, res)
}

func parseBBox(s string) (orb.Bound, error) {
	p := strings.Split(s, ",")
	if len(p) != 4 {
		return orb.Bound{}, fmt.Errorf("-bbox %q: want minx,miny,maxx,maxy", s)
	}
	var v [4]float64
	for i, x := range p {
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			return orb.Bound{}, fmt.Errorf("-bbox %q: %v", s, err)
		}
		v[i] = f
	}
	return orb.Bound{Min: orb.Point{v[0], v[1]}, Max: orb.Point{v[2], v[3]}}, nil
}

// pick chooses n tiles that meet b: every tile of the lower levels, then an even share
// of each deeper level's tiles (every k-th), so that every level is measured.
func pick(b orb.Bound, lo, hi maptile.Zoom, n int) []maptile.Tile {
	levels := make([][]maptile.Tile, 0, hi-lo+1)
	for z := lo; z <= hi; z++ {
		min, max := maptile.At(orb.Point{b.Min[0], b.Max[1]}, z), maptile.At(orb.Point{b.Max[0], b.Min[1]}, z)
		var ts []maptile.Tile
		for x := min.X; x <= max.X; x++ {
			for y := min.Y; y <= max.Y; y++ {
				ts = append(ts, maptile.New(x, y, z))
			}
		}
		levels = append(levels, ts)
	}
	var out []maptile.Tile
	left := n
	for i, ts := range levels {
		share := left / (len(levels) - i)
		if len(ts) <= share {
			out = append(out, ts...)
			left -= len(ts)
			continue
		}
		step := float64(len(ts)) / float64(share)
		for k := range share {
			out = append(out, ts[int(float64(k)*step)])
		}
		left -= share
	}
	return out
}

type result struct {
	tile     maptile.Tile
	d        time.Duration
	bytes    int
	features int
	thinned  bool
}

func fetch(base, table string, tiles []maptile.Tile) ([]result, error) {
	c := &http.Client{Timeout: time.Minute}
	out := make([]result, 0, len(tiles))
	for _, t := range tiles {
		url := fmt.Sprintf("%s/vt/%s/%d/%d/%d.mvt", base, table, t.Z, t.X, t.Y)
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Accept-Encoding", "gzip") // as a browser asks
		start := time.Now()
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != 200 && resp.StatusCode != 204 {
			return nil, fmt.Errorf("%s: %s: %s", url, resp.Status, body)
		}
		f, _ := strconv.Atoi(resp.Header.Get("X-Geoflow-Features"))
		out = append(out, result{t, d, len(body), f, resp.Header.Get("X-Geoflow-Thinned") == "true"})
	}
	return out, nil
}

func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[max(0, min(len(s)-1, i))]
}

func report(w io.Writer, label string, res []result) {
	fmt.Fprintln(w, "| store | zoom | tiles | p50 | p95 | max | features/tile (mean) | KB/tile gzipped (mean) | thinned |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|")
	byZoom := map[maptile.Zoom][]result{}
	var zooms []maptile.Zoom
	for _, r := range res {
		if _, ok := byZoom[r.tile.Z]; !ok {
			zooms = append(zooms, r.tile.Z)
		}
		byZoom[r.tile.Z] = append(byZoom[r.tile.Z], r)
	}
	row := func(z string, rs []result) {
		var ds []time.Duration
		var f, b, thin int
		for _, r := range rs {
			ds = append(ds, r.d)
			f += r.features
			b += r.bytes
			if r.thinned {
				thin++
			}
		}
		ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %d | %.1f | %d |\n", label, z, len(rs), ms(quantile(ds, 0.5)), ms(quantile(ds, 0.95)),
			ms(slices.Max(ds)), f/len(rs), float64(b)/1024/float64(len(rs)), thin)
	}
	for _, z := range zooms {
		row(strconv.Itoa(int(z)), byZoom[z])
	}
	row("all", res)
}

// Command gpkgwrite measures the GeoPackage store's write path alone: N parcels like the
// sample WFS's, written as units of -unit features by -workers goroutines as a harvest
// writes them (BeginUnit, WriteFeatures, Complete, Commit), then the table finished (its
// R-tree). It prints wall, user and sys seconds, CPU µs per feature and peak RSS.
//
//	go run ./bench/gpkgwrite -n 200000
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/gpkg"
)

type slice []*spatial.Feature

func (f *slice) Next() (*spatial.Feature, error) {
	if len(*f) == 0 {
		return nil, io.EOF
	}
	x := (*f)[0]
	*f = (*f)[1:]
	return x, nil
}

func parcel(i int, _ *rand.Rand) *spatial.Feature {
	rng := rand.New(rand.NewPCG(uint64(i), 7))
	x, y := 11.45+rng.Float64()*0.1, 48.05+rng.Float64()*0.1
	n := 5 + rng.IntN(4)
	r := make(orb.Ring, 0, n+1)
	for j := range n {
		a := 2 * math.Pi * float64(j) / float64(n)
		r = append(r, orb.Point{x + 0.0003*math.Cos(a), y + 0.0002*math.Sin(a)})
	}
	r = append(r, r[0])
	return &spatial.Feature{ID: fmt.Sprintf("parcels.%d", i), Geometry: orb.Polygon{r}, Properties: map[string]any{
		"parcel_id": fmt.Sprintf("P-%07d", i), "cadastre_no": float64(1000000 + i), "area_m2": rng.Float64() * 2000,
		"zone": "R2", "Land-Use": "residential", "owner_count": float64(1 + i%4), "assessed_value": float64(i%997) * 1234.5,
		"is_public": i%9 == 0, "surveyed": "2019-05-03", "updated_at": "2024-01-02T03:04:05Z"}}
}

func main() {
	n := flag.Int("n", 200000, "features")
	unit := flag.Int("unit", 1000, "features per unit")
	workers := flag.Int("workers", 4, "concurrent units")
	prof := flag.String("cpuprofile", "", "write a CPU profile")
	dir := flag.String("dir", "", "directory for the file (a temporary one by default)")
	flag.Parse()
	ctx := context.Background()
	if *dir == "" {
		d, err := os.MkdirTemp("", "gpkgwrite")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	s, err := gpkg.Open(ctx, filepath.Join(*dir, "w.gpkg"), nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := s.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	cols := []store.Column{{Name: "parcel_id", Property: "parcel_id", Type: store.TypeText}, {Name: "cadastre_no", Property: "cadastre_no", Type: store.TypeBigint},
		{Name: "area_m2", Property: "area_m2", Type: store.TypeDouble}, {Name: "zone", Property: "zone", Type: store.TypeText},
		{Name: "land_use", Property: "Land-Use", Type: store.TypeText}, {Name: "owner_count", Property: "owner_count", Type: store.TypeBigint},
		{Name: "assessed_value", Property: "assessed_value", Type: store.TypeNumeric}, {Name: "is_public", Property: "is_public", Type: store.TypeBoolean},
		{Name: "surveyed", Property: "surveyed", Type: store.TypeDate}, {Name: "updated_at", Property: "updated_at", Type: store.TypeTimestamptz}}
	table := store.FeatureTable{Name: "parcels", SRID: 4326, Columns: cols}
	if err := s.EnsureFeatureTable(ctx, &table); err != nil {
		log.Fatal(err)
	}
	run, err := s.StartRun(ctx, store.RunStart{Flow: "bench"})
	if err != nil {
		log.Fatal(err)
	}
	units := (*n + *unit - 1) / *unit
	us := make([]store.Unit, units)
	for i := range us {
		us[i] = store.Unit{Key: fmt.Sprint(i)}
	}
	if err := s.AddUnits(ctx, run.ID, "a", us); err != nil {
		log.Fatal(err)
	}
	if *prof != "" {
		f, _ := os.Create(*prof)
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	var r0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	start := time.Now()
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var total store.Counts
	for w := range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for u := range next {
				fs := make(slice, 0, *unit)
				for i := u * *unit; i < min(*n, (u+1)**unit); i++ {
					fs = append(fs, parcel(i, rng))
				}
				if u > 0 && u%10 == 0 { // overlapping tiles return a few features twice
					fs = append(fs, parcel(u**unit-1, rng), parcel(u**unit-2, rng))
				}
				ref := store.UnitRef{RunID: run.ID, TaskID: "a", Key: fmt.Sprint(u)}
				tx, err := s.BeginUnit(ctx, ref)
				if err != nil {
					log.Fatal(err)
				}
				c, err := tx.WriteFeatures(ctx, &table, &fs)
				if err != nil {
					log.Fatal(err)
				}
				if err := tx.Complete(ctx, c, nil, nil, time.Now()); err != nil {
					log.Fatal(err)
				}
				if err := tx.Commit(ctx); err != nil {
					log.Fatal(err)
				}
				mu.Lock()
				total.Inserted += c.Inserted
				total.Skipped += c.Skipped
				total.Overlap += c.Overlap
				mu.Unlock()
			}
		}()
	}
	for u := range units {
		next <- u
	}
	close(next)
	wg.Wait()
	written := time.Since(start)
	if err := s.FinishFeatureTable(ctx, &table); err != nil {
		log.Fatal(err)
	}
	if _, err := s.FinishRun(ctx, run.ID, store.Done, ""); err != nil {
		log.Fatal(err)
	}
	run.Close()
	s.Close()
	if false {
		log.Fatal(err)
	}
	wall := time.Since(start)
	var r1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	usr := time.Duration(r1.Utime.Nano() - r0.Utime.Nano())
	sys := time.Duration(r1.Stime.Nano() - r0.Stime.Nano())
	fi, _ := os.Stat(filepath.Join(*dir, "w.gpkg"))
	fmt.Printf("%d features (%d inserted, %d skipped, %d overlap): wall %.2fs (writes %.2fs), user %.2fs, sys %.2fs, %.1f us/feature CPU, peak RSS %d MB, file %d MB\n",
		*n, total.Inserted, total.Skipped, total.Overlap, wall.Seconds(), written.Seconds(), usr.Seconds(), sys.Seconds(),
		float64(usr+sys)/float64(time.Microsecond)/float64(*n), r1.Maxrss/1024, fi.Size()>>20)
}

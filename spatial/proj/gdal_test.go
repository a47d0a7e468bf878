package proj

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/paulmach/orb"
)

// gdaltransform finds the tool, as the other GDAL checks do: without it (or in -short
// mode) the test skips, unless GEOFLOW_REQUIRE_GDAL=1 makes that a failure.
func gdaltransform(t *testing.T) string {
	t.Helper()
	if testing.Short() && os.Getenv("GEOFLOW_REQUIRE_GDAL") != "1" {
		t.Skip("asking PROJ for every test point takes a while; skipped in -short mode")
	}
	path, err := exec.LookPath("gdaltransform")
	if err != nil {
		if os.Getenv("GEOFLOW_REQUIRE_GDAL") == "1" {
			t.Fatalf("GEOFLOW_REQUIRE_GDAL=1 but gdaltransform is not on PATH: %v", err)
		}
		t.Skipf("gdaltransform missing (GDAL is only for checks): %v", err)
	}
	return path
}

// sample keeps every nth code, the first and the last, and every code that is not a
// UTM zone (one of each other method).
func sample(codes []int, n int) []int {
	var out []int
	for i, c := range codes {
		utm := c >= 32601 && c <= 32760 || c >= 25828 && c <= 25838 || c >= 26901 && c <= 26923
		if !utm || i%n == 0 || i == len(codes)-1 {
			out = append(out, c)
		}
	}
	return out
}

// projAnswers asks PROJ, through gdaltransform, for pts (lon/lat) in EPSG code.
func projAnswers(tool string, code int, pts []orb.Point) ([]orb.Point, error) {
	var in bytes.Buffer
	for _, p := range pts {
		fmt.Fprintf(&in, "%.9f %.9f\n", p[0], p[1])
	}
	cmd := exec.Command(tool, "-s_srs", "EPSG:4326", "-t_srs", fmt.Sprintf("EPSG:%d", code), "-output_xy")
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("gdaltransform to EPSG:%d: %w", code, err)
	}
	lines := strings.Fields(string(out))
	if len(lines) != 2*len(pts) {
		return nil, fmt.Errorf("gdaltransform to EPSG:%d: %d numbers for %d points", code, len(lines), len(pts))
	}
	res := make([]orb.Point, len(pts))
	for i := range res {
		if _, err := fmt.Sscan(lines[2*i]+" "+lines[2*i+1], &res[i][0], &res[i][1]); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// TestPROJRecompute asks the PROJ on this machine (through GDAL) again for every point of
// testdata/proj.txt and checks that the file still says what PROJ says (within its
// micrometre rounding), so that the unit tests' reference is PROJ's; with -update it
// rewrites the file.
func TestPROJRecompute(t *testing.T) {
	tool := gdaltransform(t)
	var refs []reference
	var file strings.Builder
	file.WriteString("# code lon lat x y: PROJ's x/y for lon/lat (EPSG:4326) in EPSG:code, from gdaltransform -s_srs EPSG:4326 -t_srs EPSG:code.\n")
	file.WriteString("# Written by go test ./spatial/proj -run TestPROJRecompute -update.\n")
	// One gdaltransform per CRS, its start-up most of the cost: a few at a time, and
	// without -update every fifth CRS (every method and family among them), the rest
	// of the file is checked against the stored answers alone (TestAgainstPROJ).
	codes := projected()
	if !*update {
		codes = sample(codes, 5)
	}
	answers, errs := make([][]orb.Point, len(codes)), make([]error, len(codes))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.NumCPU()+1)
	for i, code := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			answers[i], errs[i] = projAnswers(tool, code, grid(code))
		}()
	}
	wg.Wait()
	for ci, code := range codes {
		pts, got := grid(code), answers[ci]
		if errs[ci] != nil {
			t.Fatal(errs[ci])
		}
		for i, p := range pts {
			refs = append(refs, reference{code: code, lonLat: p, fwd: got[i]})
			fmt.Fprintf(&file, "%d %.9g %.9g %.6f %.6f\n", code, p[0], p[1], got[i][0], got[i][1])
		}
	}
	if *update {
		if err := os.WriteFile(projFile, []byte(file.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stored := map[[3]float64]orb.Point{}
	for _, s := range readReferences(t) {
		stored[[3]float64{float64(s.code), s.lonLat[0], s.lonLat[1]}] = s.fwd
	}
	for _, r := range refs {
		s, ok := stored[[3]float64{float64(r.code), r.lonLat[0], r.lonLat[1]}]
		if !ok || math.Hypot(s[0]-r.fwd[0], s[1]-r.fwd[1]) > 1e-6 {
			t.Fatalf("%s: EPSG:%d %v is %v (found: %v), PROJ now says %v: run with -update", projFile, r.code, r.lonLat, s, ok, r.fwd)
		}
	}
	worst := 0.0
	for code, e := range compare(refs) {
		if !(e.fwd <= 1e-3) || !(e.inv <= 1e-3) {
			t.Errorf("EPSG:%d: forward %.3g m, inverse %.3g m from PROJ; worst %s", code, e.fwd, e.inv, e.at)
		}
		worst = math.Max(worst, math.Max(e.fwd, e.inv))
	}
	t.Logf("%d points recomputed by PROJ; max difference %.3g m", len(refs), worst)
}

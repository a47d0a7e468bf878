package proj

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
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
	for _, code := range projected() {
		pts := grid(code)
		got, err := projAnswers(tool, code, pts)
		if err != nil {
			t.Fatal(err)
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
	stored := readReferences(t)
	if len(stored) != len(refs) {
		t.Fatalf("%s has %d points, PROJ was asked for %d: run with -update", projFile, len(stored), len(refs))
	}
	for i, r := range refs {
		s := stored[i]
		if s.code != r.code || s.lonLat != r.lonLat || math.Hypot(s.fwd[0]-r.fwd[0], s.fwd[1]-r.fwd[1]) > 1e-6 {
			t.Fatalf("%s line %d: %d %v %v, PROJ now says %v: run with -update", projFile, i+3, s.code, s.lonLat, s.fwd, r.fwd)
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

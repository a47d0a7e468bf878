package proj

import (
	"bufio"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/paulmach/orb"
)

var update = flag.Bool("update", false, "rewrite testdata/proj.txt from the gdaltransform on PATH")

// projFile holds PROJ's answers: "code lon lat x y" per line, x/y rounded to the micrometre.
const projFile = "testdata/proj.txt"

// dense are the codes tested on a finer grid than the rest of their family.
var dense = map[int]bool{2154: true, 3035: true, 3857: true, 25832: true, 26915: true, 32632: true, 32733: true, 32601: true}

// grid returns the lon/lat points code is tested at: a regular grid over its area of use,
// corners and edges included, 11 by 11 for the codes in dense and 5 by 5 for the rest.
func grid(code int) []orb.Point {
	b, _ := areaOfUse(code)
	n := 4
	if dense[code] {
		n = 10
	}
	var pts []orb.Point
	for i := 0; i <= n; i++ {
		for j := 0; j <= n; j++ {
			lon := b.Min[0] + (b.Max[0]-b.Min[0])*float64(i)/float64(n)
			lat := b.Min[1] + (b.Max[1]-b.Min[1])*float64(j)/float64(n)
			pts = append(pts, orb.Point{round(lon, 9), round(lat, 9)})
		}
	}
	return pts
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// projected are the codes testdata covers: every supported projected CRS.
func projected() []int {
	var out []int
	for _, c := range codes() {
		if crs, _ := Lookup(c); !crs.Geographic() {
			out = append(out, c)
		}
	}
	return out
}

// reference is one line of projFile.
type reference struct {
	code        int
	lonLat, fwd orb.Point
}

func readReferences(t testing.TB) []reference {
	t.Helper()
	f, err := os.Open(projFile)
	if err != nil {
		t.Fatalf("opening the test data: %v", err)
	}
	defer f.Close()
	var refs []reference
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		s := sc.Text()
		if strings.HasPrefix(s, "#") || s == "" {
			continue
		}
		fs := strings.Fields(s)
		if len(fs) != 5 {
			t.Fatalf("%s:%d: want 5 fields, got %q", projFile, line, s)
		}
		var v [5]float64
		for i, x := range fs {
			if v[i], err = strconv.ParseFloat(x, 64); err != nil {
				t.Fatalf("%s:%d: %v", projFile, line, err)
			}
		}
		refs = append(refs, reference{code: int(v[0]), lonLat: orb.Point{v[1], v[2]}, fwd: orb.Point{v[3], v[4]}})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return refs
}

// groundDistance is the distance in metres between two nearby lon/lat points.
func groundDistance(a, b orb.Point) float64 {
	lat := a[1] * deg
	dlon := math.Remainder(a[0]-b[0], 360)
	return math.Hypot(dlon*111320*math.Cos(lat), (a[1]-b[1])*110574)
}

// shifted tells the points where PROJ does not take NAD83 for WGS 84: the Aleutian
// Islands (NAD83 to WGS 84 (2), a Helmert shift of metres), where this package keeps the
// null transformation. They are left out of the comparison.
func shifted(code int, p orb.Point) bool {
	nad83 := 26901 <= code && code <= 26923
	return nad83 && p[1] >= 51.3 && p[1] <= 54.4 && (p[0] <= -164.8 || p[0] >= 172.4)
}

// diffs are the largest forward and inverse differences from PROJ, in metres.
type diffs struct {
	fwd, inv float64
	at       string
}

func compare(refs []reference) map[int]*diffs {
	out := map[int]*diffs{}
	for _, r := range refs {
		if shifted(r.code, r.lonLat) {
			continue
		}
		crs, err := Lookup(r.code)
		if err != nil {
			panic(err)
		}
		e := out[r.code]
		if e == nil {
			e = &diffs{}
			out[r.code] = e
		}
		got := crs.Forward(r.lonLat)
		if d := math.Hypot(got[0]-r.fwd[0], got[1]-r.fwd[1]); d > e.fwd || math.IsNaN(d) {
			e.fwd, e.at = d, fmt.Sprintf("forward %v: %v, PROJ %v", r.lonLat, got, r.fwd)
		}
		back := crs.Inverse(r.fwd)
		if d := groundDistance(r.lonLat, back); d > e.inv || math.IsNaN(d) {
			e.inv = d
		}
	}
	return out
}

// TestAgainstPROJ holds every supported projected CRS to PROJ's answers over its area of
// use: forward within a millimetre of PROJ's x/y, inverse of PROJ's x/y within a
// millimetre (on the ground) of the point PROJ projected.
func TestAgainstPROJ(t *testing.T) {
	refs := readReferences(t)
	seen := map[int]bool{}
	for _, r := range refs {
		seen[r.code] = true
	}
	worstF, worstI := 0.0, 0.0
	errs := compare(refs)
	for _, code := range projected() {
		t.Run(fmt.Sprintf("EPSG:%d", code), func(t *testing.T) {
			if !seen[code] {
				t.Fatalf("%s has no points of EPSG:%d: run the GDAL test with -update", projFile, code)
			}
			e := errs[code]
			if !(e.fwd <= 1e-3) || !(e.inv <= 1e-3) {
				t.Errorf("forward %.3g m, inverse %.3g m from PROJ; worst %s", e.fwd, e.inv, e.at)
			}
			worstF, worstI = math.Max(worstF, e.fwd), math.Max(worstI, e.inv)
		})
	}
	t.Logf("%d points: max forward difference %.3g m, max inverse %.3g m", len(refs), worstF, worstI)
}

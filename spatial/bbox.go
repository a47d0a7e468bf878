package spatial

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/paulmach/orb"
)

// ParseBBox parses "minx,miny,maxx,maxy" (spaces around the numbers are
// allowed) and checks that the numbers are finite and that minx < maxx and
// miny < maxy. A fifth CRS value is refused; see ParseBBoxCRS.
func ParseBBox(s string) (orb.Bound, error) {
	b, crs, err := ParseBBoxCRS(s)
	if err != nil {
		return orb.Bound{}, err
	}
	if crs != "" {
		return orb.Bound{}, fmt.Errorf("spatial: bbox %q: want 4 comma-separated numbers, got 5 values", s)
	}
	return b, nil
}

// ParseBBoxCRS is ParseBBox that also accepts the fifth CRS value WFS BBOX
// parameters may carry ("minx,miny,maxx,maxy,urn:ogc:def:crs:EPSG::4326"),
// returned as written, or "" when absent. The numbers are returned as
// written: axis order is for the caller to decide with LatLonOrder.
func ParseBBoxCRS(s string) (orb.Bound, string, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 4 && len(parts) != 5 {
		return orb.Bound{}, "", fmt.Errorf("spatial: bbox %q: want 4 comma-separated numbers minx,miny,maxx,maxy, got %d values", s, len(parts))
	}
	var v [4]float64
	names := [4]string{"minx", "miny", "maxx", "maxy"}
	for i := range 4 {
		p := strings.TrimSpace(parts[i])
		f, err := strconv.ParseFloat(p, 64)
		if err != nil {
			return orb.Bound{}, "", fmt.Errorf("spatial: bbox %q: %s %q is not a number", s, names[i], p)
		}
		v[i] = f
	}
	crs := ""
	if len(parts) == 5 {
		crs = strings.TrimSpace(parts[4])
		if crs == "" {
			return orb.Bound{}, "", fmt.Errorf("spatial: bbox %q: empty fifth (CRS) value", s)
		}
	}
	if err := ValidateBBox(v, false); err != nil {
		return orb.Bound{}, "", fmt.Errorf("spatial: bbox %q: %w", s, err)
	}
	return orb.Bound{Min: orb.Point{v[0], v[1]}, Max: orb.Point{v[2], v[3]}}, crs, nil
}

// ValidateBBox checks b = [minx, miny, maxx, maxy]: finite numbers,
// minx < maxx, miny < maxy and, when geographic, within [-180,180] x
// [-90,90]. The error names the first problem found.
func ValidateBBox(b [4]float64, geographic bool) error {
	names := [4]string{"minx", "miny", "maxx", "maxy"}
	for i, f := range b {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("spatial: bbox %s is %v, want a finite number", names[i], f)
		}
	}
	if !(b[0] < b[2]) {
		return fmt.Errorf("spatial: bbox minx %v is not less than maxx %v", b[0], b[2])
	}
	if !(b[1] < b[3]) {
		return fmt.Errorf("spatial: bbox miny %v is not less than maxy %v", b[1], b[3])
	}
	if geographic {
		if b[0] < -180 || b[2] > 180 {
			return fmt.Errorf("spatial: bbox longitude %v..%v is outside -180..180", b[0], b[2])
		}
		if b[1] < -90 || b[3] > 90 {
			return fmt.Errorf("spatial: bbox latitude %v..%v is outside -90..90", b[1], b[3])
		}
	}
	return nil
}

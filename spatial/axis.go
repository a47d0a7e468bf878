package spatial

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/paulmach/orb"
)

// SRID returns the EPSG code named by an srsName in any of the forms WFS
// servers write:
//
//	EPSG:4326
//	urn:ogc:def:crs:EPSG::4326            (also with a version: EPSG:6.9:4326)
//	urn:x-ogc:def:crs:EPSG:4326
//	http://www.opengis.net/def/crs/EPSG/0/4326   (http or https)
//	http://www.opengis.net/gml/srs/epsg.xml#4326
//	CRS:84, urn:ogc:def:crs:OGC:1.3:CRS84, http://www.opengis.net/def/crs/OGC/1.3/CRS84  (-> 4326)
//
// Prefixes are matched without regard to case.
func SRID(srsName string) (int, error) {
	s := strings.TrimSpace(srsName)
	if s == "" {
		return 0, fmt.Errorf("spatial: empty srsName")
	}
	if isCRS84(s) {
		return 4326, nil
	}
	code, ok := epsgCode(s)
	if !ok {
		return 0, fmt.Errorf("spatial: srsName %q: not an EPSG code in a known form", srsName)
	}
	n, err := strconv.Atoi(code)
	if err != nil || n <= 0 || n > math.MaxInt32 || code[0] == '+' {
		return 0, fmt.Errorf("spatial: srsName %q: EPSG code %q is not a positive integer", srsName, code)
	}
	return n, nil
}

// srsForm is how an srsName was written, which decides its axis order.
type srsForm int

const (
	formUnknown srsForm = iota
	formShort           // EPSG:4326, http://www.opengis.net/gml/srs/epsg.xml#4326: x/y by convention
	formURN             // urn:ogc:def:crs:EPSG::4326, http://www.opengis.net/def/crs/EPSG/0/4326: EPSG axis order
	formCRS84           // CRS:84 and its URN/URI forms: lon/lat
)

func isCRS84(s string) bool {
	u := strings.ToUpper(s)
	return u == "CRS:84" || u == "CRS84" ||
		strings.HasPrefix(u, "URN:OGC:DEF:CRS:OGC:") && strings.HasSuffix(u, ":CRS84") ||
		(strings.HasPrefix(u, "HTTP://WWW.OPENGIS.NET/DEF/CRS/OGC/") || strings.HasPrefix(u, "HTTPS://WWW.OPENGIS.NET/DEF/CRS/OGC/")) &&
			strings.HasSuffix(u, "/CRS84")
}

// epsgCode extracts the code part of an EPSG srsName, and reports whether
// the form was recognised.
func epsgCode(s string) (string, bool) {
	c, _, ok := parseEPSG(s)
	return c, ok
}

func parseEPSG(s string) (code string, form srsForm, ok bool) {
	u := strings.ToUpper(s)
	switch {
	case strings.HasPrefix(u, "EPSG:"):
		return s[len("EPSG:"):], formShort, true
	case strings.HasPrefix(u, "URN:OGC:DEF:CRS:EPSG:"), strings.HasPrefix(u, "URN:X-OGC:DEF:CRS:EPSG:"):
		// urn:ogc:def:crs:EPSG:{version}:{code}, version possibly empty;
		// urn:x-ogc:def:crs:EPSG:{code} was GeoServer's 1.1 form.
		rest := s[strings.Index(u, ":EPSG:")+len(":EPSG:"):]
		if i := strings.LastIndexByte(rest, ':'); i >= 0 {
			rest = rest[i+1:]
		}
		return rest, formURN, true
	case strings.HasPrefix(u, "HTTP://WWW.OPENGIS.NET/DEF/CRS/EPSG/"), strings.HasPrefix(u, "HTTPS://WWW.OPENGIS.NET/DEF/CRS/EPSG/"):
		rest := s[strings.Index(u, "/EPSG/")+len("/EPSG/"):]
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			return "", formUnknown, false
		}
		return rest[i+1:], formURN, true
	case strings.HasPrefix(u, "HTTP://WWW.OPENGIS.NET/GML/SRS/EPSG.XML#"):
		return s[len("http://www.opengis.net/gml/srs/epsg.xml#"):], formShort, true
	}
	return "", formUnknown, false
}

// northFirst lists common EPSG CRSs whose official axis order puts
// latitude (or northing) first: the geographic CRSs a WFS is likely to
// offer, and a few national projected grids with northing first. Codes not
// listed are taken as x/y, which is right for most projected CRSs (UTM, Web
// Mercator); LooksSwapped is the safety net for the rest.
var northFirst = map[int]bool{
	// geographic 2D
	4326: true, 4258: true, 4269: true, 4267: true, 4230: true, 4283: true,
	7844: true, 4612: true, 6668: true, 4617: true, 4619: true, 4322: true,
	4171: true, 4148: true, 4674: true, 4167: true, 4490: true, 4314: true,
	4275: true, 4277: true, 4124: true, 4301: true, 4204: true, 4618: true,
	4759: true, 4152: true,
	// geographic 3D
	4979: true, 4937: true,
	// projected, northing first
	3034: true, 3035: true, 2180: true, 3006: true,
	31466: true, 31467: true, 31468: true, 31469: true,
}

// LatLonOrder tells whether coordinates written in srsName come latitude
// (northing) first in a response of the given WFS version ("2.0.0",
// "1.1.0", "1.0.0"; empty means 2.0.0):
//
//   - URN and http://www.opengis.net/def/crs/EPSG/0/ forms follow the EPSG
//     axis order in WFS 1.1 and 2.0: true for the geographic codes in a small
//     built-in table (4326, 4258, 4269, 4230 ...) and a few northing-first
//     national grids, false for other codes;
//   - "EPSG:4326" and http://www.opengis.net/gml/srs/epsg.xml#4326 are
//     lon/lat by the WFS 1.0 and GeoServer convention: false;
//   - CRS:84 in any form is lon/lat: false;
//   - in WFS 1.0 everything is x/y: false;
//   - an empty or unrecognised srsName: false.
func LatLonOrder(srsName string, wfsVersion string) bool {
	s := strings.TrimSpace(srsName)
	if s == "" || isCRS84(s) || strings.HasPrefix(strings.TrimSpace(wfsVersion), "1.0") {
		return false
	}
	code, form, ok := parseEPSG(s)
	if !ok || form != formURN {
		return false
	}
	n, err := strconv.Atoi(code)
	return err == nil && northFirst[n]
}

// SwapXY exchanges x and y of every coordinate of g. It works in place where
// the type allows (every slice-based type, and collections) and returns the
// result, which for orb.Point and orb.Bound values is a new value. A nil g
// gives nil.
func SwapXY(g orb.Geometry) orb.Geometry {
	switch g := g.(type) {
	case nil:
		return nil
	case orb.Point:
		return orb.Point{g[1], g[0]}
	case orb.MultiPoint:
		swapPoints(g)
	case orb.LineString:
		swapPoints(g)
	case orb.Ring:
		swapPoints(g)
	case orb.MultiLineString:
		for _, ls := range g {
			swapPoints(ls)
		}
	case orb.Polygon:
		for _, r := range g {
			swapPoints(r)
		}
	case orb.MultiPolygon:
		for _, p := range g {
			for _, r := range p {
				swapPoints(r)
			}
		}
	case orb.Collection:
		for i := range g {
			g[i] = SwapXY(g[i])
		}
	case orb.Bound:
		return orb.Bound{Min: orb.Point{g.Min[1], g.Min[0]}, Max: orb.Point{g.Max[1], g.Max[0]}}
	}
	return g
}

func swapPoints(ps []orb.Point) {
	for i := range ps {
		ps[i][0], ps[i][1] = ps[i][1], ps[i][0]
	}
}

// maxLookPoints bounds how many leading coordinates LooksSwapped examines.
const maxLookPoints = 64

// LooksSwapped checks the first coordinates of a decoded geometry against
// the bbox that was requested, in lon/lat, and tells whether x and y look
// swapped (swapped true) or fine (false), with ok false when it cannot tell:
// an empty geometry, a bbox around the lon = lat diagonal where both readings
// fit, or coordinates that fit neither reading.
//
// A feature returned for a BBOX query need only intersect the box, so the
// test is whether the bound of the first coordinates intersects the
// requested box as read and as swapped. A y beyond ±90 with x within ±90 can
// only be a swapped longitude, whatever the box.
func LooksSwapped(g orb.Geometry, requested orb.Bound) (swapped, ok bool) {
	pts := firstPoints(g, nil)
	if len(pts) == 0 {
		return false, false
	}
	b := orb.Bound{Min: pts[0], Max: pts[0]}
	for _, p := range pts[1:] {
		b = b.Extend(p)
	}
	if (math.Abs(b.Min[1]) > 90 || math.Abs(b.Max[1]) > 90) && math.Abs(b.Min[0]) <= 90 && math.Abs(b.Max[0]) <= 90 {
		return true, true
	}
	sb := orb.Bound{Min: orb.Point{b.Min[1], b.Min[0]}, Max: orb.Point{b.Max[1], b.Max[0]}}
	asIs, asSwapped := intersects(b, requested), intersects(sb, requested)
	switch {
	case asIs && !asSwapped:
		return false, true
	case asSwapped && !asIs:
		return true, true
	}
	return false, false
}

func intersects(a, b orb.Bound) bool {
	return a.Min[0] <= b.Max[0] && a.Max[0] >= b.Min[0] && a.Min[1] <= b.Max[1] && a.Max[1] >= b.Min[1]
}

// firstPoints appends up to maxLookPoints leading coordinates of g to dst.
func firstPoints(g orb.Geometry, dst []orb.Point) []orb.Point {
	add := func(ps []orb.Point) {
		n := min(len(ps), maxLookPoints-len(dst))
		dst = append(dst, ps[:n]...)
	}
	switch g := g.(type) {
	case orb.Point:
		add([]orb.Point{g})
	case orb.MultiPoint:
		add(g)
	case orb.LineString:
		add(g)
	case orb.Ring:
		add(g)
	case orb.MultiLineString:
		for _, ls := range g {
			add(ls)
		}
	case orb.Polygon:
		for _, r := range g {
			add(r)
		}
	case orb.MultiPolygon:
		for _, p := range g {
			for _, r := range p {
				add(r)
			}
		}
	case orb.Collection:
		for _, c := range g {
			if len(dst) >= maxLookPoints {
				break
			}
			dst = firstPoints(c, dst)
		}
	case orb.Bound:
		add([]orb.Point{g.Min, g.Max})
	}
	return dst
}

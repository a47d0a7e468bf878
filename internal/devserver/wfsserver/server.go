package wfsserver

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paulmach/orb"
)

// Flavor names accepted by Options.Flavor.
const (
	FlavorGeoServer = "geoserver"
	FlavorMapServer = "mapserver"
	FlavorDeegree   = "deegree"
	FlavorQGIS      = "qgis"
)

// Options configures a Server. The zero value serves 1,000 parcels the way a
// default GeoServer would.
type Options struct {
	// Features is the number of parcels, grid cells, indexes 0..Features-1. Defaults
	// to 1000. Revision 0 serves Features-Changes.Added of them.
	Features int
	// Seed makes generation deterministic: equal options serve equal data.
	Seed int64
	// Extent is the lon/lat area covered. Defaults to 11.45..11.55E,
	// 48.05..48.15N (Munich). Parcels may reach 0.1 cell beyond it.
	Extent orb.Bound
	// TypeName is the feature type, optionally prefixed ("gf:parcels").
	// Defaults to "parcels" in the flavor's namespace prefix ("gf", or "ms"
	// for MapServer, "qgs" for QGIS Server).
	TypeName string
	// CountDefault is the server's maximum page; it silently caps COUNT and
	// MAXFEATURES and is the page size when neither is given. Defaults to 1000.
	CountDefault int
	// Versions are the offered WFS versions, highest first. Defaults to
	// 2.0.0, 1.1.0, 1.0.0 (1.1.0, 1.0.0 for the QGIS flavor).
	Versions []string
	// NoGeoJSON withdraws the application/json output format, which is
	// offered by default.
	NoGeoJSON bool
	// ImplementsSorting advertises and honours SORTBY (on parcel_id, the only
	// sort key). Without it SORTBY is ignored, as old servers did.
	ImplementsSorting bool
	// UnstableOrder makes every request without SORTBY see the rows in a
	// different order, like a parallel-scan PostgreSQL behind the server:
	// offset paging then loses about 1.5% of the features and repeats others.
	UnstableOrder bool
	// CountExtra is added to every count the server reports (numberMatched, hits)
	// beyond the features the query really matches, as a server counting from its
	// planner's estimate or through a join that repeats rows does: a tile of n features
	// is said to hold n+CountExtra, and asking for more returns nothing.
	CountExtra int
	// PageCap caps every page below COUNT and CountDefault, unannounced, as a server
	// whose real maximum is lower than the one it advertises. 0 means no cap.
	PageCap int
	// SkipNumberMatched writes numberMatched="unknown" on GetFeature results
	// (hits still count), like a GeoServer layer with "Skip numberMatched" on.
	SkipNumberMatched bool
	// OGCAPICRS declares OGC API - Features Part 2 (CRS): items may be asked for in
	// EPSG:4326 (crs=http://www.opengis.net/def/crs/EPSG/0/4326), written latitude first.
	OGCAPICRS bool
	// OGCAPIIgnoreOffset makes items ignore offset, as MapServer 8.0.0 does on a PostGIS
	// layer: every page is the first rows again, and the next links look right.
	OGCAPIIgnoreOffset bool
	// Flavor selects one server's quirks: "geoserver" (default),
	// "mapserver", "deegree" or "qgis". See the package comment.
	Flavor string
	// Quota enables rate limiting; nil means none.
	Quota *Quota
	// Faults injects failures into GetFeature; the zero value injects none.
	Faults Faults
	// Latency delays every request.
	Latency time.Duration
	// RowCost is what the server's database spends per row it reads for a GetFeature:
	// the rows returned and, as with SQL OFFSET, every row skipped before them, so deep
	// STARTINDEX pages cost far more than early ones (docs/field-notes.md). A hits request reads
	// a tenth of that per matched row. The cost is slept, not burnt: it models a server
	// on another machine. Zero (the default) serves at full speed.
	RowCost time.Duration
	// EncodeCost is the server's time per feature written as GeoJSON; GML costs twice
	// as much (docs/field-notes.md: the same server answered GeoJSON about twice as fast as
	// GML 3.2). Slept while the response streams. Zero (the default) adds nothing.
	EncodeCost time.Duration
	// Sleep waits for the modelled costs and Latency, returning false when ctx ends
	// first. Defaults to a timer; tests record the costs instead of waiting.
	Sleep func(ctx context.Context, d time.Duration) bool
	// BaseURL is the service URL written into capabilities and next links.
	// Defaults to the URL the request arrived at.
	BaseURL string
	// Now is the clock for quotas and timestamps. Defaults to time.Now.
	Now func() time.Time
	// Changes is the change set between revision 0 and 1; the zero value changes
	// nothing. New panics if the parcels cannot hold it (see Server.SetRevision).
	Changes Changes
	// Revision is the revision served first (see Changes); SetRevision switches it.
	Revision int
	// Empty starts the server in empty mode (see Server.SetEmpty).
	Empty bool
}

// Quota is a request budget per window, enforced on every request.
type Quota struct {
	// Limit is the number of requests per Window.
	Limit int
	// Window is the quota period. Windows are fixed (aligned to the epoch)
	// unless TokenBucket is set. Defaults to one minute.
	Window time.Duration
	// TokenBucket refills Limit tokens per Window continuously instead of
	// resetting at window boundaries.
	TokenBucket bool
	// Headers selects the advertised rate-limit headers: "x-ratelimit"
	// (default; X-RateLimit-Limit/Remaining/Reset, Reset in epoch seconds),
	// "ietf" (RateLimit-Policy and RateLimit structured fields) or "none".
	Headers string
	// RetryAfter adds Retry-After (delay-seconds) to 429 responses.
	RetryAfter bool
	// RetryAfterHTTPDate writes Retry-After as an IMF-fixdate instead of
	// delay-seconds (both are RFC 9110 forms; clients must read either).
	RetryAfterHTTPDate bool
}

// Faults are failure rates for GetFeature requests, each a probability in
// [0,1]; their sum should not exceed 1.
type Faults struct {
	// Rate5xx answers 500 (exception report), 502 or 503 (proxy HTML pages).
	Rate5xx float64
	// RateTruncate cuts the body off mid-stream after a 200.
	RateTruncate float64
	// RateException200 answers an exception report with HTTP 200.
	RateException200 float64
	// RateHTML200 answers a proxy's HTML error page with HTTP 200.
	RateHTML200 float64
	// Seed makes the fault sequence reproducible for a given request order.
	Seed int64
	// FailForever, if set, is asked about every request (of any kind); true
	// answers 500 whatever the rates say.
	FailForever func(r *http.Request) bool
}

// Stats counts what a Server has seen since New or the last ResetStats.
type Stats struct {
	Requests            int64 // every request, including refused ones
	GetCapabilities     int64
	DescribeFeatureType int64
	GetFeature          int64 // GetFeature with resultType=results
	Hits                int64 // GetFeature with resultType=hits
	Other               int64 // unknown or missing REQUEST
	TooManyRequests     int64 // answered 429
	Exceptions          int64 // exception reports for bad requests (not faults)
	Faults              int64 // injected faults of any kind, FailForever included
	Faults5xx           int64
	FaultsTruncated     int64
	FaultsException200  int64
	FaultsHTML200       int64
	FailedForever       int64
	FeaturesServed      int64 // features written, truncated responses included
	// BBoxes are the lon/lat areas of GetFeature requests (results and hits)
	// that had a BBOX, in arrival order; at most 100,000 are kept.
	BBoxes []orb.Bound
	// NoBBox counts GetFeature requests (results and hits) without a BBOX.
	NoBBox int64
}

const maxRecordedBBoxes = 100_000

// Server is a sample WFS over generated parcels. It implements http.Handler
// on any path and is safe for concurrent use.
type Server struct {
	opts   Options
	fl     flavor
	grid   layout
	prefix string
	ns     string
	local  string
	json   bool
	quota  *quotaState
	faults atomic.Pointer[faultState]
	seq    atomic.Uint64
	rev    atomic.Pointer[revision]
	revMu  sync.Mutex // serialises the writers of rev

	requests, getCaps, describe, getFeature, hits, other      atomic.Int64
	tooMany, exceptions, faultsAll, f5xx, fTrunc, fExc, fHTML atomic.Int64
	failForever, served, noBBox                               atomic.Int64
	bboxMu                                                    sync.Mutex
	bboxes                                                    []orb.Bound
}

// New returns a Server for opts, with defaults filled in. It panics on an
// unknown Flavor, a Features count below zero or Changes and Revision that
// SetRevision refuses, which are programming errors.
func New(opts Options) *Server {
	opts.Features = cmp.Or(opts.Features, 1000)
	if opts.Sleep == nil {
		opts.Sleep = sleep
	}
	if opts.Features < 0 {
		panic("wfsfixture: negative Features")
	}
	if opts.Extent.IsZero() {
		opts.Extent = orb.Bound{Min: orb.Point{11.45, 48.05}, Max: orb.Point{11.55, 48.15}}
	}
	opts.CountDefault = cmp.Or(opts.CountDefault, 1000)
	opts.Flavor = cmp.Or(strings.ToLower(opts.Flavor), FlavorGeoServer)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	fl, ok := flavors[opts.Flavor]
	if !ok {
		panic("wfsfixture: unknown flavor " + opts.Flavor)
	}
	if len(opts.Versions) == 0 {
		opts.Versions = fl.versions
	}
	opts.Versions = slices.Clone(opts.Versions)
	slices.SortFunc(opts.Versions, func(a, b string) int { return strings.Compare(b, a) })
	s := &Server{opts: opts, fl: fl, json: !opts.NoGeoJSON}
	s.prefix, s.local = fl.prefix, cmp.Or(opts.TypeName, "parcels")
	if p, l, ok := strings.Cut(s.local, ":"); ok {
		s.prefix, s.local = p, l
	}
	s.ns = fl.namespace
	s.grid = newLayout(opts.Features, opts.Extent, opts.Seed)
	v, err := newRevision(opts.Revision, opts.Changes, opts.Empty, s.grid.n, s.grid.seed)
	if err != nil {
		panic(err)
	}
	s.rev.Store(v)
	if opts.Quota != nil {
		s.quota = newQuotaState(*opts.Quota)
	}
	s.SetFaults(opts.Faults)
	return s
}

// TypeName returns the qualified feature type name, e.g. "gf:parcels".
func (s *Server) TypeName() string { return s.prefix + ":" + s.local }

// Namespace returns the feature type's namespace URI.
func (s *Server) Namespace() string { return s.ns }

// Schema returns the feature type's non-geometry properties in document order.
// The geometry property is named "geom".
func (s *Server) Schema() []Attribute { return slices.Clone(schemaAttrs[:]) }

// Len returns the number of parcels, Options.Features: the indexes Feature accepts,
// served or not at the current revision (see Count and Exists).
func (s *Server) Len() int { return s.grid.n }

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	st := Stats{
		Requests: s.requests.Load(), GetCapabilities: s.getCaps.Load(),
		DescribeFeatureType: s.describe.Load(), GetFeature: s.getFeature.Load(),
		Hits: s.hits.Load(), Other: s.other.Load(), TooManyRequests: s.tooMany.Load(),
		Exceptions: s.exceptions.Load(), Faults: s.faultsAll.Load(), Faults5xx: s.f5xx.Load(),
		FaultsTruncated: s.fTrunc.Load(), FaultsException200: s.fExc.Load(),
		FaultsHTML200: s.fHTML.Load(), FailedForever: s.failForever.Load(),
		FeaturesServed: s.served.Load(), NoBBox: s.noBBox.Load(),
	}
	s.bboxMu.Lock()
	st.BBoxes = slices.Clone(s.bboxes)
	s.bboxMu.Unlock()
	return st
}

// ResetStats zeroes the counters and forgets recorded bboxes.
func (s *Server) ResetStats() {
	for _, c := range []*atomic.Int64{&s.requests, &s.getCaps, &s.describe, &s.getFeature,
		&s.hits, &s.other, &s.tooMany, &s.exceptions, &s.faultsAll, &s.f5xx, &s.fTrunc,
		&s.fExc, &s.fHTML, &s.failForever, &s.served, &s.noBBox} {
		c.Store(0)
	}
	s.bboxMu.Lock()
	s.bboxes = nil
	s.bboxMu.Unlock()
}

func (s *Server) recordBBox(b *orb.Bound) {
	if b == nil {
		s.noBBox.Add(1)
		return
	}
	s.bboxMu.Lock()
	if len(s.bboxes) < maxRecordedBBoxes {
		s.bboxes = append(s.bboxes, *b)
	}
	s.bboxMu.Unlock()
}

// Feature is the ground truth for one parcel.
type Feature struct {
	Index int    // 0..Len()-1; also the parcel_id order
	ID    string // gml:id and GeoJSON id, e.g. "parcels.42"
	// Geometry is an orb.Polygon or orb.MultiPolygon in lon/lat with closed
	// rings, exteriors counter-clockwise and holes clockwise, exactly the
	// coordinates served (rounded to 1e-7 degrees).
	Geometry orb.Geometry
	// Properties maps every schema attribute to its value: nil for xsi:nil,
	// string for string, decimal and date (lexical form), int64 for int and
	// long, float64, bool, and time.Time (UTC) for dateTime.
	Properties map[string]any
}

// Feature returns parcel i as the current revision has it, edits included, whether
// or not the revision serves it (see Exists). It panics if i is out of range.
func (s *Server) Feature(i int) Feature {
	if i < 0 || i >= s.grid.n {
		panic("wfsfixture: feature index out of range")
	}
	var sh shape
	e := s.state().edit(i)
	s.grid.shape(i, e, &sh)
	a := s.grid.attrs(i, e, &sh)
	return Feature{Index: i, ID: s.local + "." + itoa(i), Geometry: sh.geometry(), Properties: a.properties()}
}

// FeaturesIn returns, in index order, the parcels a listing shows at the current
// revision (the Hidden ones left out) whose geometry intersects the lon/lat bound b (the
// BBOX operator's semantics).
// The empty mode does not change it: it is what the data holds.
func (s *Server) FeaturesIn(b orb.Bound) []int {
	sel := s.grid.selectBound(b, s.state().listing())
	return sel.appendRange(nil, 0, s.grid.n)
}

// SetFaults replaces the fault configuration, healing or breaking the server
// while it runs.
func (s *Server) SetFaults(f Faults) { s.faults.Store(newFaultState(f)) }

// ServeHTTP answers WFS KVP GET requests and XML POST GetFeature requests.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if s.opts.Latency > 0 {
		if !s.opts.Sleep(r.Context(), s.opts.Latency) {
			return
		}
	}
	if s.quota != nil && !s.quota.admit(w.Header(), s.opts.Now()) {
		s.tooMany.Add(1)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte("429 Too Many Requests: rate limit exceeded\n"))
		return
	}
	fs := s.faults.Load()
	if fs.failForever != nil && fs.failForever(r) {
		s.faultsAll.Add(1)
		s.failForever.Add(1)
		s.writeException(w, s.opts.Versions[0], &owsError{status: http.StatusInternalServerError,
			code: "NoApplicableCode", text: "java.lang.RuntimeException: Unable to obtain connection: Cannot create PoolableConnectionFactory (FATAL: the database system is in recovery mode)"}, false)
		return
	}
	if i := strings.Index(r.URL.Path, "/ogcapi"); i >= 0 && (len(r.URL.Path) == i+7 || r.URL.Path[i+7] == '/') {
		s.serveOGCAPI(w, r, r.URL.Path[:i+7], r.URL.Path[i+7:], fs)
		return
	}
	q, err := s.parseRequest(r)
	if err != nil {
		s.other.Add(1)
		s.exceptions.Add(1)
		s.writeException(w, q.version, err, true)
		return
	}
	switch q.request {
	case "getcapabilities":
		s.getCaps.Add(1)
		s.serveCapabilities(w, r, q)
	case "describefeaturetype":
		s.describe.Add(1)
		s.serveDescribe(w, q)
	case "getfeature":
		s.serveGetFeature(w, r, q, fs)
	default:
		s.other.Add(1)
		s.exceptions.Add(1)
		s.writeException(w, q.version, &owsError{status: http.StatusNotImplemented,
			code: "OperationNotSupported", locator: "request", text: "Operation " + q.rawRequest + " is not supported"}, true)
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func itoa(i int) string {
	var b [20]byte
	return string(appendInt(b[:0], i))
}

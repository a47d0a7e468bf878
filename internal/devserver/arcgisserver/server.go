// Package arcgisserver is a sample ArcGIS REST feature service layer over the sample
// parcels of wfsserver, for `geoflow dev arcgis` and tests: the layer document (?f=json)
// and its query operation (GET or POST) with where=1=1, objectIds, an envelope, outFields,
// returnIdsOnly, returnCountOnly, resultOffset/resultRecordCount, f=json, pjson and
// geojson. It misbehaves as the field notes say real servers do: errors are answered with
// HTTP 200 and an {"error":{...}} body (498 invalid token, 499 token required, 400 bad
// parameters, 500 for its own failures), a query returns at most maxRecordCount features
// and says exceededTransferLimit, an id list can be capped (MaxIDs), and offset paging
// without orderByFields follows no stable order. Its parcels go through the revisions and
// the empty mode of wfsserver (Options.Changes, Server.SetRevision, Server.SetEmpty).
package arcgisserver

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
)

// Options configures a Server. The zero value serves 1,000 parcels, 1,000 a query.
type Options struct {
	// Features is the number of parcels. Defaults to 1000.
	Features int
	// Seed makes the data and the faults deterministic.
	Seed int64
	// MaxRecordCount caps the features of one query. Defaults to 1000.
	MaxRecordCount int
	// MaxIDs caps a returnIdsOnly list (with exceededTransferLimit), as proxies and some
	// hosted services do although Esri documents no cap. 0 means no cap.
	MaxIDs int
	// Token, when set, is required: as "X-Esri-Authorization: Bearer <token>",
	// "Authorization: Bearer <token>" or the token parameter.
	Token string
	// NoGeoJSON withdraws f=geojson from supportedQueryFormats and refuses it.
	NoGeoJSON bool
	// Faults are failure rates of query requests, each in [0,1].
	Faults Faults
	// Vanished, if set, names object ids that id lists and counts include but feature
	// answers leave out, as features deleted between the listing and the fetch.
	Vanished func(objectID int) bool
	// AlwaysExceeded sets exceededTransferLimit on every feature answer, as some servers
	// do on short pages.
	AlwaysExceeded bool
	// Quota enables rate limiting, as for the sample WFS (HTTP 429 with the headers the
	// quota names); nil means none.
	Quota *wfsserver.Quota
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// Changes is the change set of the parcels between revision 0 and 1, as
	// wfsserver.Options.Changes; object id i+1 is parcel i. New panics if the parcels
	// cannot hold it.
	Changes wfsserver.Changes
	// Revision is the revision served first; SetRevision switches it.
	Revision int
	// Empty starts the server in empty mode (see SetEmpty).
	Empty bool
}

// Faults are the failures a query can meet.
type Faults struct {
	Rate5xx      float64 // HTTP 503 with a proxy's HTML page
	RateError200 float64 // HTTP 200 with {"error":{"code":500,...}}
	RateTruncate float64 // a 200 whose body is cut off mid-stream
	// FailIDs, if set, fails every query whose objectIds include one it returns true
	// for, with HTTP 200 {"error":{"code":500}}: a broken part of a real service.
	FailIDs func(objectID int) bool
}

// Stats counts what a Server has seen.
type Stats struct {
	Requests, Layer, Queries, IDQueries, CountQueries, FeatureQueries, Faults, TokenErrors, TooManyRequests int64
	FeaturesServed                                                                                          int64
}

// Server is the sample layer. It serves any path ending in /FeatureServer (the service,
// listing its one layer), /FeatureServer/0 or /FeatureServer/0/query and is safe for concurrent use.
type Server struct {
	opts    Options
	parcels *wfsserver.Server
	mu      sync.Mutex
	rnd     *rand.Rand
	seq     atomic.Uint64

	requests, layer, queries, idQueries, countQueries, featureQueries, faults, tokenErrors, served, tooMany atomic.Int64
	quota                                                                                                   *wfsserver.QuotaLimiter
}

// New returns a Server for opts.
func New(opts Options) *Server {
	opts.Features = cmp.Or(opts.Features, 1000)
	opts.MaxRecordCount = cmp.Or(opts.MaxRecordCount, 1000)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	parcels := wfsserver.New(wfsserver.Options{Features: opts.Features, Seed: opts.Seed,
		Changes: opts.Changes, Revision: opts.Revision, Empty: opts.Empty})
	s := &Server{opts: opts, parcels: parcels,
		rnd: rand.New(rand.NewPCG(uint64(opts.Seed), 11))}
	if opts.Quota != nil {
		s.quota = wfsserver.NewQuotaLimiter(*opts.Quota)
	}
	return s
}

// Len is the number of parcels, served or not at the current revision (see Count).
func (s *Server) Len() int { return s.parcels.Len() }

// Count is the number of parcels served at the current revision.
func (s *Server) Count() int { return s.parcels.Count() }

// ObjectIDs returns, in order, the object ids served at the current revision.
func (s *Server) ObjectIDs() []int {
	ids := make([]int, 0, s.parcels.Count())
	for i := range s.parcels.Indexes() {
		ids = append(ids, i+1)
	}
	return ids
}

// Parcel returns parcel i (object id i+1) as wfsserver describes it at the current
// revision.
func (s *Server) Parcel(i int) wfsserver.Feature { return s.parcels.Feature(i) }

// SetRevision switches the parcels to revision rev of change set c, as
// wfsserver.Server.SetRevision does. Safe for concurrent use.
func (s *Server) SetRevision(rev int, c wfsserver.Changes) error {
	return s.parcels.SetRevision(rev, c)
}

// Revision returns the current revision and change set.
func (s *Server) Revision() (int, wfsserver.Changes) { return s.parcels.Revision() }

// SetEmpty switches the empty mode: on, every query answers no ids, a count of 0 and no
// features, while the layer document stays as it is. Safe for concurrent use.
func (s *Server) SetEmpty(on bool) { s.parcels.SetEmpty(on) }

// Empty reports whether the empty mode is on.
func (s *Server) Empty() bool { return s.parcels.Empty() }

// Exists reports whether object id objectID is served at the current revision.
func (s *Server) Exists(objectID int) bool { return s.parcels.Exists(objectID - 1) }

var _ wfsserver.Switcher = (*Server)(nil)

// ObjectIDsIn returns the object ids of the parcels served at the current revision whose
// geometry intersects b (whatever the empty mode).
func (s *Server) ObjectIDsIn(b orb.Bound) []int {
	idx := s.parcels.FeaturesIn(b)
	for k := range idx {
		idx[k]++
	}
	return idx
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	return Stats{Requests: s.requests.Load(), Layer: s.layer.Load(), Queries: s.queries.Load(), IDQueries: s.idQueries.Load(),
		CountQueries: s.countQueries.Load(), FeatureQueries: s.featureQueries.Load(), Faults: s.faults.Load(),
		TokenErrors: s.tokenErrors.Load(), FeaturesServed: s.served.Load(), TooManyRequests: s.tooMany.Load()}
}

// field is one attribute of the layer.
type field struct {
	Name, Type, Alias string
	Length            int             `json:",omitempty"`
	Domain            json.RawMessage `json:",omitempty"`
}

var fields = []field{
	{Name: "OBJECTID", Type: "esriFieldTypeOID", Alias: "OBJECTID"},
	{Name: "parcel_id", Type: "esriFieldTypeString", Alias: "Parcel", Length: 16},
	{Name: "cadastre_no", Type: "esriFieldTypeBigInteger", Alias: "Cadastre number"},
	{Name: "area_m2", Type: "esriFieldTypeDouble", Alias: "Area (m²)"},
	{Name: "zone", Type: "esriFieldTypeString", Alias: "Zone", Length: 64},
	{Name: "land_use", Type: "esriFieldTypeString", Alias: "Land use", Length: 32},
	{Name: "owner_count", Type: "esriFieldTypeSmallInteger", Alias: "Owners"},
	{Name: "assessed_value", Type: "esriFieldTypeDouble", Alias: "Assessed value"},
	{Name: "is_public", Type: "esriFieldTypeSmallInteger", Alias: "Public",
		Domain: json.RawMessage(`{"type":"codedValue","name":"YesNo","codedValues":[{"name":"No","code":0},{"name":"Yes","code":1}]}`)},
	{Name: "surveyed", Type: "esriFieldTypeDate", Alias: "Surveyed", Length: 8},
	{Name: "updated_at", Type: "esriFieldTypeDate", Alias: "Updated", Length: 8},
}

// Attributes returns parcel i's attributes as the layer serves them: dates as epoch
// milliseconds, booleans as 0/1.
func (s *Server) Attributes(i int) map[string]any {
	p := s.parcels.Feature(i).Properties
	a := map[string]any{"OBJECTID": i + 1}
	for _, f := range fields[1:] {
		src := f.Name
		if src == "land_use" {
			src = "Land-Use"
		}
		v := p[src]
		switch x := v.(type) {
		case bool:
			v = map[bool]int{false: 0, true: 1}[x]
		case time.Time:
			v = x.UnixMilli()
		case string:
			switch f.Type {
			case "esriFieldTypeDate":
				t, _ := time.Parse(time.DateOnly, x)
				v = t.UnixMilli()
			case "esriFieldTypeDouble":
				v, _ = strconv.ParseFloat(x, 64)
			}
		}
		a[f.Name] = v
	}
	return a
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if s.quota != nil && !s.quota.Admit(w.Header(), s.opts.Now()) {
		s.tooMany.Add(1)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"code":429,"message":"Too many requests.","details":[]}}`)
		return
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	if err := r.ParseForm(); err != nil {
		s.fail(w, 400, "Unable to parse the request: "+err.Error())
		return
	}
	if s.opts.Token != "" {
		got := strings.TrimPrefix(cmp.Or(r.Header.Get("X-Esri-Authorization"), r.Header.Get("Authorization")), "Bearer ")
		got = cmp.Or(got, r.Form.Get("token"))
		switch {
		case got == "":
			s.tokenErrors.Add(1)
			s.fail(w, 499, "Token Required")
			return
		case got != s.opts.Token:
			s.tokenErrors.Add(1)
			s.fail(w, 498, "Invalid Token")
			return
		}
	}
	switch {
	case strings.HasSuffix(path, "/FeatureServer"):
		s.layer.Add(1)
		s.serveService(w, r)
	case strings.HasSuffix(path, "/FeatureServer/0"):
		s.layer.Add(1)
		s.serveLayer(w, r)
	case strings.HasSuffix(path, "/FeatureServer/0/query"):
		s.queries.Add(1)
		s.serveQuery(w, r)
	default:
		s.fail(w, 404, "Service not found")
	}
}

// fail answers an ArcGIS error: HTTP 200, the code in the body.
func (s *Server) fail(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	fmt.Fprintf(w, `{"error":{"code":%d,"message":%q,"details":[]}}`, code, msg)
}

// serveService answers the service document: its one layer, as a FeatureServer lists
// its layers.
func (s *Server) serveService(w http.ResponseWriter, r *http.Request) {
	if f := r.Form.Get("f"); f != "json" && f != "pjson" {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body><h1>Parcels (FeatureServer)</h1></body></html>")
		return
	}
	doc := map[string]any{
		"currentVersion": 11.1, "serviceDescription": "geoflow sample parcels", "maxRecordCount": s.opts.MaxRecordCount,
		"supportedQueryFormats": "JSON, geoJSON, PBF", "capabilities": "Query",
		"layers": []map[string]any{{"id": 0, "name": "Parcels", "type": "Feature Layer", "geometryType": "esriGeometryPolygon"}},
		"tables": []any{},
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	json.NewEncoder(w).Encode(doc)
}

func (s *Server) serveLayer(w http.ResponseWriter, r *http.Request) {
	if f := r.Form.Get("f"); f != "json" && f != "pjson" {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body><h1>Parcels (ID: 0)</h1></body></html>")
		return
	}
	formats := "JSON, geoJSON, PBF"
	if s.opts.NoGeoJSON {
		formats = "JSON"
	}
	b := s.parcels.FeaturesIn(orb.Bound{Min: orb.Point{-180, -90}, Max: orb.Point{180, 90}})
	ext := orb.Bound{Min: orb.Point{math.Inf(1), math.Inf(1)}, Max: orb.Point{math.Inf(-1), math.Inf(-1)}}
	for _, i := range b {
		ext = ext.Union(s.parcels.Feature(i).Geometry.Bound())
	}
	doc := map[string]any{
		"currentVersion": 11.1, "id": 0, "name": "Parcels", "type": "Feature Layer",
		"geometryType": "esriGeometryPolygon", "objectIdField": "OBJECTID", "globalIdField": "", "displayField": "parcel_id",
		"hasZ": false, "hasM": false, "maxRecordCount": s.opts.MaxRecordCount, "standardMaxRecordCount": s.opts.MaxRecordCount,
		"supportedQueryFormats": formats, "capabilities": "Query", "supportsPagination": true,
		"advancedQueryCapabilities": map[string]any{"supportsPagination": true, "supportsOrderBy": true, "supportsReturningQueryExtent": true},
		"extent": map[string]any{"xmin": ext.Min[0], "ymin": ext.Min[1], "xmax": ext.Max[0], "ymax": ext.Max[1],
			"spatialReference": map[string]any{"wkid": 4326, "latestWkid": 4326}},
		"fields": fields,
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	json.NewEncoder(w).Encode(doc)
}

package gpkg

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// featureScanner reads ReadFeatures' rows (rowQuery's full SELECT list, its times as
// text) into StoredFeatures with as little as it can allocate per row: its scan targets
// are made once, the geometry and the payload hash are read in place (sql.RawBytes,
// decoded before the next row), and a time a row shares with the row before (a page
// of a harvest is fetched at once) is parsed once. A million rows cost a million
// driver times to parse otherwise, a tenth of an export.
type featureScanner struct {
	rq        rowQuery
	geom      sql.RawBytes
	hash      sql.RawBytes
	featureID sql.NullString
	runID     sql.NullInt64
	key       sql.NullString
	fetched   sql.RawBytes
	validFrom sql.NullString
	validTo   sql.NullString
	closedRun sql.NullInt64
	props     []any
	dest      []any
	times     timeCache
}

func newFeatureScanner(rq rowQuery) *featureScanner {
	s := &featureScanner{rq: rq, props: make([]any, len(rq.t.Columns))}
	s.dest = []any{&s.geom, &s.featureID}
	if !rq.bare {
		s.dest = []any{&s.geom, &s.hash, &s.featureID, &s.runID, &s.fetched}
		if rq.t.Keyed {
			s.dest = append(s.dest, &s.key)
		}
		if rq.t.History {
			s.dest = append(s.dest, &s.validFrom, &s.validTo, &s.closedRun)
		}
	}
	for i := range s.props {
		s.dest = append(s.dest, &s.props[i])
	}
	return s
}

// feature is the row just scanned (into dest) as a StoredFeature, without its geometry
// and times (geometry, timeCache.bookkeeping).
func (s *featureScanner) feature() *store.StoredFeature {
	return &store.StoredFeature{
		Feature: spatial.Feature{ID: s.featureID.String, Properties: s.properties()},
		TileID:  store.TileID(s.hash), Key: s.key.String, RunID: s.runID.Int64, ClosedRun: s.closedRun.Int64,
	}
}

// geometry is the row's geometry, brought into the CRS asked for by conv (nil: as
// stored); keep is false when area (in the table's CRS) is not nil and the geometry
// does not meet it.
func (s *featureScanner) geometry(area *orb.Bound, conv func(orb.Geometry) (orb.Geometry, error)) (orb.Geometry, bool, error) {
	if s.geom == nil {
		return nil, area == nil, nil
	}
	g, _, err := decodeGeometry(s.geom)
	if err != nil {
		return nil, false, fmt.Errorf("feature %q: decoding its geometry: %w", s.featureID.String, err)
	}
	if area != nil && !meets(g, *area) {
		return nil, false, nil
	}
	if conv != nil {
		if g, err = conv(g); err != nil {
			return nil, false, fmt.Errorf("feature %q: %w", s.featureID.String, err)
		}
	}
	return g, true, nil
}

// values are the row's properties in column order, as properties types them (nil for
// NULL), in a slice of their own.
func (s *featureScanner) values() []any {
	vals := make([]any, len(s.props))
	for i, c := range s.rq.t.Columns {
		vals[i] = propertyValue(s.props[i], c.Type)
	}
	return vals
}

// properties are the row's properties by column name, as rowQuery.properties makes
// them, with room for the few an export adds.
func (s *featureScanner) properties() map[string]any {
	props := make(map[string]any, len(s.props)+3)
	for i, c := range s.rq.t.Columns {
		if v := propertyValue(s.props[i], c.Type); v != nil {
			props[c.Name] = v
		}
	}
	return props
}

// timeCache parses the times of a table's rows (toTime), keeping the last one: rows
// in a row often share theirs.
type timeCache struct {
	text string
	t    time.Time
}

// bookkeeping sets f's times from the row s scanned: its fetch and, with history, its
// version's life; none for a bare read.
func (c *timeCache) bookkeeping(f *store.StoredFeature, s *featureScanner) error {
	if s.rq.bare {
		return nil
	}
	var err error
	if f.FetchedAt, err = c.parse(s.fetched); err != nil {
		return err
	}
	if f.ValidFrom, err = c.parseNull(s.validFrom); err != nil {
		return err
	}
	f.ValidTo, err = c.parseNull(s.validTo)
	return err
}

// parse is the NOT NULL time b.
func (c *timeCache) parse(b []byte) (time.Time, error) {
	if b == nil {
		return time.Time{}, errors.New("gpkg: a required time is NULL")
	}
	if c.text != "" && string(b) == c.text { // compared without a copy
		return c.t, nil
	}
	t, err := toTime(b)
	if err != nil {
		return time.Time{}, err
	}
	c.text, c.t = strings.Clone(string(b)), *t
	return *t, nil
}

// parseNull is the time s, nil for NULL.
func (c *timeCache) parseNull(s sql.NullString) (*time.Time, error) {
	if !s.Valid {
		return nil, nil
	}
	t, err := c.parse([]byte(s.String))
	if err != nil {
		return nil, err
	}
	return &t, nil
}

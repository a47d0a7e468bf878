package harvest

import (
	"errors"
	"io"
	"slices"
	"sync/atomic"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

var _ store.Refuser = (*featureSource)(nil)

// featureSource decodes a response for the sink: it fixes the axis order where the
// server wrote latitude first against its own declaration, and skips features the
// decoder refuses (curves) and those it cannot store (spatial.Validate, the CRS's
// domain), logging and recording each one.
type featureSource struct {
	dec     Decoder // the response's
	env     *tasks.Env
	unit    string
	bbox    orb.Bound
	slack   orb.Bound // bbox with a margin, for outside
	check   bool      // geographic: compare the first coordinates with the box
	decided bool
	swap    bool
	refused tasks.RejectedError
	index   int // features read, refused ones included
	// print sums a hash of every id returned: an order-free fingerprint of the response.
	print uint64
	// outside counts features wholly outside the box asked for (lon/lat only).
	outside int64
	// asked are a batch's ids, true once answered; nil for a box's response.
	asked  map[string]bool
	err    error        // the decoder's final error, if any
	warned *atomic.Bool // shared by the task: the swap is logged once
}

// Observe implements tasks.Stream: what the response said and held.
func (s *featureSource) Observe(e *tasks.Evidence) *tasks.RejectedError {
	m := s.dec.Meta()
	e.Returned, e.Matched, e.Next, e.Outside = int64(s.index), m.NumberMatched, m.Next != "", s.outside
	if s.print != 0 {
		e.Print = s.print | 1 // never 0, which says "no ids"
	}
	if s.asked != nil {
		e.Answered, e.Unanswered = 0, nil
		for id, answered := range s.asked {
			if answered {
				e.Answered++
			} else {
				e.Unanswered = append(e.Unanswered, id)
			}
		}
		slices.Sort(e.Unanswered)
	}
	if s.refused.Total == 0 {
		return nil
	}
	rej := s.refused
	return &rej
}

// answer marks a batch's id as answered.
func (s *featureSource) answer(id string) {
	if _, ok := s.asked[id]; ok {
		s.asked[id] = true
	}
}

// idHash is the FNV-1a hash of a feature id.
func idHash(id string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	return h
}

// source decodes a response for the sink.
func (e *Engine) source(env *tasks.Env, unit string, body io.Reader, bbox orb.Bound) *featureSource {
	d := e.cfg.Protocol.Decode(env, body)
	// A feature on the box's edge may be written a rounding away from it.
	slack := bbox.Pad(1e-6 * max(1, bbox.Max[0]-bbox.Min[0], bbox.Max[1]-bbox.Min[1]))
	return &featureSource{env: env, unit: unit, bbox: bbox, slack: slack, check: e.cfg.Geographic, warned: &e.warnedSwap, dec: d}
}

// Next implements store.FeatureSource.
func (s *featureSource) Next() (*spatial.Feature, error) {
	for {
		f, err := s.dec.Next()
		var fe *spatial.FeatureError
		if err != nil {
			fe = asFeatureError(err) // not errors.As here: its target would cost every feature an allocation
		}
		if err == nil || fe != nil {
			s.index++
		}
		if err == nil && f.ID != "" {
			s.print += idHash(f.ID)
			s.answer(f.ID)
		} else if fe != nil && fe.ID != "" {
			s.print += idHash(fe.ID)
			s.answer(fe.ID)
		}
		if fe != nil {
			s.refused.Add(tasks.Reject{ID: fe.ID, Index: fe.Index, Reason: fe.Err.Error()})
			s.env.Logger.Error("feature refused", "unit", s.unit, "feature", fe.ID, "err", fe.Err)
			continue
		}
		if err != nil {
			if errors.Is(err, spatial.ErrTooLarge) {
				// The same request gets the same feature: not worth another attempt.
				err = retry.Permanent(dlq.ClassTooLarge, err)
			}
			if err != io.EOF {
				s.err = err
			}
			return nil, err
		}
		if s.check && f.Geometry != nil {
			if !s.decided {
				if swapped, ok := spatial.LooksSwapped(f.Geometry, s.bbox); ok {
					s.decided, s.swap = true, swapped
					if swapped && s.warned.CompareAndSwap(false, true) {
						s.env.Logger.Warn("the server writes latitude/longitude against its own axis order; swapping x/y (logged once)", "unit", s.unit)
					}
				}
			}
			if s.swap {
				f.Geometry = spatial.SwapXY(f.Geometry)
			}
			b := geometryBound(f.Geometry)
			if !b.Intersects(s.slack) {
				s.outside++
			}
			if !lonLatDomain.Contains(b.Min) || !lonLatDomain.Contains(b.Max) {
				// POINT(1e308 1e308) in EPSG:4326 is no place on Earth: storing it would
				// poison the table's extent, its index and every map of it. It is the
				// server's fault, and one feature's. (A geometry spatial.Validate refuses,
				// an unclosed ring, is refused by the store's own guard, store.ValidFeatures,
				// which tells Refuse.)
				why := "coordinates outside longitude -180..180, latitude -90..90: " + FormatBound(f.Geometry.Bound())
				s.refused.Add(tasks.Reject{ID: f.ID, Index: s.index - 1, Reason: why})
				s.env.Logger.Error("feature refused", "unit", s.unit, "feature", f.ID, "err", why)
				continue
			}
		}
		return f, nil
	}
}

// asFeatureError is the *spatial.FeatureError in err's chain, nil when there is none.
func asFeatureError(err error) *spatial.FeatureError {
	var fe *spatial.FeatureError
	if errors.As(err, &fe) {
		return fe
	}
	return nil
}

// Refuse implements store.Refuser: a feature the store refused (its own check of the
// geometry, the same spatial.Validate) is reported like the ones refused here, so that
// the unit is still a rejected dead letter naming it.
func (s *featureSource) Refuse(f *spatial.Feature, err error) {
	s.refused.Add(tasks.Reject{ID: f.ID, Index: s.index - 1, Reason: err.Error()})
	s.env.Logger.Error("feature refused", "unit", s.unit, "feature", f.ID, "err", err)
}

// lonLatDomain is where a geographic CRS's coordinates can be, with a margin for the
// rounding of servers that write 180.0000001.
var lonLatDomain = orb.Bound{Min: orb.Point{-180.001, -90.001}, Max: orb.Point{180.001, 90.001}}

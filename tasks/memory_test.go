package tasks_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/geojson"
	"github.com/geoflow/geoflow/tasks"
)

// spooled returns a spool of env holding body, read in as a response's rest is.
func spooled(t *testing.T, env *tasks.Env, body []byte) *tasks.Spool {
	t.Helper()
	s := env.NewSpool()
	if _, err := s.ReadFrom(bytes.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	return s
}

// readFeature reads a spool as a decoder reads one feature of it: StartFeature, then the
// whole text.
func readFeature(s *tasks.Spool, lim spatial.Limits) error {
	r, err := s.Reader()
	if err != nil {
		return err
	}
	r.(spatial.FeatureMeter).StartFeature(lim)
	_, err = io.Copy(io.Discard, r)
	return err
}

// TestMemoryWaitsForRelease: a feature whose worst case does not fit beside another's
// waits until that one's spool is closed, then goes on; nothing stays charged.
func TestMemoryWaitsForRelease(t *testing.T) {
	m := tasks.NewMemory(64 << 20) // 48 MiB for features
	env := &tasks.Env{Memory: m}
	lim := spatial.Limits{FeatureBytes: 32 << 20, Vertices: 100_000}
	body := bytes.Repeat([]byte("x"), 18<<20) // 36 MiB of window + 6 MiB of vertices: ~42 MiB each

	a := spooled(t, env, body)
	if err := readFeature(a, lim); err != nil {
		t.Fatal(err)
	}
	held := m.Stats().InUse
	if held < 36<<20 {
		t.Fatalf("an 18 MiB feature being written holds %d bytes of the budget, want its worst case (over 24 MiB)", held)
	}
	b := spooled(t, env, body)
	done := make(chan error, 1)
	go func() { done <- readFeature(b, lim) }()
	select {
	case err := <-done:
		t.Fatalf("the second feature did not wait for the first (err %v); in use %d of %d", err, m.Stats().InUse, m.Limit())
	case <-time.After(200 * time.Millisecond):
	}
	a.Close() // the first unit ends: its feature is written
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the second feature still waits after the first released its claim")
	}
	b.Close()
	st := m.Stats()
	if st.InUse != 0 || st.Waits != 1 || st.Peak > m.Limit() {
		t.Errorf("stats %+v: want nothing in use, one wait, peak within %d", st, m.Limit())
	}
}

// TestMemoryStartFeatureReleases: the next feature's start gives back what the previous
// one's worst case held beyond the small claim, without waiting.
func TestMemoryStartFeatureReleases(t *testing.T) {
	m := tasks.NewMemory(64 << 20)
	s := spooled(t, &tasks.Env{Memory: m}, bytes.Repeat([]byte("x"), 4<<20))
	defer s.Close()
	r, err := s.Reader()
	if err != nil {
		t.Fatal(err)
	}
	meter := r.(spatial.FeatureMeter)
	meter.StartFeature(spatial.Limits{})
	if _, err := io.CopyN(io.Discard, r, 2<<20); err != nil {
		t.Fatal(err)
	}
	big := m.Stats().InUse
	meter.StartFeature(spatial.Limits{})
	small := m.Stats().InUse
	if small >= big || small > 8<<20 {
		t.Errorf("after the next feature starts %d bytes stay charged (the big one held %d); want only a small claim", small, big)
	}
	s.Close()
	if n := m.Stats().InUse; n != 0 {
		t.Errorf("%d bytes charged after Close", n)
	}
}

// TestMemoryTooLarge: a feature more than the whole budget can cover fails, as too_large,
// naming memory_limit; through a real decoder too.
func TestMemoryTooLarge(t *testing.T) {
	tests := []struct {
		name string
		read func(s *tasks.Spool) error
	}{
		{"meter", func(s *tasks.Spool) error { return readFeature(s, spatial.Limits{}) }},
		{"geojson", func(s *tasks.Spool) error {
			r, err := s.Reader()
			if err != nil {
				return err
			}
			return spatial.Walk(geojson.NewReader(r, geojson.Options{}), nil)
		}},
	}
	// 12 MiB of one line's coordinates: 24 MiB of window alone, beyond the 12 MiB a
	// feature may take of a 16 MiB budget.
	var body bytes.Buffer
	body.WriteString(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":{"type":"LineString","coordinates":[[0,0]`)
	for body.Len() < 12<<20 {
		body.WriteString(",[1234.5678,5678.1234]")
	}
	body.WriteString(`]}}]}`)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := tasks.NewMemory(16 << 20)
			s := spooled(t, &tasks.Env{Memory: m}, body.Bytes())
			err := tc.read(s)
			var mle *tasks.MemoryLimitError
			if !errors.Is(err, spatial.ErrTooLarge) || !errors.As(err, &mle) || !strings.Contains(err.Error(), "raise memory_limit") {
				t.Fatalf("err = %v, want a *tasks.MemoryLimitError matching spatial.ErrTooLarge and naming memory_limit", err)
			}
			s.Close()
			if st := m.Stats(); st.InUse != 0 || st.Peak > m.Limit() {
				t.Errorf("stats %+v after the refusal and Close", st)
			}
		})
	}
}

// TestSpoolShare: spools keep responses in memory only within a quarter of the budget;
// past it they go to their files at once, without waiting, and count as spilled.
func TestSpoolShare(t *testing.T) {
	m := tasks.NewMemory(64 << 20) // 16 MiB for spools
	env := &tasks.Env{Memory: m}
	var spools []*tasks.Spool
	body := bytes.Repeat([]byte("y"), 6<<20)
	for range 4 {
		spools = append(spools, spooled(t, env, body))
	}
	st := m.Stats()
	if st.InUse > 16<<20 || st.Spilled < 2 {
		t.Errorf("4 spools of 6 MiB: %d bytes in memory, %d spilled; want at most 16 MiB, the rest in files", st.InUse, st.Spilled)
	}
	for i, s := range spools {
		r, err := s.Reader()
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(got, body) {
			t.Errorf("spool %d: read back %d bytes, err %v", i, len(got), err)
		}
		s.Close()
	}
	if n := m.Stats().InUse; n != 0 {
		t.Errorf("%d bytes charged after every spool closed", n)
	}
}

// TestMemoryNoDeadlock: units spooling and decoding features of every size at once on a
// budget much smaller than their sum all finish, and give everything back. Run with -race.
func TestMemoryNoDeadlock(t *testing.T) {
	m := tasks.NewMemory(32 << 20)
	env := &tasks.Env{Memory: m}
	lim := spatial.Limits{FeatureBytes: 8 << 20, Vertices: 100_000}
	const units = 24
	var wg sync.WaitGroup
	errs := make(chan error, units)
	for u := range units {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(u), 7))
			for round := range 3 {
				// A response of features from 1 KiB to 6 MiB, arriving through Tee
				// (the head) and read again from the spool (the write).
				sizes := []int{1 << 10, 300 << 10, rng.IntN(6<<20) + 1}
				var resp []byte
				for _, n := range sizes {
					resp = append(resp, bytes.Repeat([]byte{'a' + byte(round)}, n)...)
				}
				s := env.NewSpool()
				head := io.TeeReader(bytes.NewReader(resp[:sizes[0]]), s)
				if _, err := io.Copy(io.Discard, head); err != nil {
					errs <- fmt.Errorf("unit %d: head: %w", u, err)
					s.Close()
					return
				}
				if _, err := s.ReadFrom(bytes.NewReader(resp[sizes[0]:])); err != nil {
					errs <- fmt.Errorf("unit %d: spooling: %w", u, err)
					s.Close()
					return
				}
				r, err := s.Reader()
				if err != nil {
					errs <- err
					s.Close()
					return
				}
				for _, n := range sizes {
					r.(spatial.FeatureMeter).StartFeature(lim)
					if _, err := io.CopyN(io.Discard, r, int64(n)); err != nil {
						errs <- fmt.Errorf("unit %d: reading a feature of %d bytes: %w", u, n, err)
						s.Close()
						return
					}
				}
				s.Close()
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("units still waiting after 2 minutes: deadlock (stats %+v)", m.Stats())
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := m.Stats()
	if st.InUse != 0 || st.Peak > m.Limit() || st.Waits == 0 {
		t.Errorf("stats %+v: want nothing left in use, a peak within %d, and some waits", st, m.Limit())
	}
}

// TestSpoolWithoutBudget: a spool of no budget charges nothing and its reader is a plain
// reader.
func TestSpoolWithoutBudget(t *testing.T) {
	for _, env := range []*tasks.Env{nil, {}} {
		s := spooled(t, env, []byte("abc"))
		r, err := s.Reader()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := r.(spatial.FeatureMeter); ok {
			t.Error("a spool without a budget meters its reader")
		}
		s.Close()
	}
}

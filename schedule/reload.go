package schedule

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/geoflow/geoflow/flows"
)

// flowFiles lists the flow files of dir.
func flowFiles(dir string) ([]string, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the flows directory: %w", err)
	}
	var out []string
	for _, de := range des {
		name := de.Name()
		if de.IsDir() || strings.HasPrefix(name, ".") {
			continue
		}
		if ext := filepath.Ext(name); ext == ".yaml" || ext == ".yml" {
			out = append(out, filepath.Join(dir, name))
		}
	}
	sort.Strings(out)
	return out, nil
}

// reload brings the entries in line with the directory. Files are read and hashed each
// time; only changed ones are parsed again. ctx bounds the loops, runCtx the runs.
func (s *Scheduler) reload(ctx, runCtx context.Context, startup bool) error {
	files, err := flowFiles(s.o.Dir)
	if err != nil {
		if startup {
			return err
		}
		s.log.Error("reloading flows: the previous ones run on", "err", err)
		return err
	}
	now := s.o.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	present := map[string]bool{}
	for _, file := range files {
		present[file] = true
		src, err := os.ReadFile(file)
		if err != nil {
			s.setProblem(file, [sha256.Size]byte{}, err)
			continue
		}
		hash := sha256.Sum256(src)
		old := s.entries[file]
		if old != nil && old.hash == hash {
			continue
		}
		f, sched, err := s.parse(file, src)
		if err != nil {
			s.setProblem(file, hash, err)
			continue
		}
		if f.Schedule == "" {
			if old != nil && old.flow != nil {
				s.remove(old, "flow no longer scheduled")
			}
			// Remembered, unlisted, so that it is not parsed again until it changes.
			s.entries[file] = &entry{file: file, hash: hash}
			continue
		}
		e := &entry{file: file, hash: hash, flow: f, sched: sched}
		from := now
		if old != nil && old.flow != nil {
			if old.flow.Name == f.Name && old.last.After(now.Add(-time.Second)) {
				// Do not fire again what the previous version just fired.
				from = old.last
			}
			s.stopEntry(old)
			s.log.Info("flow reloaded", "flow", f.Name, "file", file, "schedule", sched.Spec, "timezone", sched.Location.String())
		} else {
			s.log.Info("flow scheduled", "flow", f.Name, "file", file, "schedule", sched.Spec,
				"timezone", sched.Location.String(), "overlap", f.Overlap, "catchup", f.Catchup)
		}
		s.entries[file] = e
		s.o.Metrics.flowLoaded(f.Name)
		if startup && f.Catchup != CatchupNone {
			s.startCatchup(ctx, runCtx, e, now)
		}
		s.startLoop(ctx, runCtx, e, from)
	}
	for file, e := range s.entries {
		if !present[file] {
			s.remove(e, "flow file removed")
		}
	}
	invalid, scheduled := 0, 0
	for _, e := range s.entries {
		if e.problem != "" {
			invalid++
		}
		if e.flow != nil {
			scheduled++
		}
	}
	s.o.Metrics.invalidFiles(invalid)
	if startup && scheduled == 0 {
		s.log.Warn("no scheduled flows: nothing will fire until a flow file with a schedule: appears", "dir", s.o.Dir)
	}
	return nil
}

// parse reads a flow and its schedule, and rejects a second file naming a flow that
// another file already holds.
func (s *Scheduler) parse(file string, src []byte) (*flows.Flow, *Schedule, error) {
	f, err := flows.Parse(file, src, s.o.Flows)
	if err != nil {
		return nil, nil, err
	}
	for other, e := range s.entries {
		if other != file && e.flow != nil && e.flow.Name == f.Name {
			return nil, nil, fmt.Errorf("%s: flow %q is already defined in %s", file, f.Name, other)
		}
	}
	if f.Schedule == "" {
		return f, nil, nil
	}
	sched, err := ParseSchedule(f.Schedule, f.Timezone)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	return f, sched, nil
}

// setProblem records why file did not load; its previous version, if any, fires on.
// s.mu is held.
func (s *Scheduler) setProblem(file string, hash [sha256.Size]byte, err error) {
	e := s.entries[file]
	if e == nil {
		e = &entry{file: file}
		s.entries[file] = e
	}
	e.hash, e.problem = hash, err.Error()
	msg := strings.ReplaceAll(err.Error(), "\n", "; ")
	if e.flow != nil {
		s.log.Error("flow file does not load: its previous version runs on", "flow", e.flow.Name, "file", file, "problem", msg)
	} else {
		s.log.Error("flow file does not load", "file", file, "problem", msg)
	}
}

// remove stops and forgets an entry. s.mu is held.
func (s *Scheduler) remove(e *entry, why string) {
	s.stopEntry(e)
	delete(s.entries, e.file)
	if e.flow != nil {
		s.log.Info(why, "flow", e.flow.Name, "file", e.file)
		s.o.Metrics.flowRemoved(e.flow.Name)
	}
}

func (s *Scheduler) stopEntry(e *entry) {
	if e.stop != nil {
		e.stop()
		e.stop = nil
	}
}

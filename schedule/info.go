package schedule

import (
	"cmp"
	"fmt"
	"sort"
	"time"

	"github.com/geoflow/geoflow/flows"
)

// FlowInfo is a scheduled flow as operators see it.
type FlowInfo struct {
	Name     string `json:"name"`
	File     string `json:"file"`
	Schedule string `json:"schedule"`
	Timezone string `json:"timezone"`
	Overlap  string `json:"overlap"`
	Catchup  string `json:"catchup"`
	// NextFires are the next fire times, in the flow's time zone.
	NextFires []time.Time `json:"next_fires"`
	// Running and Queued count this process's runs of the flow; 0 in schedule list.
	Running int `json:"running"`
	Queued  int `json:"queued"`
	// Problem says why the file's latest content did not load; the version described,
	// if any, runs on.
	Problem string `json:"problem,omitempty"`
}

func info(f *flows.Flow, sched *Schedule, file string, now time.Time, n int) FlowInfo {
	fi := FlowInfo{File: file, NextFires: []time.Time{}}
	if f != nil {
		fi.Name, fi.Overlap, fi.Catchup = f.Name, f.Overlap, f.Catchup
	}
	if sched != nil {
		fi.Schedule, fi.Timezone = sched.Spec, sched.Location.String()
		fi.NextFires = sched.NextN(now, n)
	}
	return fi
}

// Flows describes the scheduled flows, and the files that did not load, with the next n
// fire times of each; sorted by flow name.
func (s *Scheduler) Flows(n int) []FlowInfo {
	now := s.o.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []FlowInfo{}
	for _, e := range s.entries {
		if e.flow == nil && e.problem == "" {
			continue // a flow without a schedule
		}
		fi := info(e.flow, e.sched, e.file, now, n)
		fi.Problem = e.problem
		if e.flow != nil {
			if st := s.states[e.flow.Name]; st != nil {
				fi.Running, fi.Queued = st.running, len(st.waiting)
			}
		}
		out = append(out, fi)
	}
	sortInfos(out)
	return out
}

func sortInfos(fis []FlowInfo) {
	sort.Slice(fis, func(i, j int) bool {
		if fis[i].Name != fis[j].Name {
			return fis[i].Name < fis[j].Name
		}
		return fis[i].File < fis[j].File
	})
}

// List reads the flows of dir without a database and describes the scheduled ones with
// their next n fire times after now, for geoflow schedule list. Files that do not load
// are described with their problem.
func List(dir string, opts flows.Options, now time.Time, n int) ([]FlowInfo, error) {
	return list(dir, opts, now, n, false)
}

// ListAll is List with the flows that have no schedule too (their Schedule is ""), for
// the web UI, where any flow can be run now.
func ListAll(dir string, opts flows.Options, now time.Time, n int) ([]FlowInfo, error) {
	return list(dir, opts, now, n, true)
}

func list(dir string, opts flows.Options, now time.Time, n int, all bool) ([]FlowInfo, error) {
	files, err := flowFiles(dir)
	if err != nil {
		return nil, err
	}
	out := []FlowInfo{}
	names := map[string]string{}
	for _, file := range files {
		f, err := flows.Load(file, opts)
		if err != nil {
			fi := info(nil, nil, file, now, n)
			fi.Problem = err.Error()
			out = append(out, fi)
			continue
		}
		if f.Schedule == "" && !all {
			continue
		}
		var sched *Schedule
		if f.Schedule != "" {
			sched, err = ParseSchedule(f.Schedule, f.Timezone)
		}
		fi := info(f, sched, file, now, n)
		if err != nil {
			fi.Problem = err.Error()
		} else if other, dup := names[f.Name]; dup {
			fi.Problem = fmt.Sprintf("flow %q is already defined in %s", f.Name, other)
		}
		names[f.Name] = cmp.Or(names[f.Name], file)
		out = append(out, fi)
	}
	sortInfos(out)
	return out, nil
}

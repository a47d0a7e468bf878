package engine

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/geoflow/geoflow/store"
)

// Progress collects live counts per task for a display. The zero value is ready to use;
// a nil *Progress ignores updates. It is safe for concurrent use.
type Progress struct {
	mu    sync.Mutex
	tasks map[string]*TaskProgress
}

// TaskProgress is the live state of one task. A nil *TaskProgress ignores updates.
type TaskProgress struct {
	ID        string
	Started   time.Time
	total     atomic.Int64
	completed atomic.Int64
	dead      atomic.Int64
	inserted  atomic.Int64
	skipped   atomic.Int64
	bytes     atomic.Int64
}

// Snapshot is a copy of one task's counts at an instant.
type Snapshot struct {
	ID                       string
	Started                  time.Time
	Total, Done, Dead        int64
	Inserted, Skipped, Bytes int64
}

func (p *Progress) task(id string) *TaskProgress {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tasks == nil {
		p.tasks = map[string]*TaskProgress{}
	}
	t, ok := p.tasks[id]
	if !ok {
		t = &TaskProgress{ID: id, Started: time.Now()}
		p.tasks[id] = t
	}
	return t
}

// Snapshot returns every started task's counts, by task id.
func (p *Progress) Snapshot() []Snapshot {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Snapshot, 0, len(p.tasks))
	for _, t := range p.tasks {
		out = append(out, Snapshot{ID: t.ID, Started: t.Started, Total: t.total.Load(), Done: t.completed.Load(),
			Dead: t.dead.Load(), Inserted: t.inserted.Load(), Skipped: t.skipped.Load(), Bytes: t.bytes.Load()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (t *TaskProgress) addTotal(n int64) {
	if t != nil {
		t.total.Add(n)
	}
}

// finished counts a unit's output; dead says the unit was then dead-lettered (features
// refused) instead of done.
func (t *TaskProgress) finished(r store.Counts, dead bool) {
	if t == nil {
		return
	}
	if dead {
		t.dead.Add(1)
	} else {
		t.completed.Add(1)
	}
	t.inserted.Add(r.Inserted + r.Updated)
	t.skipped.Add(r.Skipped)
	t.bytes.Add(r.Bytes)
}

func (t *TaskProgress) failed() {
	if t != nil {
		t.dead.Add(1)
	}
}

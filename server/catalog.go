package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/schedule"
)

// Catalog is the flows directory as the web UI shows it: every flow, scheduled or not,
// read from the files on each request (a flow edited on disk shows as it is now).
type Catalog struct {
	// Dir is the directory of flow files (geoflow serve --flows); required.
	Dir string
	// Options parse the flows; Registry is required.
	Options flows.Options
	// Live, when set, is the scheduler of this process: its next fires and the runs it
	// has going and queued are shown for the flows it schedules.
	Live FlowLister
	// Now defaults to time.Now.
	Now func() time.Time
}

// ErrNoFlow is returned when the catalog has no flow of the name asked for.
var ErrNoFlow = errors.New("server: no such flow")

// List describes every flow of Dir (and the files that do not load, with their
// problem), with the next n fire times of the scheduled ones; sorted by name. A problem
// may quote a value the environment gave (${VAR}): it is masked with Options.Secrets,
// which parsing the file has just filled.
func (c *Catalog) List(n int) ([]schedule.FlowInfo, error) {
	now := time.Now()
	if c.Now != nil {
		now = c.Now()
	}
	infos, err := schedule.ListAll(c.Dir, c.Options, now, n)
	if err != nil {
		return nil, err
	}
	for i := range infos {
		infos[i].Problem = c.Options.Secrets.String(infos[i].Problem)
	}
	if c.Live == nil {
		return infos, nil
	}
	live := map[string]schedule.FlowInfo{}
	for _, fi := range c.Live.Flows(n) {
		live[fi.Name] = fi
	}
	for i, fi := range infos {
		if l, ok := live[fi.Name]; ok && fi.Problem == "" {
			infos[i].NextFires, infos[i].Running, infos[i].Queued = l.NextFires, l.Running, l.Queued
		}
	}
	return infos, nil
}

// Load parses the flow called name from Dir. It fails wrapping ErrNoFlow when no file
// defines it, and with the file's problems when the file that does is not valid; the
// error's text has the values of Options.Secrets masked, as pages and the API show it.
func (c *Catalog) Load(name string) (*flows.Flow, error) {
	des, err := os.ReadDir(c.Dir)
	if err != nil {
		return nil, fmt.Errorf("reading the flows directory: %w", err)
	}
	var files []string
	for _, de := range des {
		ext := filepath.Ext(de.Name())
		if !de.IsDir() && !strings.HasPrefix(de.Name(), ".") && (ext == ".yaml" || ext == ".yml") {
			files = append(files, filepath.Join(c.Dir, de.Name()))
		}
	}
	sort.Strings(files)
	// The file named after the flow first: usually it is the one.
	for i, f := range files {
		if base := strings.TrimSuffix(filepath.Base(f), filepath.Ext(f)); base == name {
			files[0], files[i] = files[i], files[0]
		}
	}
	var problem error
	for _, file := range files {
		f, err := flows.Load(file, c.Options)
		if err != nil {
			if strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)) == name {
				problem = err
			}
			continue
		}
		if f.Name == name {
			return f, nil
		}
	}
	if problem != nil {
		return nil, &maskedError{msg: c.Options.Secrets.String(problem.Error()), err: problem}
	}
	return nil, fmt.Errorf("flow %q: %w in %s", name, ErrNoFlow, c.Dir)
}

// maskedError is err with its text masked: what a page or the API shows. Unwrap gives
// the error itself, for errors.Is and errors.As, not for showing.
type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }

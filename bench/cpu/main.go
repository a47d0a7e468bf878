// Command cpu reads CPU profiles of geoflow runs (geoflow run --cpuprofile) and says where the
// client's CPU went: microseconds per stored feature by stage (read and decode, hash, encode,
// write and commit, index, runtime/GC, other), then the top flat functions, as Markdown.
// bench/cpu.sh runs it (make bench-cpu); by hand:
//
//	go run ./bench/cpu -features 1000000 'geojson postgis=a.prof,b.prof' 'geojson gpkg=c.prof'
//
// Each argument is a combination: a name, '=', and the profiles of its rounds, which are
// averaged. How a sample is given a stage is the pure function stageOf, documented there.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
)

// The stages, in the order of the table.
const (
	stRead   = "read and decode"
	stHash   = "hash"
	stEncode = "encode"
	stWrite  = "write and commit"
	stIndex  = "index"
	stGC     = "runtime/GC"
	stOther  = "other"
)

var stages = []string{stRead, stHash, stEncode, stWrite, stIndex, stGC, stOther}

// frame is one function on a sampled stack: its name and source file.
type frame struct{ fn, file string }

// rule gives a stage to a frame whose "name file" matches re.
type rule struct {
	stage string
	re    *regexp.Regexp
}

const gf = `^github\.com/geoflow/geoflow/`

// rules are tried on each frame from the leaf upward; for one frame the first rule that
// matches wins. Generic frames (syscalls, net, bufio, io, os, runtime.memmove) match no rule,
// so a write(2) on the PostgreSQL socket belongs to pgconn above it and a read(2) on the HTTP
// connection to net/http.
var rules = []rule{
	{stGC, regexp.MustCompile(`^runtime\.(mallocgc\w*|newobject|gcBgMarkWorker|gcAssistAlloc\w*|bgsweep|bgscavenge|gcStart|gcMarkDone|gcMarkTermination|sweepone|deductSweepCredit|GC) `)},
	{stHash, regexp.MustCompile(` \S*spatial/hash\.go$`)},
	{stEncode, regexp.MustCompile(`^github\.com/jackc/pgx/v5\.(encodeCopyValue|\(\*copyFrom\)\.buildCopyBuf) |^github\.com/jackc/pgx/v5/pgtype\.|` +
		gf + `store/postgis\.(featureRow|\(\*rowBuilder\)\.(build|cell)|appendCopyRow|appendRow|appendCopyWKB|appendCell|endField|appendCopyText|appendCopyBytes|appendCopyNull) |` + gf + `store/gpkg\.(encodeFeature|columnValue|exportAsIs|validDateTime|parseDate|appendDigits) | \S*store/gpkg/geom_encode\.go$|` +
		gf + `spatial/wkb\.|^github\.com/paulmach/orb/encoding/`)},
	{stRead, regexp.MustCompile(gf + `spatial/(geojson|gml|esrijson|internal)\.|` + gf + `spatial\.(validate|Validate)|` +
		gf + `store\.\(\*ValidFeatures\)|` + gf + `tasks\.\(\*Spool\)| \S*tasks/spool\.go$`)},
	{stWrite, regexp.MustCompile(`^github\.com/jackc/|^modernc\.org/(sqlite|libc)|^database/sql\.|` + gf + `store/(postgis|gpkg)\.`)},
	{stRead, regexp.MustCompile(`^net/http\.|^compress/|` + gf + `retry\.|` + gf + `tasks/(wfs|ogcapi|arcgis|internal/harvest)\.`)},
}

// index claims a whole stack: the R-tree build and that of a new table's payload-hash
// index (CREATE UNIQUE INDEX at the end of the harvest) run SQL, whose SQLite frames would
// otherwise match write first.
var index = regexp.MustCompile(` \S*store/gpkg/rtree\.go$|` + gf + `store/gpkg\.\(\*Store\)\.buildHashIndex(\.func\d+)? `)

// stageOf gives a sampled stack (leaf first) its stage: index if the GeoPackage R-tree build
// or the build of a new table's payload-hash index is anywhere on it; else the first frame
// from the leaf upward that a rule matches; else runtime/GC when every frame is the
// runtime's (the scheduler, signals, stack growth); else other. It also returns the
// function that decided (for other: the root of the stack).
func stageOf(stack []frame) (stage, by string) {
	for _, f := range stack {
		if index.MatchString(f.fn + " " + f.file) {
			return stIndex, f.fn
		}
	}
	for _, f := range stack {
		key := f.fn + " " + f.file
		for _, r := range rules {
			if r.re.MatchString(key) {
				return r.stage, f.fn
			}
		}
	}
	if len(stack) == 0 {
		return stOther, ""
	}
	root := stack[len(stack)-1].fn
	for _, f := range stack {
		if !strings.HasPrefix(f.fn, "runtime.") && !strings.HasPrefix(f.fn, "internal/runtime/") {
			return stOther, root
		}
	}
	return stGC, root
}

// combo is what the profiles of one combination add up to, in nanoseconds of CPU.
type combo struct {
	name     string
	profiles int
	total    int64
	byStage  map[string]int64
	flat     map[string]int64
	by       map[string]map[string]int64 // stage -> deciding function -> ns
}

// stack is a sample's frames, leaf first, inlined functions included.
func stack(s *profile.Sample) []frame {
	var out []frame
	for _, loc := range s.Location {
		for _, ln := range loc.Line {
			if ln.Function != nil {
				out = append(out, frame{ln.Function.Name, ln.Function.Filename})
			}
		}
	}
	return out
}

// cpuIndex is the index of the cpu/nanoseconds value in the profile's samples.
func cpuIndex(p *profile.Profile) (int, error) {
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			return i, nil
		}
	}
	return 0, errors.New("no cpu sample type (not a CPU profile?)")
}

// add reads one profile into c.
func (c *combo) add(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return fmt.Errorf("parsing profile %s: %w", path, err)
	}
	i, err := cpuIndex(p)
	if err != nil {
		return fmt.Errorf("profile %s: %w", path, err)
	}
	for _, s := range p.Sample {
		st := stack(s)
		v := s.Value[i]
		c.total += v
		stage, by := stageOf(st)
		c.byStage[stage] += v
		if c.by[stage] == nil {
			c.by[stage] = map[string]int64{}
		}
		c.by[stage][by] += v
		if len(st) > 0 {
			c.flat[st[0].fn] += v
		}
	}
	c.profiles++
	return nil
}

// parseCombo reads "name=a.prof,b.prof".
func parseCombo(arg string) (*combo, error) {
	name, list, ok := strings.Cut(arg, "=")
	if !ok || name == "" || list == "" {
		return nil, fmt.Errorf("argument %q: want NAME=PROFILE[,PROFILE...]", arg)
	}
	c := &combo{name: name, byStage: map[string]int64{}, flat: map[string]int64{}, by: map[string]map[string]int64{}}
	for _, path := range strings.Split(list, ",") {
		if err := c.add(path); err != nil {
			return nil, fmt.Errorf("combination %q: %w", name, err)
		}
	}
	return c, nil
}

// perFeature is ns of CPU over all of c's profiles, in microseconds per feature per round.
func (c *combo) perFeature(ns int64, features int) float64 {
	return float64(ns) / 1e3 / float64(features) / float64(c.profiles)
}

func writeStages(w io.Writer, combos []*combo, features int) {
	fmt.Fprintf(w, "CPU by stage, microseconds per stored feature (%d features; the profiles' samples, mean of the rounds)\n\n", features)
	fmt.Fprintf(w, "| combination | %s | total |\n|---|%s---|\n", strings.Join(stages, " | "), strings.Repeat("---|", len(stages)))
	for _, c := range combos {
		fmt.Fprintf(w, "| %s |", c.name)
		for _, s := range stages {
			fmt.Fprintf(w, " %.1f |", c.perFeature(c.byStage[s], features))
		}
		fmt.Fprintf(w, " %.1f |\n", c.perFeature(c.total, features))
	}
}

// largest is m's keys, the largest values first.
func largest(m map[string]int64) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		if m[names[i]] != m[names[j]] {
			return m[names[i]] > m[names[j]]
		}
		return names[i] < names[j]
	})
	return names
}

// writeWhy lists, per stage, the functions that decided most of its samples: the rules at work.
func writeWhy(w io.Writer, c *combo, features int) {
	fmt.Fprintf(w, "\nWhat decided each stage, %s (the matching frame nearest the leaf; us/feature)\n\n", c.name)
	for _, s := range stages {
		var parts []string
		for _, fn := range largest(c.by[s])[:min(3, len(c.by[s]))] {
			parts = append(parts, fmt.Sprintf("`%s` %.1f", fn, c.perFeature(c.by[s][fn], features)))
		}
		if len(parts) > 0 {
			fmt.Fprintf(w, "- %s: %s\n", s, strings.Join(parts, ", "))
		}
	}
}

func writeTop(w io.Writer, c *combo, features, n int) {
	names := largest(c.flat)
	fmt.Fprintf(w, "\nTop %d flat, %s\n\n| us/feature | flat %% | function |\n|---|---|---|\n", n, c.name)
	for _, fn := range names[:min(n, len(names))] {
		fmt.Fprintf(w, "| %.2f | %.1f%% | `%s` |\n", c.perFeature(c.flat[fn], features), 100*float64(c.flat[fn])/float64(c.total), fn)
	}
}

func main() {
	features := flag.Int("features", 0, "stored features per run (the divisor)")
	top := flag.Int("top", 15, "flat entries listed per combination")
	flag.Parse()
	if *features <= 0 || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: cpu -features N NAME=PROFILE[,PROFILE...] ...")
		os.Exit(2)
	}
	var combos []*combo
	for _, arg := range flag.Args() {
		c, err := parseCombo(arg)
		if err != nil {
			fmt.Fprintln(os.Stderr, "cpu:", err)
			os.Exit(1)
		}
		combos = append(combos, c)
	}
	writeStages(os.Stdout, combos, *features)
	for _, c := range combos {
		writeTop(os.Stdout, c, *features, *top)
		writeWhy(os.Stdout, c, *features)
	}
}

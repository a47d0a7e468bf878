// Command hostile runs geoflow against servers that misbehave on purpose, one scenario a
// row, and prints what geoflow did: its exit code, the run's and the task's state, the
// distinct features stored against those the server really holds, the units it planned,
// its dead letters by class, the geoflow process's peak RSS (the child's maxrss from
// wait4) and the wall time. Every scenario is cut off after -cap (150 s by default): a
// run still going then is SIGKILLed and reported as "no end".
//
//	make build
//	bash internal/testdb/postgis.sh run --env GEOFLOW_DATABASE_URL -- go run ./bench/hostile -geoflow bin/geoflow
//	go run ./bench/hostile -only 3,4
//
// The servers are the sample servers of internal/devserver on 127.0.0.1, wrapped in
// proxies that misbehave as each row says (fixtures.go). Targets are a fresh GeoPackage
// per scenario, except row 8 (PostGIS, from $GEOFLOW_DATABASE_URL) and row 9 (a
// GeoPackage on a small tmpfs this program mounts, which needs root).
package main

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // reading the GeoPackages geoflow wrote

	"github.com/geoflow/geoflow/internal/devserver/arcgisserver"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
)

type options struct {
	geoflow string
	only    map[int]bool
	cap     time.Duration
	keep    bool
	pg      string // PostgreSQL URL for row 8; "" skips it
	// storeWait, when set, is passed to row 9's run as --store-wait (a geoflow that has
	// the flag waits that long for a full disk before it stops the run).
	storeWait time.Duration
}

// bench is one invocation's shared state: the options and the workspace.
type bench struct {
	options
	dir string
}

// scenario is one row of the table.
type scenario struct {
	row  int
	what string
	run  func(ctx context.Context, b *bench, s *scenario) (outcome, error)
}

// outcome is what one scenario measured.
type outcome struct {
	exits     []string
	runState  string
	taskState string
	stored    int // distinct features stored; -1 when not counted
	real      int
	units     int64
	dead      map[string]int
	rssKB     int64
	wall      time.Duration
	mirror    string
	note      string
	skipped   string
}

func main() {
	var o options
	var only string
	flag.StringVar(&o.geoflow, "geoflow", "bin/geoflow", "the geoflow binary")
	flag.StringVar(&only, "only", "", "comma-separated rows to run (1-9); default all")
	flag.DurationVar(&o.cap, "cap", 150*time.Second, "hard cap per scenario: a geoflow run still going is killed and reported as no end")
	flag.DurationVar(&o.storeWait, "store-wait", 0, "pass --store-wait to row 9's geoflow run (0: not passed; geoflow without the flag refuses it)")
	flag.BoolVar(&o.keep, "keep", false, "keep the workspace (flows, logs, GeoPackages) and print where it is")
	flag.Parse()
	o.pg = os.Getenv("GEOFLOW_DATABASE_URL")
	if strings.HasSuffix(o.pg, ".gpkg") {
		o.pg = ""
	}
	if only != "" {
		o.only = map[int]bool{}
		for _, f := range strings.Split(only, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 || n > len(scenarios()) {
				fmt.Fprintf(os.Stderr, "hostile: -only %q: rows are 1 to %d\n", only, len(scenarios()))
				os.Exit(2)
			}
			o.only[n] = true
		}
	}
	bin, err := filepath.Abs(o.geoflow)
	if err == nil {
		_, err = os.Stat(bin)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "hostile: -geoflow %s: %v (make build)\n", o.geoflow, err)
		os.Exit(2)
	}
	o.geoflow = bin
	dir, err := os.MkdirTemp("", "geoflow-hostile")
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		os.Exit(1)
	}
	if o.keep {
		fmt.Fprintln(os.Stderr, "workspace:", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	b := &bench{options: o, dir: dir}
	fmt.Printf("geoflow %s, each scenario cut off after %s\n\n", version(bin), o.cap)
	fmt.Println("| # | what the server did | exit | run | task | stored (distinct) / real | units planned | dead letters | peak RSS | wall | mirror: deleted/closed | notes |")
	fmt.Println("|---|---|---|---|---|---:|---:|---|---:|---:|---|---|")
	failed := false
	all := scenarios()
	for i := range all {
		s := &all[i]
		if o.only != nil && !o.only[s.row] {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), o.cap)
		start := time.Now()
		out, err := s.run(ctx, b, s)
		cancel()
		if out.wall == 0 {
			out.wall = time.Since(start)
		}
		if err != nil {
			failed = true
			out.skipped = "bench error: " + err.Error()
		}
		fmt.Println(out.format(s))
	}
	if failed {
		os.Exit(1)
	}
}

func version(bin string) string {
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		return "(version unknown)"
	}
	return strings.TrimSpace(string(out))
}

func (o outcome) format(s *scenario) string {
	if o.skipped != "" {
		return fmt.Sprintf("| %d | %s | skipped: %s | | | | | | | | | |", s.row, s.what, o.skipped)
	}
	stored := "-"
	if o.stored >= 0 {
		stored = fmt.Sprintf("%s / %s", thousands(int64(o.stored)), thousands(int64(o.real)))
	}
	var dead []string
	for _, c := range slices.Sorted(maps.Keys(o.dead)) {
		dead = append(dead, fmt.Sprintf("%s %s", thousands(int64(o.dead[c])), c))
	}
	return fmt.Sprintf("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %.0f s | %s | %s |", s.row, s.what,
		strings.Join(o.exits, ", "), cmp.Or(o.runState, "-"), cmp.Or(o.taskState, "-"), stored, thousands(o.units),
		cmp.Or(strings.Join(dead, ", "), "0"), mib(o.rssKB), o.wall.Seconds(), cmp.Or(o.mirror, "-"), o.note)
}

func mib(kb int64) string {
	if kb >= 1<<20 {
		return fmt.Sprintf("%.2f GiB", float64(kb)/(1<<20))
	}
	return fmt.Sprintf("%d MiB", kb>>10)
}

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}

// serve serves h on a fresh loopback port until the returned stop is called.
func serve(h http.Handler) (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	return ln.Addr().String(), func() { _ = hs.Close() }, nil
}

// flow writes a flow of one task named parcels and returns its path.
func (b *bench) flow(name, task string) (string, error) {
	p := filepath.Join(b.dir, name+".yaml")
	return p, os.WriteFile(p, []byte(fmt.Sprintf("name: %s\ntasks:\n  parcels:\n%s", name, task)), 0o644)
}

// execResult is how one geoflow run ended.
type execResult struct {
	exit  string
	rssKB int64
	wall  time.Duration
	ended bool
}

// run runs geoflow run FLOW against db with args, its output appended to log, killed
// when ctx ends.
func (b *bench) run(ctx context.Context, db, flow, log string, args ...string) (execResult, error) {
	logf, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return execResult{}, err
	}
	defer logf.Close()
	cmd := exec.CommandContext(ctx, b.geoflow, append([]string{"run", flow, "--database", db, "--progress", "off"}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "GEOFLOW_DATABASE_URL="+db)
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return execResult{}, fmt.Errorf("starting geoflow: %w", err)
	}
	err = cmd.Wait()
	r := execResult{wall: time.Since(start), ended: true}
	if ps := cmd.ProcessState; ps != nil {
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			r.rssKB = ru.Maxrss // kilobytes on Linux
		}
	}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.exit, r.ended = fmt.Sprintf("**no end** (killed at %.0f s)", r.wall.Seconds()), false
	case err == nil:
		r.exit = "0"
	case errors.As(err, &ee) && ee.ProcessState.Sys().(syscall.WaitStatus).Signaled():
		r.exit = "killed by " + ee.ProcessState.Sys().(syscall.WaitStatus).Signal().String()
	case errors.As(err, &ee):
		r.exit = strconv.Itoa(ee.ExitCode())
	default:
		return r, fmt.Errorf("geoflow run: %w", err)
	}
	return r, nil
}

// runRecord is what `geoflow runs show --json` says about a run.
type runRecord struct {
	ID         int64  `json:"id"`
	Status     string `json:"status"`
	UnitsTotal int64  `json:"units_total"`
	Tasks      []struct {
		State           string `json:"state"`
		UnitsTotal      int64  `json:"units_total"`
		FeaturesDeleted int64  `json:"features_deleted"`
		VersionsClosed  int64  `json:"versions_closed"`
		MirrorNote      string `json:"mirror_note"`
	} `json:"tasks"`
}

// cli runs a geoflow command against db and returns its standard output.
func (b *bench) cli(db string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.geoflow, append(args, "--database", db, "--log-level", "error")...)
	cmd.Env = append(os.Environ(), "GEOFLOW_DATABASE_URL="+db)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("geoflow %s: %w: %s", strings.Join(args, " "), err, ee.Stderr)
		}
		return nil, fmt.Errorf("geoflow %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}

// latest returns the latest run of flow as runs list (which tells crashed runs) and runs
// show (its tasks) report it.
func (b *bench) latest(db, flow string) (runRecord, error) {
	out, err := b.cli(db, "runs", "list", "--flow", flow, "--limit", "1", "--json")
	if err != nil {
		return runRecord{}, err
	}
	var list []runRecord
	if err := json.Unmarshal(out, &list); err != nil || len(list) == 0 {
		return runRecord{}, fmt.Errorf("runs list --flow %s: no run (%v): %s", flow, err, out)
	}
	out, err = b.cli(db, "runs", "show", strconv.FormatInt(list[0].ID, 10), "--json")
	if err != nil {
		return runRecord{}, err
	}
	var r runRecord
	if err := json.Unmarshal(out, &r); err != nil {
		return runRecord{}, fmt.Errorf("runs show %d: %w", list[0].ID, err)
	}
	r.Status = list[0].Status
	return r, nil
}

// deadLetters counts run's dead letters, of any status, by class.
func (b *bench) deadLetters(db string, run int64) (map[string]int, error) {
	out, err := b.cli(db, "dlq", "list", "--run", strconv.FormatInt(run, 10), "--status", "all", "--limit", "0", "--json")
	if err != nil {
		return nil, err
	}
	var list []struct {
		Class string `json:"error_class"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("dlq list --json: %w", err)
	}
	m := map[string]int{}
	for _, e := range list {
		m[e.Class]++
	}
	return m, nil
}

// distinct counts the distinct feature ids in table (where is an optional condition);
// a table that does not exist holds none.
func distinct(db, table, where string) (int, error) {
	q := "SELECT count(DISTINCT gf_feature_id) FROM " + table
	if where != "" {
		q += " WHERE " + where
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var n int
	if strings.HasSuffix(db, ".gpkg") {
		d, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
		if err != nil {
			return 0, err
		}
		defer d.Close()
		err = d.QueryRowContext(ctx, q).Scan(&n)
		if err != nil && strings.Contains(err.Error(), "no such table") {
			return 0, nil
		}
		return n, err
	}
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	err = conn.QueryRow(ctx, q).Scan(&n)
	if err != nil && strings.Contains(err.Error(), "does not exist") {
		return 0, nil
	}
	return n, err
}

// finish fills o from the flow's latest run in db: states, units, dead letters and the
// distinct features stored in table.
func (b *bench) finish(o *outcome, db, flow, table, where string) error {
	r, err := b.latest(db, flow)
	if err != nil {
		return err
	}
	o.runState = r.Status
	o.units = r.UnitsTotal
	if len(r.Tasks) > 0 {
		o.taskState = r.Tasks[0].State
		o.units = r.Tasks[0].UnitsTotal
	}
	if o.dead, err = b.deadLetters(db, r.ID); err != nil {
		return err
	}
	o.stored, err = distinct(db, table, where)
	return err
}

// single is a scenario of one run against h, into a fresh GeoPackage.
func (b *bench) single(ctx context.Context, s *scenario, h http.Handler, task string, held int) (outcome, error) {
	addr, stop, err := serve(h)
	if err != nil {
		return outcome{}, err
	}
	defer stop()
	name := fmt.Sprintf("hostile_%d", s.row)
	flow, err := b.flow(name, strings.ReplaceAll(task, "ADDR", addr))
	if err != nil {
		return outcome{}, err
	}
	db := filepath.Join(b.dir, name+".gpkg")
	x, err := b.run(ctx, db, flow, filepath.Join(b.dir, name+".log"))
	if err != nil {
		return outcome{}, err
	}
	o := outcome{exits: []string{x.exit}, rssKB: x.rssKB, wall: x.wall, real: held,
		note: joinNotes(readSummary(filepath.Join(b.dir, name+".log")), fileSize(db))}
	stop()
	return o, b.finish(&o, db, name, "hostile", "")
}

const ogcapiTask = `    type: ogcapi_features
    url: http://ADDR/ogcapi
    collection: parcels
    target: {table: hostile}
`

// scenarios are the rows of the table, in order.
func scenarios() []scenario {
	return []scenario{
		{row: 1, what: "OGC API, append: 5,000 features; 3 silently left out of every page, counts correct", run: func(ctx context.Context, b *bench, s *scenario) (outcome, error) {
			srv := wfsserver.New(wfsserver.Options{Features: 5000, Seed: 1})
			o, err := b.single(ctx, s, omitting(srv, 17, 2500, 4999), ogcapiTask, srv.Len())
			if err == nil {
				o.note = joinNotes(o.note, logNote(filepath.Join(b.dir, "hostile_1.log"), "not taken as missing", "INCOMPLETE"))
			}
			return o, err
		}},
		{row: 2, what: "OGC API mirror with history, 5,000 features: after a full run, 5% hidden from the listing, count lowered to match, still answered by id; then shown again, and hidden for a --bbox rerun of 9% of the area", run: runMirror},
		{row: 3, what: "OGC API: numberMatched 1,000,000,000,000 on every answer (5,000 real)", run: func(ctx context.Context, b *bench, s *scenario) (outcome, error) {
			srv := wfsserver.New(wfsserver.Options{Features: 5000, Seed: 1})
			return b.single(ctx, s, countingHigh(srv, 1_000_000_000_000), ogcapiTask, srv.Len())
		}},
		{row: 4, what: "OGC API: no count, every page full with the same 500 ids, next pointing at itself", run: func(ctx context.Context, b *bench, s *scenario) (outcome, error) {
			srv := wfsserver.New(wfsserver.Options{Features: 5000, Seed: 1, CountDefault: 500})
			h, err := newSamePage(srv, 500)
			if err != nil {
				return outcome{}, err
			}
			return b.single(ctx, s, h, ogcapiTask, 500)
		}},
		{row: 5, what: "ArcGIS, 5,000 features: exceededTransferLimit true on every id listing", run: func(ctx context.Context, b *bench, s *scenario) (outcome, error) {
			srv := arcgisserver.New(arcgisserver.Options{Features: 5000, Seed: 1})
			return b.single(ctx, s, alwaysExceeded(srv), arcgisTask, srv.Len())
		}},
		{row: 6, what: "ArcGIS: 5,000,000 object ids listed and counted, 5,000 real", run: func(ctx context.Context, b *bench, s *scenario) (outcome, error) {
			srv := arcgisserver.New(arcgisserver.Options{Features: 5000, Seed: 1})
			o, err := b.single(ctx, s, phantomIDs(srv, 5_000_000), arcgisTask, srv.Len())
			if err == nil {
				o.note = joinNotes(o.note, logNote(filepath.Join(b.dir, "hostile_6.log"), "INCOMPLETE"))
			}
			return o, err
		}},
		{row: 7, what: "OGC API: 4 polygons of 4,990,000 vertices (about 120 MB each), one a page, in 4 quadrants fetched at once", run: func(ctx context.Context, b *bench, s *scenario) (outcome, error) {
			return b.single(ctx, s, newGiants(4, 4_990_000), strings.ReplaceAll(ogcapiTask, "parcels", "giants"), 4)
		}},
		{row: 8, what: "PostGIS target: one polygon of 7 with an unclosed exterior ring (OGC API)", run: runUnclosed},
		{row: 9, what: "GeoPackage on a 24 MiB tmpfs that fills up: 100,000 features (OGC API)", run: runDiskFull},
	}
}

const arcgisTask = `    type: arcgis_features
    url: http://ADDR/arcgis/rest/services/Parcels/FeatureServer/0
    target: {table: hostile}
`

// logNote counts the lines of log holding each of needles, for the notes column.
func logNote(log string, needles ...string) string {
	b, err := os.ReadFile(log)
	if err != nil {
		return ""
	}
	var parts []string
	for _, n := range needles {
		c := 0
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, n) {
				c++
			}
		}
		if c > 0 {
			parts = append(parts, fmt.Sprintf("%s log lines with %q", thousands(int64(c)), n))
		}
	}
	return strings.Join(parts, "; ")
}

func runMirror(ctx context.Context, b *bench, s *scenario) (outcome, error) {
	srv := wfsserver.New(wfsserver.Options{Features: 5000, Seed: 1})
	view := newFilteredView(srv, func(i int) bool { return i%20 == 7 }) // 250 of 5,000
	addr, stop, err := serve(view)
	if err != nil {
		return outcome{}, err
	}
	defer stop()
	name := "hostile_2"
	flow, err := b.flow(name, strings.ReplaceAll(strings.ReplaceAll(ogcapiTask, "ADDR", addr), "{table: hostile}", "{table: hostile, mode: mirror, history: true}"))
	if err != nil {
		return outcome{}, err
	}
	db, log := filepath.Join(b.dir, name+".gpkg"), filepath.Join(b.dir, name+".log")
	o := outcome{real: srv.Len()}
	var mirror []string
	for _, step := range []struct {
		label string
		hide  bool
		args  []string
	}{
		{"full run", false, nil},
		{"hidden", true, nil},
		// Shown again, the hidden features come back as new versions; hidden once more,
		// a rerun of part of the area is the other way to close them.
		{"shown", false, nil},
		{"hidden --bbox", true, []string{"--bbox", "11.47,48.07,11.50,48.10"}},
	} {
		view.Hide.Store(step.hide)
		x, err := b.run(ctx, db, flow, log, step.args...)
		if err != nil {
			return o, err
		}
		o.exits = append(o.exits, step.label+": "+x.exit)
		o.rssKB = max(o.rssKB, x.rssKB)
		o.wall += x.wall
		r, err := b.latest(db, name)
		if err != nil {
			return o, err
		}
		if step.hide && len(r.Tasks) > 0 {
			mirror = append(mirror, fmt.Sprintf("%s: %d deleted, %d closed", step.label, r.Tasks[0].FeaturesDeleted, r.Tasks[0].VersionsClosed))
		}
		if !x.ended {
			break
		}
	}
	o.mirror = strings.Join(mirror, "; ")
	return o, b.finish(&o, db, name, "hostile", "gf_valid_to IS NULL")
}

func runUnclosed(ctx context.Context, b *bench, s *scenario) (outcome, error) {
	if b.pg == "" {
		return outcome{skipped: "no PostgreSQL: run under internal/testdb/postgis.sh run --env GEOFLOW_DATABASE_URL"}, nil
	}
	srv := wfsserver.New(wfsserver.Options{Features: 7, Seed: 1})
	addr, stop, err := serve(unclosedRing(srv, 3))
	if err != nil {
		return outcome{}, err
	}
	defer stop()
	name := "hostile_8"
	table := fmt.Sprintf("hostile_8_%d", time.Now().UnixNano())
	flow, err := b.flow(name, strings.ReplaceAll(strings.ReplaceAll(ogcapiTask, "ADDR", addr), "{table: hostile}", "{table: "+table+"}"))
	if err != nil {
		return outcome{}, err
	}
	x, err := b.run(ctx, b.pg, flow, filepath.Join(b.dir, name+".log"))
	if err != nil {
		return outcome{}, err
	}
	o := outcome{exits: []string{x.exit}, rssKB: x.rssKB, wall: x.wall, real: srv.Len()}
	err = b.finish(&o, b.pg, name, table, "")
	dropTable(b.pg, table)
	return o, err
}

func dropTable(db, table string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{table}.Sanitize()+" CASCADE")
}

func runDiskFull(ctx context.Context, b *bench, s *scenario) (outcome, error) {
	if os.Geteuid() != 0 {
		return outcome{skipped: "not root: mounting a small tmpfs needs root"}, nil
	}
	mnt := filepath.Join(b.dir, "full")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		return outcome{}, err
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", mnt).CombinedOutput(); err != nil {
		return outcome{skipped: fmt.Sprintf("mount -t tmpfs failed: %v: %s", err, strings.TrimSpace(string(out)))}, nil
	}
	defer func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "hostile: umount %s: %v: %s\n", mnt, err, out)
		}
	}()
	srv := wfsserver.New(wfsserver.Options{Features: 100_000, Seed: 1})
	addr, stop, err := serve(srv)
	if err != nil {
		return outcome{}, err
	}
	defer stop()
	name := "hostile_9"
	flow, err := b.flow(name, strings.ReplaceAll(ogcapiTask, "ADDR", addr))
	if err != nil {
		return outcome{}, err
	}
	db, log := filepath.Join(mnt, name+".gpkg"), filepath.Join(b.dir, name+".log")
	var args []string
	if b.storeWait > 0 {
		args = []string{"--store-wait", b.storeWait.String()}
	}
	x, err := b.run(ctx, db, flow, log, args...)
	if err != nil {
		return outcome{}, err
	}
	o := outcome{exits: []string{x.exit}, rssKB: x.rssKB, wall: x.wall, real: srv.Len()}
	lines, errs := countLog(log)
	o.note = fmt.Sprintf("%s log lines, %s at level ERROR; %s", thousands(int64(lines)), thousands(int64(errs)),
		logNote(log, "the store failed", "the store answers again"))
	// The run's record is in the full GeoPackage: read it from a copy on the disk, with
	// room for SQLite to recover its journal.
	cp := filepath.Join(b.dir, name+"-copy.gpkg")
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		if data, err := os.ReadFile(db + suffix); err == nil {
			if err := os.WriteFile(cp+suffix, data, 0o644); err != nil {
				return o, err
			}
		}
	}
	return o, b.finish(&o, cp, name, "hostile", "")
}

// readSummary is what the end of a run's report says geoflow read ("2845.9 MB read"),
// or "" when the run did not get there.
func readSummary(log string) string {
	data, err := os.ReadFile(log)
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(data), "\n") {
		if _, after, ok := strings.Cut(l, "features: "); ok {
			if _, mb, ok := strings.Cut(after, "; "); ok && strings.HasSuffix(mb, "MB read") {
				return mb
			}
		}
	}
	return ""
}

// fileSize is the size of a GeoPackage with its write-ahead log, for the notes column.
func fileSize(db string) string {
	var n int64
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(db + suffix); err == nil {
			n += fi.Size()
		}
	}
	return fmt.Sprintf("GeoPackage %s MB", thousands(n>>20))
}

func joinNotes(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

// countLog counts a log's lines and those at level ERROR.
func countLog(log string) (lines, errs int) {
	data, err := os.ReadFile(log)
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		lines++
		if strings.Contains(l, "level=ERROR") || strings.Contains(l, `"level":"ERROR"`) {
			errs++
		}
	}
	return lines, errs
}

// Package gpkg is geoflow's embedded store: one GeoPackage file (OGC 12-128r18) holding
// the feature tables, the tile and asset indexes and geoflow's own bookkeeping (runs,
// tasks, units, dead letters, schedule fires), so that a harvest needs no server and a
// user can copy one file and keep the whole history. It is the only package that imports
// SQLite (modernc.org/sqlite: pure Go, no cgo).
//
// SQLite has one writer. Every write of this process goes through one connection, in WAL
// mode, so readers (`geoflow dlq list` while a run goes) never block it and are never
// blocked; a unit's features are decoded and encoded before its transaction takes the
// writer, which then holds it only for the inserts. Processes sharing a file hold locks on
// a sidecar file (FILE-lock) for what must not overlap: a run, a flow's runs, a server.
// Those locks end with the process, so a crash never leaves a run looking busy.
package gpkg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/store"
)

var _ store.Store = (*Store)(nil)

// Store is one GeoPackage file. It is safe for concurrent use; Close releases it.
type Store struct {
	path  string
	w     *sql.DB // the one writer connection
	r     *sql.DB // readers
	m     *sql.DB // readers for the web UI's maps and downloads (Tables), apart from r
	locks *locks

	mu     sync.Mutex
	stmts  map[string]*sql.Stmt  // prepared on the writer, for the statements every unit runs
	rstmts map[string]*sql.Stmt  // prepared on the readers, for the lookups every unit makes
	facts  map[string]tableFacts // what StoredTable counted and measured of a table, by name
	// deferred holds, by table name, the payload-hash index of each table being filled
	// for the first time (hashIndex).
	deferred    map[string]*hashIndex
	maxDeferred int      // the most hashes a deferred index holds (maxDeferred)
	raw         rawStmts // the deferred inserts, prepared on the writer's driver connection

	closeOnce      sync.Once
	ck             *sql.DB // the checkpointer's connection
	stopCk, ckDone chan struct{}
}

// checkpointer copies the WAL back into the file every interval, on a connection of its
// own: a passive checkpoint runs beside the writer without blocking it or its readers,
// so units seldom pay for one in their commit. Measured on 100,000 features (three runs
// each): 6.8-7.7 s with SQLite's default (a checkpoint every 4 MiB, in the writer),
// 5.3-5.7 s checkpointing every 256 MiB, 4.7-5.0 s with this checkpointer as well.
func (s *Store) checkpointer(interval time.Duration) {
	defer close(s.ckDone)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stopCk:
			return
		case <-t.C:
			_, _ = s.ck.Exec("PRAGMA wal_checkpoint(PASSIVE)") // a busy or failed one is retried at the next tick
		}
	}
}

// warm prepares queries on the writer, once each: SQLite parses a statement each time it
// is prepared, which costs more than running the small statements every unit makes.
// It must be called with no transaction of the caller's open (it takes the writer).
// Preparing waits for the writer, which another unit's transaction may hold while it
// looks up its statements (stmt), so it is done without holding s.mu: holding it would
// deadlock the two units.
func (s *Store) warm(ctx context.Context, queries ...string) error {
	for _, q := range queries {
		s.mu.Lock()
		_, ok := s.stmts[q]
		s.mu.Unlock()
		if ok {
			continue
		}
		st, err := s.w.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		s.mu.Lock()
		_, dup := s.stmts[q]
		if !dup {
			if s.stmts == nil {
				s.stmts = map[string]*sql.Stmt{}
			}
			s.stmts[q] = st
		}
		s.mu.Unlock()
		if dup { // another unit prepared it meanwhile
			st.Close()
		}
	}
	return nil
}

// execWarm runs query on the writer in a transaction of its own, through the statement
// warm prepared: for the statements every unit runs outside its transaction.
func (s *Store) execWarm(ctx context.Context, query string, args ...any) error {
	if err := s.warm(ctx, query); err != nil {
		return err
	}
	s.mu.Lock()
	st := s.stmts[query]
	s.mu.Unlock()
	if st == nil { // forgotten meanwhile
		_, err := s.w.ExecContext(ctx, query, args...)
		return err
	}
	_, err := st.ExecContext(ctx, args...)
	return err
}

// readStmt returns query prepared on the readers, once: database/sql prepares it on each
// reader connection the first time it runs there. For the lookups every unit makes.
func (s *Store) readStmt(ctx context.Context, query string) (*sql.Stmt, error) {
	s.mu.Lock()
	st, ok := s.rstmts[query]
	s.mu.Unlock()
	if ok {
		return st, nil
	}
	st, err := s.r.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev, ok := s.rstmts[query]; ok {
		st.Close()
		return prev, nil
	}
	if s.rstmts == nil {
		s.rstmts = map[string]*sql.Stmt{}
	}
	s.rstmts[query] = st
	return st, nil
}

// stmt returns query for use in tx: the statement warm prepared, or one prepared for
// this transaction alone.
func (s *Store) stmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	s.mu.Lock()
	st, ok := s.stmts[query]
	s.mu.Unlock()
	if ok {
		return tx.StmtContext(ctx, st), nil
	}
	return tx.PrepareContext(ctx, query)
}

// Options configure Open. A nil *Options means defaults.
type Options struct {
	// Readers caps the connections that read while the writer writes, in each of two
	// pools: the runs' and the maps' (store.Tables). Defaults to 4.
	Readers int
	// BusyTimeout is how long a write waits for another process's write to end.
	// Defaults to 30s.
	BusyTimeout time.Duration
}

// registerOnce registers the SQL functions the GeoPackage R-tree triggers call with the
// driver, for every connection it opens from then on.
var registerOnce sync.Once

// Open opens the GeoPackage at path, creating it when missing. The schema is brought up
// to date by Migrate; a file that another tool made is written into as it is.
func Open(ctx context.Context, path string, opts *Options) (*Store, error) {
	abs, err := filePath(path)
	if err != nil {
		return nil, err
	}
	var regErr error
	registerOnce.Do(func() { regErr = registerFunctions() })
	if regErr != nil {
		return nil, fmt.Errorf("gpkg: registering SQL functions: %w", regErr)
	}
	busy, readers := 30*time.Second, 4
	if opts != nil && opts.BusyTimeout > 0 {
		busy = opts.BusyTimeout
	}
	if opts != nil && opts.Readers > 0 {
		readers = opts.Readers
	}
	base := "file:" + (&url.URL{Path: abs}).EscapedPath() + fmt.Sprintf("?_pragma=busy_timeout(%d)", busy.Milliseconds())
	// synchronous=NORMAL in WAL mode: a commit is atomic and survives the process; an OS
	// crash may lose the latest commits, units and their outputs together, which a
	// resume runs again. FinishRun's commit is made durable (see FinishRun).
	// wal_autocheckpoint(65536): the writer checkpoints (copies the WAL back into the
	// file, with two fsyncs) in a commit only when the WAL reaches 256 MiB, by which time
	// the checkpointer beside it has copied most of it; this bounds the WAL, which
	// passive checkpoints alone let grow (to 5 GB over 1,000,000 features).
	w, err := sql.Open("sqlite", base+"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_pragma=wal_autocheckpoint(65536)&_pragma=journal_size_limit(67108864)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("gpkg: opening %s: %w", abs, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	s := &Store{path: abs, w: w, maxDeferred: maxDeferred}
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("gpkg: opening %s: %w", abs, translate("opening the file", err))
	}
	if err := s.checkFile(ctx); err != nil {
		w.Close()
		return nil, err
	}
	r, err := sql.Open("sqlite", base+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("gpkg: opening %s: %w", abs, err)
	}
	r.SetMaxOpenConns(readers)
	s.r = r
	// The maps' readers are a pool of their own: a browser asks for a dozen tiles at once
	// and a download streams for as long as its client reads, and neither may take the
	// connections a run's lookups (LookupTiles, the mirror's) wait for. Each caches 8 MB
	// of pages (SQLite's default is 2 MB): a StoredTable of 100,000 rows, which counts
	// them through an index of about 4 MB, took 4.3 ms with the default, 1.2 ms so.
	m, err := sql.Open("sqlite", base+"&_pragma=query_only(1)&_pragma=cache_size(-8000)")
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("gpkg: opening %s: %w", abs, err)
	}
	m.SetMaxOpenConns(readers)
	s.m = m
	if s.locks, err = openLocks(abs + "-lock"); err != nil {
		s.Close()
		return nil, fmt.Errorf("gpkg: %w", err)
	}
	ck, err := sql.Open("sqlite", base+"&_pragma=synchronous(NORMAL)")
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("gpkg: opening %s: %w", abs, err)
	}
	ck.SetMaxOpenConns(1)
	s.ck, s.stopCk, s.ckDone = ck, make(chan struct{}), make(chan struct{})
	go s.checkpointer(time.Second)
	return s, nil
}

// filePath is path made absolute, when it can be a GeoPackage file: not empty, not a
// directory, in a directory that exists.
func filePath(path string) (string, error) {
	if strings.TrimSpace(path) == "" {
		return "", errors.New("gpkg: no file given")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("gpkg: %s: %w", path, err)
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return "", fmt.Errorf("gpkg: %s is a directory, not a GeoPackage file", abs)
	}
	if dir := filepath.Dir(abs); !dirExists(dir) {
		return "", fmt.Errorf("gpkg: cannot create %s: directory %s does not exist", abs, dir)
	}
	return abs, nil
}

func dirExists(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir()
}

// applicationID is "GPKG" in ASCII, and userVersion GeoPackage 1.3.0, as the standard
// asks a GeoPackage to say in its header.
const (
	applicationID = 0x47504B47
	userVersion   = 10300
)

// checkFile refuses a file that is SQLite but not a GeoPackage (another program's
// database) rather than writing tables into it, and stamps a new file as a GeoPackage.
func (s *Store) checkFile(ctx context.Context) error {
	var app int64
	var tables int
	if err := s.w.QueryRowContext(ctx, "PRAGMA application_id").Scan(&app); err != nil {
		return fmt.Errorf("gpkg: %s is not a SQLite database: %w", s.path, translate("reading the header", err))
	}
	if err := s.w.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&tables); err != nil {
		return fmt.Errorf("gpkg: %s: %w", s.path, translate("reading the schema", err))
	}
	switch {
	case app == applicationID:
		return nil
	case tables == 0:
		_, err := s.w.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d; PRAGMA user_version = %d", applicationID, userVersion))
		return translate("stamping the file as a GeoPackage", err)
	case app == 0x47503130 || app == 0x47503131: // "GP10", "GP11": GeoPackage 1.0 and 1.1
		return nil
	}
	return fmt.Errorf("gpkg: %s is a SQLite database but not a GeoPackage (application_id %#x): refusing to write into it", s.path, app)
}

// Close closes the file and releases every lock this store holds. It is safe to call
// more than once.
func (s *Store) Close() { s.closeOnce.Do(s.close) }

func (s *Store) close() {
	if s.ck != nil {
		close(s.stopCk)
		<-s.ckDone
		s.ck.Close()
	}
	for _, st := range s.stmts {
		st.Close()
	}
	s.closeRaw()
	for _, st := range s.rstmts {
		st.Close()
	}
	if s.r != nil {
		s.r.Close()
	}
	if s.m != nil {
		s.m.Close()
	}
	// A checkpoint at close folds the WAL into the file, so a copy of the .gpkg alone
	// holds everything (SQLite removes the -wal and -shm files with the last connection).
	_, _ = s.w.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	s.w.Close()
	s.freeDeferred()
	if s.locks != nil {
		s.locks.close()
	}
}

// Path returns the absolute path of the file.
func (s *Store) Path() string { return s.path }

// Ping checks that the file answers.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	return translate("reading the GeoPackage", s.r.QueryRowContext(ctx, "SELECT 1").Scan(&one))
}

// translate turns SQLite errors into *store.Fault errors that name what was being done.
// This is the only place SQLite errors are interpreted.
func translate(what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", what, err)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	f := &store.Fault{Class: dlq.ClassDatabase, Op: what, Msg: err.Error(), Err: err}
	var se *sqlite.Error
	if errors.As(err, &se) {
		f.Code = fmt.Sprint(se.Code())
		f.Temp = temporary(se.Code())
		if se.Code()&0xff == 13 { // SQLITE_FULL: the file's disk, not the database
			f.Class = dlq.ClassDisk
		}
	}
	return f
}

// temporary tells the SQLite result codes that a new attempt may not meet: the file
// busy or locked by another writer (5, 6), an I/O error (10), a full disk (13). A
// constraint, a type or a schema error is the same the next time.
func temporary(code int) bool {
	switch code & 0xff {
	case 5, 6, 10, 13:
		return true
	}
	return false
}

// timeFormat is how times are stored: ISO 8601 UTC with milliseconds, fixed width, so
// that text order is time order; strftime('%Y-%m-%dT%H:%M:%fZ', 'now') writes the same.
const timeFormat = "2006-01-02T15:04:05.000Z"

// now is the SQL for the current time in timeFormat.
const now = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"

func ts(t time.Time) string { return string(appendTS(nil, t)) }

// appendTS appends t in timeFormat; by hand for the years 0 to 9999, what Format
// writes in a fifth of its time (an export writes a time per row and column).
func appendTS(b []byte, t time.Time) []byte {
	t = t.UTC()
	y, mo, d := t.Date()
	if y < 0 || y > 9999 {
		return t.AppendFormat(b, timeFormat)
	}
	h, mi, sec := t.Clock()
	b = appendDigits(b, y, 4)
	b = append(b, '-')
	b = appendDigits(b, int(mo), 2)
	b = append(b, '-')
	b = appendDigits(b, d, 2)
	b = append(b, 'T')
	b = appendDigits(b, h, 2)
	b = append(b, ':')
	b = appendDigits(b, mi, 2)
	b = append(b, ':')
	b = appendDigits(b, sec, 2)
	b = append(b, '.')
	b = appendDigits(b, t.Nanosecond()/1e6, 3) // truncated, as Format's .000
	return append(b, 'Z')
}

// appendDigits appends n (0 <= n < 10^width) as width decimal digits.
func appendDigits(b []byte, n, width int) []byte {
	for i := width - 1; i >= 0; i-- {
		p := 1
		for range i {
			p *= 10
		}
		b = append(b, byte('0'+n/p%10))
	}
	return b
}

// tsOrNil is ts for an optional time.
func tsOrNil(t *time.Time) any {
	if t == nil || t.IsZero() {
		return nil
	}
	return ts(*t)
}

// nullTime scans a nullable time column into *t, nil for NULL. The driver hands a time
// over as text or, for a column declared DATETIME, as a time.Time already.
type nullTime struct{ t **time.Time }

func (c nullTime) Scan(v any) error {
	t, err := toTime(v)
	*c.t = t
	return err
}

// reqTime scans a NOT NULL time column into *t.
type reqTime struct{ t *time.Time }

func (c reqTime) Scan(v any) error {
	t, err := toTime(v)
	if err == nil && t == nil {
		err = errors.New("gpkg: a required time is NULL")
	}
	if t != nil {
		*c.t = *t
	}
	return err
}

func toTime(v any) (*time.Time, error) {
	var s string
	switch x := v.(type) {
	case nil:
		return nil, nil
	case time.Time:
		t := x.UTC()
		return &t, nil
	case string:
		s = x
	case []byte:
		s = string(x)
	default:
		return nil, fmt.Errorf("gpkg: %T is not a time", v)
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999-07:00", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			t = t.UTC()
			return &t, nil
		}
	}
	return nil, fmt.Errorf("gpkg: %q is not a time", s)
}

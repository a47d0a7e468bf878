// Package postgis is geoflow's PostgreSQL/PostGIS storage: migrations, run, task and unit
// bookkeeping, the feature sink and the dead-letter table. It is the only package that
// imports pgx; pgx errors are translated here into errors that say what was being done.
//
// It implements store.Store, every role the packages above take a small interface of, so
// it imports their plain types but never their behaviour.
package postgis

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/store"
)

// Store is a pool of connections to one database. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	url  string // redacted, for messages

	// distributed caches, by run id, whether a run's units are jobs (they never stop
	// being: a resume keeps the run's mode).
	distributed sync.Map
	// riv is the River client that enqueues units, made on first use.
	rivOnce sync.Once
	riv     *river.Client[pgx.Tx]
	rivErr  error

	// counts caches, by schema.table, a feature table's counts and extent as of its
	// stamp (tableCounts), so that StoredTable scans a table once per change.
	counts sync.Map

	// schema holds geoflow's bookkeeping and River's tables; every connection's
	// search_path starts with it (see searchPath).
	schema string
	// userPath is the search_path the server gave a connection before geoflow put its
	// schema first: what a flow's SQL scripts run with.
	userPath atomic.Pointer[string]
	// beginUnit begins a unit's transaction (unitBegin).
	beginUnit pgx.TxOptions
}

// Options configure Open. A nil *Options means defaults.
type Options struct {
	// MaxConns caps the pool. Defaults to 16.
	MaxConns int32
	// Schema is the schema of geoflow's bookkeeping tables and of River's (the job
	// queue's): out of the way of the data tables, which stay in the schemas their flows
	// name (public by default). Defaults to DefaultSchema.
	Schema string
}

// DefaultSchema is the schema of the bookkeeping tables when Options name none.
const DefaultSchema = "geoflow"

// ErrNoDatabase is returned when no database URL was given.
var ErrNoDatabase = errors.New("postgis: no database given: pass --database URL or set GEOFLOW_DATABASE_URL")

// Open connects to the database at dsn (a postgres:// URL or key=value string) and checks
// that it answers.
func Open(ctx context.Context, dsn string, opts *Options) (*Store, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, ErrNoDatabase
	}
	safe := redactDSN(dsn)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parsing database URL %s: %s", safe, redactErr(err))
	}
	cfg.MaxConns = 16
	schema := DefaultSchema
	if opts != nil && opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if opts != nil && opts.Schema != "" {
		schema = opts.Schema
	}
	if err := CheckSchema(schema); err != nil {
		return nil, err
	}
	s := &Store{url: safe, schema: schema}
	// On the connection's own config, so that lockConn's connections have it too.
	cfg.ConnConfig.AfterConnect = s.searchPath
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "geoflow"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %s", safe, redactErr(err))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connecting to %s: %s", safe, redactErr(err))
	}
	s.pool = pool
	s.beginUnit = unitBegin(ctx, pool)
	return s, nil
}

// Close closes every connection.
func (s *Store) Close() { s.pool.Close() }

// URL returns the database URL with its password redacted.
func (s *Store) URL() string { return s.url }

// redactDSN hides the password of a URL or key=value connection string.
func redactDSN(dsn string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			return redact.URL(u.String())
		}
		return "postgres://(unparsable URL)"
	}
	fields := strings.Fields(dsn)
	for i, f := range fields {
		if strings.HasPrefix(strings.ToLower(f), "password=") {
			fields[i] = "password=REDACTED"
		}
	}
	return strings.Join(fields, " ")
}

// redactErr keeps pgx's message, on one line (pgx lists every address it tried on a line
// of its own, often the same one twice), but never the password it may quote.
func redactErr(err error) string {
	var parts []string
	seen := map[string]bool{}
	for _, l := range strings.Split(err.Error(), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !seen[l] {
			seen[l] = true
			parts = append(parts, strings.TrimSuffix(l, ":"))
		}
	}
	// By position, not by the password's text: pgx never prints the password, and
	// replacing its text everywhere turned `role "geoflow"` into `role "REDACTED"` for a
	// password equal to the role's name, and "failed" into "failREDACTEDd" for a
	// password "e". What can hold it is the DSN echoed back: its userinfo and its
	// password= pair.
	return redact.String(strings.Join(parts, ": "))
}

// translate turns pgx and PostgreSQL errors into *store.Fault errors that name what was
// being done. This is the only place database errors are interpreted.
func translate(what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, store.ErrUnitTaken) {
		return fmt.Errorf("%s: %w", what, err)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	f := &store.Fault{Class: dlq.ClassDatabase, Op: what, Msg: err.Error(), Err: err, Temp: true}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		f.Code, f.Msg = pgErr.Code, pgErr.Message
		if pgErr.Detail != "" {
			f.Msg += " (" + pgErr.Detail + ")"
		}
		f.Temp = temporary(pgErr.Code)
	}
	return f
}

// temporary tells the SQLSTATEs that a new attempt of the same transaction may not meet:
// a deadlock or serialization failure (40), a lost or refused connection (08), a server
// shutting down, restarting or not yet accepting connections (57P), too many connections
// or out of resources (53). Anything else the server answers (a constraint, a type) is
// the same the next time. An error with no SQLSTATE never reached a server: temporary.
func temporary(code string) bool {
	for _, c := range []string{"40", "08", "57P", "53"} {
		if strings.HasPrefix(code, c) {
			return true
		}
	}
	return false
}

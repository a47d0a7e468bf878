package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/gpkg"
	"github.com/geoflow/geoflow/store/postgis"
	"github.com/geoflow/geoflow/tasks"
)

// defaultGeoPackage is the store used when neither --database nor GEOFLOW_DATABASE_URL
// names one: a GeoPackage in the working directory, so a first run needs no server.
const defaultGeoPackage = "geoflow.gpkg"

// openStore opens the store the global flags name: the one place the CLI chooses an
// implementation. With migrate, its schema is brought up to date first: any command may
// be the first one run against a database.
func openStore(ctx context.Context, g *globals, migrate bool) (store.Store, error) {
	st, err := open(ctx, g)
	if err != nil {
		return nil, err
	}
	if migrate {
		if _, err := st.Migrate(ctx); err != nil {
			st.Close()
			return nil, fmt.Errorf("migrating the database: %w", err)
		}
	}
	return st, nil
}

// openServerStore opens the store for geoflow serve. A GeoPackage takes one server at a
// time: a second one is refused at once rather than left to wait on the file's writer.
func openServerStore(ctx context.Context, g *globals) (store.Store, func(), error) {
	st, err := open(ctx, g)
	if err != nil {
		return nil, nil, err
	}
	release := func() {}
	if gp, ok := st.(*gpkg.Store); ok {
		if release, err = gp.HoldServer(ctx); err != nil {
			st.Close()
			return nil, nil, err
		}
	}
	return st, release, nil
}

// sharedPacing is the pacing st shares between processes: PostgreSQL's, which every
// process on the database agrees on, so that several runs and servers harvesting one host
// keep together within its quota. A GeoPackage has one writer process at a time and
// shares none: its process paces alone.
func sharedPacing(st store.Store) retry.Shared {
	if sh, ok := st.(retry.Shared); ok {
		return sh
	}
	return nil
}

// openExisting opens the store the global flags name, for a command that reads or
// tends what runs left (runs, dlq, changes, export, migrate status): unlike a run, it
// creates no GeoPackage where there is none, which would leave an empty geoflow.gpkg in
// whatever directory the command was typed in. With migrate, as openStore.
func openExisting(ctx context.Context, g *globals, migrate bool) (store.Store, error) {
	path, isGPKG, err := geoPackagePath(g)
	if err != nil {
		return nil, err
	}
	if err := schemaFlag(g, path, isGPKG); err != nil {
		return nil, err
	}
	if isGPKG {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no store at %s: give --database (a PostgreSQL URL or an existing GeoPackage) or set GEOFLOW_DATABASE_URL; geoflow run creates the GeoPackage", path)
		}
	}
	return openStore(ctx, g, migrate)
}

// schemaFlag refuses --schema for a GeoPackage, which keeps its bookkeeping in tables of
// its own (gpkg's geoflow_*): there is no schema to choose.
func schemaFlag(g *globals, path string, isGPKG bool) error {
	if isGPKG && g.schema != "" {
		return fmt.Errorf("--schema %q: only a PostgreSQL store has a bookkeeping schema; %s is a GeoPackage", g.schema, path)
	}
	return nil
}

// geoPackagePath is the file of the store the global flags name when it is a GeoPackage
// (made absolute when it is the default one).
func geoPackagePath(g *globals) (string, bool, error) {
	loc := g.databaseURL()
	if loc == "" {
		abs, err := filepath.Abs(defaultGeoPackage)
		return abs, true, err
	}
	pg, path, err := parseLocation(loc)
	return path, !pg && err == nil, err
}

func open(ctx context.Context, g *globals) (store.Store, error) {
	loc := g.databaseURL()
	path, isGPKG, err := geoPackagePath(g)
	switch {
	case err != nil:
		return nil, err
	case !isGPKG:
		return postgis.Open(ctx, loc, &postgis.Options{Schema: g.schemaName()})
	case schemaFlag(g, path, isGPKG) != nil:
		return nil, schemaFlag(g, path, isGPKG)
	case loc == "":
		fmt.Fprintf(g.stderr, "geoflow: no --database or GEOFLOW_DATABASE_URL: using the GeoPackage %s\n", path)
	}
	return gpkg.Open(ctx, path, nil)
}

// queueLocation is the database the global flags name when it has a job queue (a
// PostgreSQL URL), for the pool's commands; else store.ErrNoQueue.
func queueLocation(g *globals) (string, error) {
	loc := g.databaseURL()
	pg, _, err := parseLocation(loc)
	switch {
	case err != nil:
		return "", err
	case loc == "" || !pg:
		return "", store.ErrNoQueue
	}
	return loc, nil
}

// parseLocation tells a PostgreSQL connection string (a postgres:// or postgresql:// URL,
// or key=value pairs) from a GeoPackage (a path ending in .gpkg, or a gpkg: or file: URL)
// and returns the GeoPackage's path.
func parseLocation(loc string) (pg bool, path string, err error) {
	lower := strings.ToLower(loc)
	switch {
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
		return true, "", nil
	case strings.HasPrefix(lower, "gpkg:"), strings.HasPrefix(lower, "file:"):
		rest := loc[strings.IndexByte(loc, ':')+1:]
		if strings.HasPrefix(rest, "//") {
			u, err := url.Parse("file:" + rest)
			if err != nil || (u.Host != "" && u.Host != "localhost") {
				return false, "", fmt.Errorf("--database %q: a GeoPackage URL is gpkg:PATH or file:///ABSOLUTE/PATH", safeLocation(loc))
			}
			rest = u.Path
		}
		if rest == "" {
			return false, "", fmt.Errorf("--database %q: no file named", loc)
		}
		return false, rest, nil
	case strings.HasSuffix(lower, ".gpkg"):
		return false, loc, nil
	case strings.Contains(loc, "=") && !strings.Contains(loc, "://"):
		return true, "", nil // host=/var/run/postgresql dbname=...
	}
	return false, "", fmt.Errorf("--database %q is neither a PostgreSQL URL (postgres://user@host/db) nor a GeoPackage (a path ending in .gpkg, or gpkg:PATH)", safeLocation(loc))
}

// safeLocation is loc for an error message, without what may be a credential: the
// userinfo of a URL, the value of any parameter whose name says password, key, token or
// the like (password, sslpassword, quoted or not), and for anything else whatever comes
// before an @.
func safeLocation(loc string) string {
	if scheme, ok := urlScheme(loc); ok {
		u, err := url.Parse(loc)
		if err != nil {
			return scheme + "://(a URL that does not parse, not shown)"
		}
		if u.User != nil {
			u.User = url.User(redact.Mask)
		}
		if u.RawQuery != "" {
			parts := strings.Split(u.RawQuery, "&")
			for i, p := range parts {
				k, _, _ := strings.Cut(p, "=")
				if name, err := url.QueryUnescape(k); err != nil || secretParam(name) {
					parts[i] = k + "=" + redact.Mask
				}
			}
			u.RawQuery = strings.Join(parts, "&")
		}
		return u.String()
	}
	if pairs, ok := dsnPairs(loc); ok {
		out := make([]string, len(pairs))
		for i, p := range pairs {
			v := p[1]
			if secretParam(p[0]) {
				v = redact.Mask
			}
			out[i] = p[0] + "=" + quoteDSN(v)
		}
		return strings.Join(out, " ")
	}
	if i := strings.LastIndex(loc, "@"); i >= 0 {
		loc = redact.Mask + "@" + loc[i+1:]
	}
	return redact.String(loc)
}

// urlScheme returns the scheme of loc when loc starts as a URL does (scheme://): a
// key=value string may hold :// in a value, and is no URL for that.
func urlScheme(loc string) (string, bool) {
	scheme, _, ok := strings.Cut(loc, "://")
	if !ok || scheme == "" {
		return "", false
	}
	for i, c := range scheme {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return "", false
		}
	}
	return scheme, true
}

// secretParam reports whether a connection parameter holds a credential: PostgreSQL's
// password and sslpassword, and any name redact takes for one.
func secretParam(name string) bool {
	return strings.Contains(strings.ToLower(name), "password") || redact.SensitiveName(name)
}

// storeLabel names the store at loc for people who may not hold its credentials (the
// UI's header, its start-up log): host:port/dbname of a PostgreSQL database, the
// absolute path of a GeoPackage, and nothing else of the connection string.
func storeLabel(loc string) string {
	pg, path, err := parseLocation(loc)
	switch {
	case err != nil:
		return "the store (its location is not shown)"
	case !pg:
		if abs, err := filepath.Abs(path); err == nil {
			return abs
		}
		return path
	}
	var host, port, db string
	if _, ok := urlScheme(loc); ok {
		u, err := url.Parse(loc)
		if err != nil {
			return "PostgreSQL (its URL does not parse)"
		}
		host, db = u.Host, strings.TrimPrefix(u.Path, "/")
		q := u.Query()
		host, port, db = cmp.Or(q.Get("host"), host), q.Get("port"), cmp.Or(q.Get("dbname"), db)
	} else {
		pairs, ok := dsnPairs(loc)
		if !ok {
			return "PostgreSQL (its connection string does not parse)"
		}
		for _, p := range pairs {
			switch p[0] {
			case "host", "hostaddr":
				host = cmp.Or(host, p[1])
			case "port":
				port = p[1]
			case "dbname":
				db = p[1]
			}
		}
	}
	label := cmp.Or(host, "localhost")
	if port != "" {
		label += ":" + port
	}
	return label + "/" + db
}

// dsnPairs reads a key=value connection string as libpq does: pairs apart by spaces,
// spaces allowed around =, a value either in single quotes or up to the next space, a
// backslash taking the next character as it is. ok is false unless every pair parses.
func dsnPairs(s string) (pairs [][2]string, ok bool) {
	i := 0
	skip := func() {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
	}
	for {
		skip()
		if i == len(s) {
			return pairs, len(pairs) > 0
		}
		start := i
		for i < len(s) && s[i] != '=' && !isSpace(s[i]) {
			i++
		}
		key := s[start:i]
		skip()
		if key == "" || i == len(s) || s[i] != '=' {
			return nil, false
		}
		i++
		skip()
		var v strings.Builder
		quoted := i < len(s) && s[i] == '\''
		if quoted {
			i++
		}
		closed := !quoted
		for i < len(s) {
			c := s[i]
			if quoted && c == '\'' {
				i++
				closed = true
				break
			}
			if !quoted && isSpace(c) {
				break
			}
			if c == '\\' && i+1 < len(s) {
				i++
				c = s[i]
			}
			v.WriteByte(c)
			i++
		}
		if !closed {
			return nil, false
		}
		pairs = append(pairs, [2]string{key, v.String()})
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// quoteDSN writes v as a key=value connection string's value: in quotes when it is
// empty or holds a space, a quote or a backslash.
func quoteDSN(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\n\r\f\v'\\") {
		return v
	}
	return "'" + strings.NewReplacer("\\", "\\\\", "'", "\\'").Replace(v) + "'"
}

// stores splits the store a command opened into the parts the engine takes, each the
// small interface of the piece that uses it; the queue where the store has one (PostgreSQL).
func stores(st store.Store) engine.Stores {
	s := engine.Stores{Runs: st, Units: st, DeadLetters: st,
		Tasks: tasks.Stores{Features: st, Mirror: st, Tiles: st, Assets: st, Records: st, Tables: st, Changes: st, Queries: st, SQL: st}}
	if q, ok := st.(store.Queue); ok {
		s.Queue = q
	}
	return s
}

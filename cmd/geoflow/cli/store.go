package cli

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/gpkg"
	"github.com/geoflow/geoflow/store/postgis"
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

func open(ctx context.Context, g *globals) (store.Store, error) {
	loc := g.databaseURL()
	if loc == "" {
		abs, err := filepath.Abs(defaultGeoPackage)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(g.stderr, "geoflow: no --database or GEOFLOW_DATABASE_URL: using the GeoPackage %s\n", abs)
		return gpkg.Open(ctx, abs, nil)
	}
	pg, path, err := parseLocation(loc)
	switch {
	case err != nil:
		return nil, err
	case pg:
		return postgis.Open(ctx, loc, nil)
	}
	return gpkg.Open(ctx, path, nil)
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

// safeLocation is loc for an error message, without what may be a credential: whatever
// comes before an @ (userinfo, with or without a scheme) and a password=... pair.
func safeLocation(loc string) string {
	if i := strings.LastIndex(loc, "@"); i >= 0 {
		scheme := ""
		if j := strings.Index(loc, "://"); j >= 0 && j < i {
			scheme = loc[:j+3]
		}
		loc = scheme + "REDACTED@" + loc[i+1:]
	}
	fields := strings.Fields(loc)
	for i, f := range fields {
		if strings.HasPrefix(strings.ToLower(f), "password=") {
			fields[i] = "password=REDACTED"
		}
	}
	return strings.Join(fields, " ")
}

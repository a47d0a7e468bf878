package postgis

import (
	"context"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Where geoflow keeps its bookkeeping: in a schema of its own (Options.Schema), so that
// a GIS client browsing the database (QGIS, ogrinfo) sees the data tables and nothing
// else. Every connection's search_path starts with that schema, then goes on as the
// server set it (normally "$user", public, where PostGIS is): the bookkeeping's
// unqualified names, River's and the migrations' resolve to it, PostGIS's functions
// and types still resolve, and the data tables, which geoflow always names with their
// schema (tableIdent), stay where their flows put them. Qualifying every bookkeeping name
// instead would hold only until the next query someone writes without it.

// schemaRE is what River takes as a schema name (and what needs no quoting anywhere).
var schemaRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]{0,62}$`)

// CheckSchema tells whether name can be the bookkeeping schema: letters, digits and
// underscores, not starting with a digit, at most 63 characters (PostgreSQL's limit on a
// name, and what River's job queue takes).
func CheckSchema(name string) error {
	if !schemaRE.MatchString(name) {
		return fmt.Errorf("schema %q: use letters, digits and underscores, starting with a letter or underscore, at most 63 characters", name)
	}
	return nil
}

// Schema returns the schema of geoflow's bookkeeping tables.
func (s *Store) Schema() string { return s.schema }

// searchPath puts the bookkeeping schema first in a new connection's search_path and
// keeps what the server had set (the role's, the database's or the URL's
// search_path) after it; it remembers that for the flows' SQL scripts (userSearchPath).
func (s *Store) searchPath(ctx context.Context, conn *pgconn.PgConn) error {
	res := conn.ExecParams(ctx,
		"SELECT current_setting('search_path'), set_config('search_path', $1 || ', ' || current_setting('search_path'), false)",
		[][]byte{[]byte(pgx.Identifier{s.schema}.Sanitize())}, nil, nil, nil).Read()
	if res.Err != nil {
		return fmt.Errorf("setting the search_path to schema %q first: %w", s.schema, res.Err)
	}
	if len(res.Rows) == 1 && len(res.Rows[0]) == 2 {
		p := string(res.Rows[0][0])
		s.userPath.CompareAndSwap(nil, &p)
	}
	return nil
}

// userSearchPath is the search_path without the bookkeeping schema: the server's, which
// a flow's SQL script runs with, so that its unqualified CREATE TABLE lands where it did
// before geoflow had a schema of its own.
func (s *Store) userSearchPath() string {
	if p := s.userPath.Load(); p != nil {
		return *p
	}
	return `"$user", public`
}

// ensureSchema creates the bookkeeping schema and moves into it the table that records
// the applied migrations, when an older geoflow left it in public: the migrations
// themselves (018) move the rest, but this one must be found where the next ones look
// for it, or every migration would run again on an empty list. Its caller holds the
// migration lock.
func (s *Store) ensureSchema(ctx context.Context, conn *pgx.Conn) error {
	ident := pgx.Identifier{s.schema}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+ident); err != nil {
		return translate(fmt.Sprintf("creating schema %s for geoflow's bookkeeping", ident), err)
	}
	if s.schema == "public" {
		return nil
	}
	var move bool
	err := conn.QueryRow(ctx, `SELECT to_regclass('public.geoflow_schema_migrations') IS NOT NULL
		AND to_regclass($1) IS NULL`, s.schema+".geoflow_schema_migrations").Scan(&move)
	if err != nil {
		return translate("looking for geoflow's migrations table", err)
	}
	if move {
		if _, err := conn.Exec(ctx, "ALTER TABLE public.geoflow_schema_migrations SET SCHEMA "+ident); err != nil {
			return translate(fmt.Sprintf("moving geoflow's migrations table into schema %s", ident), err)
		}
	}
	return nil
}

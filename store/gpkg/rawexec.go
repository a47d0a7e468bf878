package gpkg

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"time"
)

// rawStmts are the statements a unit runs on the writer's driver connection itself,
// past database/sql (rawExec): the deferred inserts, 64 rows and up to 1,024 parameters
// each. Through database/sql each execution converted every parameter again and
// allocated a 40 KB slice for them, a third of what a harvest into a new table
// allocated; the conversions and the collections they caused cost 0.3-0.6 us a feature.
type rawStmts struct {
	conn  any // the driver connection stmts were prepared on
	stmts map[string]driver.Stmt
	stale []driver.Stmt // of queries nothing runs any more: closed at the next rawExec or at Close
}

// rawExec runs query with args on conn's driver connection, preparing it there once.
// conn holds the unit's transaction, so the statement runs inside it.
func (s *Store) rawExec(ctx context.Context, conn *sql.Conn, query string, args []driver.NamedValue) (driver.Result, error) {
	var res driver.Result
	err := conn.Raw(func(dc any) error {
		st, err := s.rawStmt(ctx, dc, query)
		if err != nil {
			return err
		}
		x, ok := st.(driver.StmtExecContext)
		if !ok {
			return fmt.Errorf("the SQLite driver's statements do not take a context (%T)", st)
		}
		res, err = x.ExecContext(ctx, args)
		return err
	})
	return res, err
}

// rawStmt returns query prepared on driver connection dc, closing the stale statements
// first. Statements of another connection (database/sql replaced a broken one) are
// dropped: they went with it.
func (s *Store) rawStmt(ctx context.Context, dc any, query string) (driver.Stmt, error) {
	s.mu.Lock()
	if s.raw.conn != dc {
		s.raw = rawStmts{conn: dc}
	}
	stale := s.raw.stale
	s.raw.stale = nil
	st, ok := s.raw.stmts[query]
	s.mu.Unlock()
	for _, old := range stale {
		_ = old.Close()
	}
	if ok {
		return st, nil
	}
	p, ok := dc.(driver.ConnPrepareContext)
	if !ok {
		return nil, fmt.Errorf("the SQLite driver's connections do not prepare with a context (%T)", dc)
	}
	st, err := p.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.raw.stmts == nil {
		s.raw.stmts = map[string]driver.Stmt{}
	}
	s.raw.stmts[query] = st
	s.mu.Unlock()
	return st, nil
}

// forgetRaw marks the raw statements of queries stale: closed on their connection at the
// next rawExec or at Close, as only the holder of the writer may use it.
func (s *Store) forgetRaw(queries []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, q := range queries {
		if st, ok := s.raw.stmts[q]; ok {
			s.raw.stale = append(s.raw.stale, st)
			delete(s.raw.stmts, q)
		}
	}
}

// closeRaw closes every raw statement, on the writer's connection if it is still theirs.
func (s *Store) closeRaw() {
	s.mu.Lock()
	raw := s.raw
	s.raw = rawStmts{}
	s.mu.Unlock()
	if len(raw.stmts)+len(raw.stale) == 0 {
		return
	}
	conn, err := s.w.Conn(context.Background())
	if err != nil {
		return
	}
	defer conn.Close()
	_ = conn.Raw(func(dc any) error {
		if dc != raw.conn {
			return nil
		}
		for _, st := range raw.stale {
			_ = st.Close()
		}
		for _, st := range raw.stmts {
			_ = st.Close()
		}
		return nil
	})
}

// appendNamed appends vals to args as the parameters numbered from len(args)+1, each as
// database/sql would pass it to the driver: a driver.Value as it is, anything else through
// the driver's default converter (the SQLite driver has no converter of its own).
func appendNamed(args []driver.NamedValue, vals ...any) ([]driver.NamedValue, error) {
	for _, v := range vals {
		switch v.(type) {
		case nil, int64, float64, bool, []byte, string, time.Time:
		default:
			var err error
			if v, err = driver.DefaultParameterConverter.ConvertValue(v); err != nil {
				return args, fmt.Errorf("parameter %d: %w", len(args)+1, err)
			}
		}
		args = append(args, driver.NamedValue{Ordinal: len(args) + 1, Value: v})
	}
	return args, nil
}

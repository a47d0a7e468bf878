package gpkg

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// exportInserter inserts an export's rows several to a statement (INSERT ... VALUES
// (...), (...), ...), exportBatch to a transaction. One row per statement cost a
// statement's start and end per row, and AUTOINCREMENT's read and write of
// sqlite_sequence with each: a third of the time of inserting a row.
//
// ctx is checked by the caller rather than handed to the driver, which watches a
// context that can end with a goroutine per statement, and to database/sql, which
// would roll a transaction back under a statement that then fails otherwise.
type exportInserter struct {
	db      *sql.DB
	table   string
	cols    []string // quoted: geom, then the layer's columns
	perStmt int      // rows a full statement inserts
	full    *sql.Stmt
	tx      *sql.Tx
	args    []any    // the pending rows' values, len(cols) each
	blobs   [][]byte // each pending row's geometry buffer, reused
	pending int
	total   int64 // rows inserted, pending ones included
}

// maxExportParams bounds the parameters of one statement, well under SQLite's limit
// (32766 since 3.32).
const maxExportParams = 1024

func newExportInserter(ctx context.Context, db *sql.DB, l ExportLayer) (*exportInserter, error) {
	cols := []string{`"geom"`}
	for _, c := range l.Columns {
		cols = append(cols, quote(c.Name))
	}
	per := max(1, min(64, maxExportParams/len(cols)))
	w := &exportInserter{db: db, table: l.Name, cols: cols, perStmt: per, args: make([]any, per*len(cols)), blobs: make([][]byte, per)}
	var err error
	if w.full, err = db.PrepareContext(ctx, w.insertSQL(per)); err != nil {
		return nil, err
	}
	return w, nil
}

// insertSQL is the statement inserting rows rows.
func (w *exportInserter) insertSQL(rows int) string {
	row := "(" + placeholders(len(w.cols)) + ")"
	return fmt.Sprintf("INSERT INTO %s (%s) VALUES %s", quote(w.table), strings.Join(w.cols, ", "),
		strings.TrimSuffix(strings.Repeat(row+", ", rows), ", "))
}

// next is where the next row goes: its values, geometry first, and the buffer its
// geometry blob may be built in (to be handed back by added).
func (w *exportInserter) next() ([]any, []byte) {
	k := len(w.cols)
	return w.args[w.pending*k : (w.pending+1)*k], w.blobs[w.pending][:0]
}

// added takes the row next handed out, filled, and its blob buffer, and inserts the
// pending rows once a statement's worth are; a transaction is committed every
// exportBatch rows.
func (w *exportInserter) added(blob []byte) error {
	w.blobs[w.pending] = blob
	w.pending++
	w.total++
	if w.pending == w.perStmt || w.total%exportBatch == 0 {
		return w.flush()
	}
	return nil
}

// flush inserts the pending rows, and commits when the transaction has exportBatch.
func (w *exportInserter) flush() error {
	if w.pending == 0 {
		return nil
	}
	ctx := context.Background() // see exportInserter
	var err error
	if w.tx == nil {
		if w.tx, err = w.db.BeginTx(ctx, nil); err != nil {
			return err
		}
	}
	args := w.args[:w.pending*len(w.cols)]
	if w.pending == w.perStmt {
		_, err = w.tx.StmtContext(ctx, w.full).ExecContext(ctx, args...)
	} else {
		_, err = w.tx.ExecContext(ctx, w.insertSQL(w.pending), args...)
	}
	w.pending = 0
	if err != nil {
		return err
	}
	if w.total%exportBatch == 0 {
		return w.commit()
	}
	return nil
}

// finish inserts what is pending and commits.
func (w *exportInserter) finish() error {
	if err := w.flush(); err != nil {
		return err
	}
	return w.commit()
}

func (w *exportInserter) commit() error {
	if w.tx == nil {
		return nil
	}
	err := w.tx.Commit()
	w.tx = nil
	return err
}

// close rolls back what was not committed and releases the statement.
func (w *exportInserter) close() {
	if w.tx != nil {
		_ = w.tx.Rollback()
	}
	_ = w.full.Close()
}

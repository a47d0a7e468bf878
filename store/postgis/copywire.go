package postgis

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5"
)

// copyHeader starts a binary COPY stream: the signature, no flags, no header extension.
const copyHeader = "PGCOPY\n\377\r\n\000\x00\x00\x00\x00\x00\x00\x00\x00"

// copyRows copies rows into the staging table stage (columns names, all text or bytea)
// in COPY's binary format, encoding each row itself: every staging value is already the
// bytes PostgreSQL receives for a text or bytea column, so pgx's CopyFrom, which looks up
// an encode plan for every value and hands its buffers to another goroutine through a
// pipe, would only add work per feature. It returns the number of rows copied.
func copyRows(ctx context.Context, tx pgx.Tx, stage string, names []string, rows *copySource) (int64, error) {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = pgx.Identifier{n}.Sanitize()
	}
	sql := fmt.Sprintf("COPY %s (%s) FROM STDIN BINARY", pgx.Identifier{stage}.Sanitize(), strings.Join(quoted, ", "))
	r := &copyReader{src: rows, buf: append(make([]byte, 0, 80<<10), copyHeader...)}
	tag, err := tx.Conn().PgConn().CopyFrom(ctx, r, sql)
	return tag.RowsAffected(), err
}

// copyReader is the binary COPY stream of a copySource's rows, encoded as pgconn reads
// it: rows are appended to buf until it holds what one Read asks for, then copied out.
type copyReader struct {
	src  *copySource
	buf  []byte
	off  int  // buf[:off] was read
	done bool // the trailer is in buf
}

// Read implements io.Reader: it returns io.EOF with the stream's last bytes, and the
// source's or a row's error as it happens.
func (c *copyReader) Read(p []byte) (int, error) {
	if len(c.buf)-c.off < len(p) && !c.done {
		// Less than asked for is left (under 64 KiB, as pgconn asks): moved to the front
		// before more rows, so that a large row is not moved again at every Read.
		c.buf = c.buf[:copy(c.buf, c.buf[c.off:])]
		c.off = 0
		if err := c.fill(len(p)); err != nil {
			return 0, err
		}
	}
	n := copy(p, c.buf[c.off:])
	c.off += n
	if c.done && c.off == len(c.buf) {
		return n, io.EOF
	}
	return n, nil
}

// fill appends rows to buf until it holds n bytes or the trailer.
func (c *copyReader) fill(n int) error {
	for len(c.buf) < n && !c.done {
		var ok bool
		if c.buf, ok = c.src.appendNext(c.buf); ok {
			continue
		}
		if c.src.err != nil {
			return c.src.err
		}
		c.buf = binary.BigEndian.AppendUint16(c.buf, 0xffff) // the trailer: -1 fields
		c.done = true
	}
	return nil
}

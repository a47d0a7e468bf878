// Package sniff guesses what kind of body a reader was handed, and tells a
// body cut off mid-stream from a malformed one. It is shared by the format
// readers of package spatial.
package sniff

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
)

// SkipBOMSpace returns b without a leading UTF-8 byte order mark and white
// space.
func SkipBOMSpace(b []byte) []byte {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	return bytes.TrimLeft(b, " \t\r\n")
}

// Kind guesses the kind of a body from its first bytes: "empty", "xml",
// "html", "json" or "text".
func Kind(peek []byte) string {
	b := SkipBOMSpace(peek)
	if len(b) == 0 {
		return "empty"
	}
	switch b[0] {
	case '{', '[':
		return "json"
	case '<':
		head := bytes.ToLower(b[:min(len(b), 16)])
		if bytes.HasPrefix(head, []byte("<!doctype html")) || bytes.HasPrefix(head, []byte("<html")) {
			return "html"
		}
		return "xml"
	}
	return "text"
}

// XMLTruncated tells whether err, returned by an encoding/xml Decoder, means
// that the input ended inside the document.
func XMLTruncated(err error) bool {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var se *xml.SyntaxError
	return errors.As(err, &se) && strings.HasPrefix(se.Msg, "unexpected EOF")
}

// CountingReader counts the bytes read through it.
type CountingReader struct {
	R io.Reader
	N int64
}

func (c *CountingReader) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	c.N += int64(n)
	return n, err
}

// Parsing the Content-Range of 206 and 416 responses, for resuming an
// asset download.

package imagery

import (
	"strconv"
	"strings"
)

// contentRange parses "bytes start-end/total" (total may be "*", giving -1).
func contentRange(s string) (start, total int64, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(s), "bytes ")
	if !found {
		return 0, 0, false
	}
	span, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	a, _, found := strings.Cut(span, "-")
	if !found {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(a, 10, 64)
	if err != nil || start < 0 {
		return 0, 0, false
	}
	total = -1
	if tot != "*" {
		if total, err = strconv.ParseInt(tot, 10, 64); err != nil {
			return 0, 0, false
		}
	}
	return start, total, true
}

// rangeTotal parses the "bytes */total" of a 416.
func rangeTotal(s string) (int64, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(s), "bytes */")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	return n, err == nil
}

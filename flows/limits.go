package flows

import (
	"bytes"
	"fmt"
)

// Limits a flow file is held to before its YAML is decoded: the YAML library's time
// and memory grow much faster than the input for deep nesting (40,000 brackets, 80 KB,
// took 12 s and 2.5 GB) and long scalars (20 MB, 0.8 GB). A real flow is a few KB,
// nested a handful of levels.
const (
	maxFlowBytes  = 1 << 20
	maxFlowDepth  = 64
	maxFlowIndent = 256
)

// checkLimits refuses a flow beyond the limits, naming the line and column where it
// goes beyond them. It reads src once, skipping quoted strings, comments and block
// scalars (whose brackets are text).
func checkLimits(file string, src []byte) error {
	if len(src) > maxFlowBytes {
		return &ValidationError{Problems: []Problem{{File: file,
			Msg: fmt.Sprintf("the flow file is %d bytes; a flow may have at most %d (1 MiB)", len(src), maxFlowBytes)}}}
	}
	problem := func(line, col int, format string, args ...any) error {
		return &ValidationError{Problems: []Problem{{File: file, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}}}
	}
	depth := 0        // open [ and { brackets
	blockIndent := -1 // inside a block scalar: the indentation of its key's line
	for n, line := range bytes.Split(src, []byte("\n")) {
		ln := n + 1
		line = bytes.TrimSuffix(line, []byte("\r"))
		indent := len(line) - len(bytes.TrimLeft(line, " \t"))
		content := line[indent:]
		if blockIndent >= 0 {
			if len(bytes.TrimSpace(content)) == 0 || indent > blockIndent {
				continue
			}
			blockIndent = -1
		}
		if indent > maxFlowIndent {
			return problem(ln, indent+1, "line indented by %d columns; a flow may be indented by at most %d", indent, maxFlowIndent)
		}
		if dashes := leadingDashes(content); depth+dashes+indent/2 > maxFlowDepth*2 || dashes > maxFlowDepth {
			return problem(ln, indent+1, "nested more than %d levels deep", maxFlowDepth)
		}
		sc := scanLine(content, depth)
		if sc.tooDeep > 0 {
			return problem(ln, indent+sc.tooDeep, "brackets nested more than %d deep", maxFlowDepth)
		}
		depth = sc.depth
		if sc.quoted {
			continue // a quoted scalar goes on over the next line
		}
		if t := bytes.TrimRight(sc.code, " \t"); depth == 0 && len(t) > 0 && blockHeader(t) {
			blockIndent = indent
		}
	}
	return nil
}

// leadingDashes counts the "- " a line starts with: "- - - x" nests a sequence per dash.
func leadingDashes(content []byte) int {
	dashes := 0
	for i := 0; i+1 < len(content) && content[i] == '-' && (content[i+1] == ' ' || content[i+1] == '\t'); i += 2 {
		dashes++
	}
	return dashes
}

// lineScan is what scanLine found on one line.
type lineScan struct {
	depth   int    // the bracket depth after the line
	code    []byte // the line without its comment
	quoted  bool   // a quoted scalar runs on past the line's end
	tooDeep int    // the column (from 1) where brackets nested deeper than maxFlowDepth; 0 if they did not
}

// scanLine follows the brackets of one line (without its indentation) that opens at
// bracket depth depth, skipping quoted scalars and the comment.
func scanLine(content []byte, depth int) lineScan {
	var quote byte
	for i := 0; i < len(content); i++ {
		c := content[i]
		switch {
		case quote == '"' && c == '\\':
			i++
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			if opensQuote(content[:i]) {
				quote = c
			}
		case c == '#' && (i == 0 || content[i-1] == ' ' || content[i-1] == '\t'):
			content = content[:i] // the comment is not part of the line (nor of a block header)
		case c == '[' || c == '{':
			if depth++; depth > maxFlowDepth {
				return lineScan{tooDeep: i + 1}
			}
		case c == ']' || c == '}':
			depth = max(depth-1, 0)
		}
	}
	return lineScan{depth: depth, code: content, quoted: quote != 0}
}

// opensQuote tells whether a quote after before opens a quoted scalar: only where a
// value starts (after a key's colon, a dash, a bracket or a comma); inside a plain scalar
// ("x 'y") it is text, and the brackets after it still count.
func opensQuote(before []byte) bool {
	t := bytes.TrimRight(before, " \t")
	return len(t) == 0 || bytes.IndexByte([]byte("[{,:-?"), t[len(t)-1]) >= 0
}

// blockHeader tells whether a line ends in a block scalar's header (| or >, with their
// chomping and indentation indicators) after a key or a dash.
func blockHeader(t []byte) bool {
	i := len(t) - 1
	for i >= 0 && (t[i] == '+' || t[i] == '-' || t[i] >= '1' && t[i] <= '9') {
		i--
	}
	if i < 0 || (t[i] != '|' && t[i] != '>') {
		return false
	}
	return i == 0 || t[i-1] == ' ' || t[i-1] == '\t'
}

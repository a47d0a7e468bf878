package cli

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// defaultWidth is the width output fits when it cannot tell the terminal's: output to a
// pipe or a file, with no $COLUMNS.
const defaultWidth = 80

// outWidth is the width in columns that output to w fits: one less than the terminal's
// when w is one, else than $COLUMNS, else than 80, so that no terminal wraps a line that
// fills its last column. wide (the commands' --wide) means no limit, 0: every column
// whole, as wide as it takes.
func outWidth(w io.Writer, wide bool) int {
	if wide {
		return 0
	}
	return termCols(w) - 1
}

// wideUsage is the help of every table command's --wide flag.
const wideUsage = "print every column and value whole, however wide (default: fit the terminal, or 80 columns when output is not one)"

// column is one column of a table: its heading and how it gives way when the table is
// wider than the output.
type column struct {
	head string
	// drop ranks the columns that may be left out, the highest first; 0 is never left out.
	drop int
	// free marks free text (names, errors), cut with an ellipsis to fit; other columns
	// (numbers, times, states) are shown whole or not at all.
	free bool
	// min is the narrowest a free column is cut to before other columns are left out.
	// Defaults to 12.
	min int
	// short, when set, is what a cell of the column shows when the table must fit a
	// width: a marker (AREA shows "bbox" for a run that had one) instead of the value.
	short string
}

// table is rows of cells under columns, written to fit a width.
type table struct {
	cols []column
	rows [][]string
}

// add appends a row, one value per column, formatted with %v.
func (t *table) add(cells ...any) {
	row := make([]string, len(cells))
	for i, c := range cells {
		row[i] = fmt.Sprint(c)
	}
	t.rows = append(t.rows, row)
}

// write writes the table to w fitting width columns (0: no limit): columns two spaces
// apart, the least important left out and free text cut with … until it fits.
func (t *table) write(w io.Writer, width int) error {
	rows := t.rows
	if width > 0 {
		rows = shortened(t.cols, rows)
	}
	natural := make([]int, len(t.cols))
	for i, c := range t.cols {
		natural[i] = runeLen(c.head)
		for _, r := range rows {
			natural[i] = max(natural[i], runeLen(oneLine(r[i])))
		}
	}
	widths := fitColumns(emptiesFirst(t.cols, rows, width), natural, width)
	var b strings.Builder
	line := func(cells func(i int) string) {
		var l strings.Builder
		for i, wd := range widths {
			if wd == 0 {
				continue
			}
			if l.Len() > 0 {
				l.WriteString("  ")
			}
			s := cut(oneLine(cells(i)), wd)
			l.WriteString(s + strings.Repeat(" ", wd-runeLen(s)))
		}
		b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}
	line(func(i int) string { return t.cols[i].head })
	for _, r := range rows {
		line(func(i int) string { return r[i] })
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// shortened replaces the cells of columns with a short form by that form.
func shortened(cols []column, rows [][]string) [][]string {
	if !slices.ContainsFunc(cols, func(c column) bool { return c.short != "" }) {
		return rows
	}
	out := make([][]string, len(rows))
	for j, r := range rows {
		out[j] = slices.Clone(r)
	}
	for i, c := range cols {
		if c.short == "" {
			continue
		}
		for _, r := range out {
			if r[i] != "" && r[i] != "-" {
				r[i] = c.short
			}
		}
	}
	return out
}

// emptiesFirst, when the table must fit a width, ranks the droppable columns with nothing
// to say (every cell 0, - or empty: DELETED of a table that is no mirror) to be left out
// before the others.
func emptiesFirst(cols []column, rows [][]string, width int) []column {
	if width <= 0 {
		return cols
	}
	out := slices.Clone(cols)
	for i, c := range out {
		if c.drop > 0 && !slices.ContainsFunc(rows, func(r []string) bool { return r[i] != "0" && r[i] != "-" && r[i] != "" }) {
			out[i].drop += 1000
		}
	}
	return out
}

// fitColumns decides each column's width (0: left out) for a table whose columns need
// natural widths to show whole, written within width (0: no limit). Free columns are
// first cut down to their min; if the table is still too wide, columns are left out by
// their drop rank, the highest first, each time giving the room freed back to the free
// columns; if leaving out every droppable one is not enough, free columns are cut to 4.
// Whatever room is left is shared out so that narrow free columns show whole first.
func fitColumns(cols []column, natural []int, width int) []int {
	widths := slices.Clone(natural)
	if width <= 0 {
		return widths
	}
	order := make([]int, 0, len(cols))
	for i, c := range cols {
		if c.drop > 0 {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(cols[b].drop, cols[a].drop) })
	floor := func(i int) int { return min(natural[i], cmp.Or(cols[i].min, 12)) }
	for step := 0; ; step++ {
		fixed, free, kept := 0, 0, 0
		for i, c := range cols {
			switch {
			case widths[i] == 0:
				continue
			case c.free:
				free += floor(i)
			default:
				fixed += natural[i]
			}
			kept++
		}
		fixed += 2 * max(kept-1, 0)
		if fixed+free <= width || step == len(order) {
			shareFree(cols, natural, widths, floor, width-fixed)
			return widths
		}
		widths[order[step]] = 0
	}
}

// shareFree shares room out among the kept free columns: each its floor first (when
// room allows them all), then what is left, narrowest natural width first, none past its
// natural width, so that a short name shows whole and a long error takes the rest. Each
// keeps at least 4, even when that overflows.
func shareFree(cols []column, natural, widths []int, floor func(int) int, room int) {
	var free []int
	base := 0
	for i, c := range cols {
		if c.free && widths[i] > 0 {
			free = append(free, i)
			base += floor(i)
		}
	}
	slices.SortStableFunc(free, func(a, b int) int { return cmp.Compare(natural[a], natural[b]) })
	if base > room {
		base = 0
	}
	room -= base
	for k, i := range free {
		have := 0
		if base > 0 {
			have = floor(i)
		}
		extra := min(natural[i]-have, room/(len(free)-k))
		widths[i] = max(have+extra, min(natural[i], 4))
		room -= extra
	}
}

// runeLen is how many columns s takes on a terminal, counting a rune as one.
func runeLen(s string) int { return utf8.RuneCountInString(s) }

// cut shortens s to at most n runes, marking the cut with an ellipsis.
func cut(s string, n int) string {
	if runeLen(s) <= n {
		return s
	}
	if n <= 1 {
		return string([]rune(s)[:n])
	}
	return string([]rune(s)[:n-1]) + "…"
}

// oneLine flattens s's runs of white space (newlines too) to one space each.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\n\r\t") && !strings.Contains(s, "  ") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// wrap breaks s into lines of at most width runes, at spaces where it can; a word longer
// than a line (a URL) follows on the line it starts and is broken where the line ends; width 0 leaves s one line. Newlines in s are kept.
func wrap(s string, width int) []string {
	var out []string
	for _, para := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if width <= 0 || runeLen(para) <= width {
			out = append(out, para)
			continue
		}
		var line []rune
		for _, word := range strings.Fields(para) {
			r := []rune(word)
			switch {
			case len(line) > 0 && (len(line)+1+len(r) <= width || len(r) > width):
				// It fits, or is too long for any line: a URL goes on after "GET ".
				line = append(append(line, ' '), r...)
			case len(line) > 0:
				out = append(out, string(line))
				line = r
			default:
				line = r
			}
			for len(line) > width {
				out = append(out, string(line[:width]))
				line = line[width:]
			}
		}
		out = append(out, string(line))
	}
	return out
}

// writeDetail writes key-value rows, the values aligned after the widest key and wrapped
// within width (0: no limit), their further lines indented under the first.
func writeDetail(w io.Writer, rows [][2]string, width int) error {
	keyw := 0
	for _, r := range rows {
		keyw = max(keyw, runeLen(r[0]))
	}
	keyw += 2
	var b strings.Builder
	for _, r := range rows {
		vw := 0
		if width > 0 {
			vw = max(width-keyw, 20)
		}
		for i, l := range wrap(r[1], vw) {
			k := ""
			if i == 0 {
				k = r[0]
			}
			b.WriteString(strings.TrimRight(k+strings.Repeat(" ", keyw-runeLen(k))+l, " ") + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeIndented writes s wrapped within width (0: no limit), each line indented by
// indent spaces.
func writeIndented(w io.Writer, s string, indent, width int) {
	vw := 0
	if width > 0 {
		vw = max(width-indent, 20)
	}
	for _, l := range wrap(s, vw) {
		fmt.Fprintln(w, strings.Repeat(" ", indent)+l)
	}
}

// writeWrapped writes text with each line wrapped within width (0: as it is), a line's
// further lines indented two more than its first.
func writeWrapped(w io.Writer, text string, width int) error {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		body := strings.TrimLeft(line, " ")
		indent := len(line) - len(body)
		vw := 0
		if width > 0 {
			vw = max(width-indent-2, 20)
		}
		for i, l := range wrap(body, vw) {
			pad := indent
			if i > 0 {
				pad += 2
			}
			b.WriteString(strings.Repeat(" ", pad) + l + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

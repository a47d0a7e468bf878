package sqlscript

import "testing"

// FuzzSplit holds the splitter to what its callers rely on, in both dialects, whatever the
// script: no panic; statements in order, each its script's text between its offsets, none
// empty, with their tokens inside; a statement split again is itself alone; and a
// rewrite of its parameters maps every offset back to the script.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{
		"select 1; select 2",
		"do $$ begin perform 1; end $$; select @run_id",
		"create trigger t after insert on a begin insert into b values (1); end; select 2",
		"select E'it\\'s;', 'a''b', \"c;\"\"d\" -- x;\n/* y; /* z */ */ from t where g && @bbox",
		"create function f() returns int language sql begin atomic select case when true then 1 end; end;",
		"select [a;b], `c`, ?, ?1, :n, $m from t",
		"select $tag$ $$ ; $tag$, a$b, $1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 4096 {
			t.Skip("the check below is quadratic") // the splitter is not: a script is read once
		}
		for _, d := range []Dialect{PostgreSQL, SQLite} {
			sts, err := Split(src, d)
			if err != nil {
				se, ok := err.(*ScanError)
				if !ok || se.Offset < 0 || se.Offset > len(src) {
					t.Fatalf("%v: %q: error %v", d, src, err)
				}
				continue
			}
			checkStatements(t, src, d, sts)
		}
	})
}

func checkStatements(t *testing.T, src string, d Dialect, sts []Statement) {
	prev := 0
	for _, st := range sts {
		if st.Start < prev || st.End <= st.Start || st.End > len(src) || src[st.Start:st.End] != st.Text || len(st.Tokens) == 0 {
			t.Fatalf("%v: %q: statement %+v out of order or empty", d, src, st)
		}
		for _, tk := range st.Tokens {
			if tk.Start < st.Start || tk.End > st.End || src[tk.Start:tk.End] != tk.Text {
				t.Fatalf("%v: %q: token %+v outside its statement %q", d, src, tk, st.Text)
			}
		}
		prev = st.End
		again, err := Split(st.Text, d)
		if err != nil || len(again) != 1 || again[0].Text != st.Text {
			t.Fatalf("%v: %q: statement %q split again: %q, %v", d, src, st.Text, texts(again), err)
		}
		params := map[int]bool{}
		for _, p := range st.Params() {
			params[p.Start] = true
		}
		out, m := st.Rewrite(func(tk Token) (string, bool) { return "($9::geometry)", tk.Kind == Param })
		for off := 0; off < len(out); off++ {
			in := m.Script(off)
			if in < st.Start || in >= st.End {
				t.Fatalf("%v: %q: offset %d of %q maps outside the statement: %d", d, src, off, out, in)
			}
			// Each byte maps to itself, or into a replacement, to its parameter.
			if src[in] != out[off] && !params[in] {
				t.Fatalf("%v: %q: offset %d of %q maps to %d (%q)", d, src, off, out, in, src[in:])
			}
		}
	}
}

package sqlscript

import (
	"slices"
	"strings"
	"testing"
)

func texts(sts []Statement) []string {
	out := make([]string, len(sts))
	for i, s := range sts {
		out[i] = s.Text
	}
	return out
}

func TestSplit(t *testing.T) {
	tests := []struct {
		name string
		d    Dialect
		src  string
		want []string
	}{
		{"plain", PostgreSQL, "select 1; select 2", []string{"select 1", "select 2"}},
		{"trailing semicolon and blanks", PostgreSQL, "\n select 1 ;\n\n;; \n", []string{"select 1"}},
		{"semicolon in a string", PostgreSQL, "select 'a;b'; select 'it''s;'", []string{"select 'a;b'", "select 'it''s;'"}},
		{"semicolon in an identifier", PostgreSQL, `select 1 as "a;""b"; select 2`, []string{`select 1 as "a;""b"`, "select 2"}},
		{"line comment", PostgreSQL, "select 1; -- a comment; with a semicolon\nselect 2", []string{"select 1", "select 2"}},
		{"comment alone is no statement", PostgreSQL, "-- only a comment;\n/* and; this */", nil},
		{"block comment", PostgreSQL, "select /* ; */ 1; select 2", []string{"select /* ; */ 1", "select 2"}},
		{"nested block comment in PostgreSQL", PostgreSQL, "select /* a /* b; */ c; */ 1; select 2", []string{"select /* a /* b; */ c; */ 1", "select 2"}},
		{"SQLite block comments do not nest", SQLite, "select /* a /* b; */ 1; select 2", []string{"select /* a /* b; */ 1", "select 2"}},
		{"dollar quotes", PostgreSQL, "do $$ begin perform 1; end $$; select 2",
			[]string{"do $$ begin perform 1; end $$", "select 2"}},
		{"tagged dollar quotes hold $$", PostgreSQL, "create function f() returns int as $body$ select 1; $$ $body$ language sql; select 2",
			[]string{"create function f() returns int as $body$ select 1; $$ $body$ language sql", "select 2"}},
		{"dollar in an identifier is no quote", PostgreSQL, "select a$b$c from t; select 2", []string{"select a$b$c from t", "select 2"}},
		{"positional parameter is no quote", PostgreSQL, "select $1; select 2", []string{"select $1", "select 2"}},
		{"E string with backslash quote", PostgreSQL, `select E'it\'s;'; select 2`, []string{`select E'it\'s;'`, "select 2"}},
		{"SQLite trigger body", SQLite,
			"create trigger t after insert on a begin insert into b values (1); update c set n = case when 1 then 2 else 3 end; end; select 2",
			[]string{"create trigger t after insert on a begin insert into b values (1); update c set n = case when 1 then 2 else 3 end; end", "select 2"}},
		{"SQLite temp trigger", SQLite, "CREATE TEMP TRIGGER t BEFORE DELETE ON a BEGIN SELECT RAISE(ABORT, 'no;'); END;\nselect 1",
			[]string{"CREATE TEMP TRIGGER t BEFORE DELETE ON a BEGIN SELECT RAISE(ABORT, 'no;'); END", "select 1"}},
		{"PostgreSQL trigger without body", PostgreSQL, "create trigger t after insert on a for each row execute function f(); select 1",
			[]string{"create trigger t after insert on a for each row execute function f()", "select 1"}},
		{"BEGIN ATOMIC", PostgreSQL, "create function f() returns int language sql begin atomic select 1; select 2; end; select 3",
			[]string{"create function f() returns int language sql begin atomic select 1; select 2; end", "select 3"}},
		{"case outside a body", PostgreSQL, "select case when true then 1 end; select 2", []string{"select case when true then 1 end", "select 2"}},
		{"rule with commands in parentheses", PostgreSQL, "create rule r as on insert to a do also (insert into b values (1); delete from c); select 1",
			[]string{"create rule r as on insert to a do also (insert into b values (1); delete from c)", "select 1"}},
		{"SQLite bracket and backtick identifiers", SQLite, "select [a;b], `c;d` from t; select 2", []string{"select [a;b], `c;d` from t", "select 2"}},
		{"brackets are subscripts in PostgreSQL", PostgreSQL, "select a[1]; select ']'", []string{"select a[1]", "select ']'"}},
		{"operator next to a comment", PostgreSQL, "select 1 +-- plus\n2; select 3", []string{"select 1 +-- plus\n2", "select 3"}},
		{"geometry operators", PostgreSQL, "select a @> b, c <@ d, e && f, t @@ q; select 2", []string{"select a @> b, c <@ d, e && f, t @@ q", "select 2"}},
		{"no final semicolon", SQLite, "select 1", []string{"select 1"}},
		{"unicode", PostgreSQL, "select 'zoné;'; select \"Zoné\"", []string{"select 'zoné;'", `select "Zoné"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Split(tc.src, tc.d)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(texts(got), tc.want) {
				t.Errorf("Split(%q) = %q, want %q", tc.src, texts(got), tc.want)
			}
		})
	}
}

func TestSplitErrors(t *testing.T) {
	tests := []struct {
		name       string
		d          Dialect
		src        string
		wantOffset int
		wantMsg    string
	}{
		{"string", PostgreSQL, "select 1;\nselect 'abc", 17, "string"},
		{"identifier", SQLite, `select "abc`, 7, "quoted identifier"},
		{"dollar quote", PostgreSQL, "do $x$ begin end $$", 3, "$x$"},
		{"block comment in PostgreSQL", PostgreSQL, "select 1 /* no end", 9, "comment"},
		{"nested block comment", PostgreSQL, "/* a /* b */", 0, "comment"},
		{"bracket", SQLite, "select [abc", 7, "[...]"},
		{"E string ending in a backslash quote", PostgreSQL, `select E'abc\'`, 7, "string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Split(tc.src, tc.d)
			se, ok := err.(*ScanError)
			if !ok {
				t.Fatalf("Split(%q): err %v, want a *ScanError", tc.src, err)
			}
			if se.Offset != tc.wantOffset || !strings.Contains(se.Msg, tc.wantMsg) {
				t.Errorf("Split(%q): %d %q, want offset %d and %q", tc.src, se.Offset, se.Msg, tc.wantOffset, tc.wantMsg)
			}
		})
	}
	// SQLite lets a block comment run to the end of the script.
	if _, err := Split("select 1 /* no end", SQLite); err != nil {
		t.Errorf("SQLite: %v", err)
	}
}

func one(t *testing.T, src string, d Dialect) Statement {
	t.Helper()
	sts, err := Split(src, d)
	if err != nil || len(sts) != 1 {
		t.Fatalf("Split(%q) = %v, %v; want one statement", src, texts(sts), err)
	}
	return sts[0]
}

func tokenTexts(ts []Token) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Text)
	}
	return out
}

func TestParams(t *testing.T) {
	tests := []struct {
		name       string
		d          Dialect
		src        string
		want       []string
		wantGlued  []string
		wantParams bool
	}{
		{"named", PostgreSQL, "select @run_id, @flow where x = @bbox", []string{"@run_id", "@flow", "@bbox"}, nil, true},
		{"not in strings or comments", PostgreSQL, "select '@run_id' -- @flow\n, $$ @task $$ /* @bbox */", nil, nil, false},
		{"operators are not parameters", PostgreSQL, "select a @> b, c <@ d, t @@ q, @ -5", nil, nil, false},
		{"glued to an operator in PostgreSQL", PostgreSQL, "select x=@run_id, -@bbox_xmin", nil, []string{"run_id", "bbox_xmin"}, false},
		{"glued is fine in SQLite", SQLite, "select x=@run_id, -@bbox_xmin", []string{"@run_id", "@bbox_xmin"}, nil, true},
		{"positional in PostgreSQL", PostgreSQL, "select $1, $22", []string{"$1", "$22"}, nil, true},
		{"SQLite's other forms", SQLite, "select ?, ?2, :name, $dollar, @at", []string{"?", "?2", ":name", "$dollar", "@at"}, nil, true},
		{"cast is no parameter", PostgreSQL, "select @run_id::text, a::int", []string{"@run_id"}, nil, true},
		{"jsonb ? is an operator in PostgreSQL", PostgreSQL, "select j ? 'k'", nil, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := one(t, tc.src, tc.d)
			if got := tokenTexts(st.Params()); !slices.Equal(got, tc.want) {
				t.Errorf("Params = %q, want %q", got, tc.want)
			}
			if got := tokenTexts(st.Glued()); !slices.Equal(got, tc.wantGlued) {
				t.Errorf("Glued = %q, want %q", got, tc.wantGlued)
			}
		})
	}
}

func TestEndsTransaction(t *testing.T) {
	tests := []struct {
		src  string
		want bool
	}{
		{"begin", true}, {"BEGIN TRANSACTION", true}, {"begin immediate", true}, {"start transaction", true},
		{"commit", true}, {"end", true}, {"end transaction", true}, {"rollback", true}, {"abort", true},
		{"prepare transaction 'x'", true}, {"commit prepared 'x'", true},
		{"rollback to savepoint a", false}, {"rollback transaction to a", false}, {"ROLLBACK TO a", false},
		{"savepoint a", false}, {"release savepoint a", false}, {"select 1", false},
		{"do $$ begin commit; end $$", false}, {"prepare q as select 1", false},
		{"create trigger t after insert on a begin select 1; end", false},
	}
	for _, tc := range tests {
		t.Run(tc.src, func(t *testing.T) {
			if strings.Contains(tc.src, "$$") {
				// not SQLite: it has no dollar quotes
			} else if _, got := one(t, tc.src, SQLite).EndsTransaction(); got != tc.want {
				t.Errorf("EndsTransaction(%q) = %v, want %v", tc.src, got, tc.want)
			}
			if _, got := one(t, tc.src, PostgreSQL).EndsTransaction(); got != tc.want {
				t.Errorf("PostgreSQL: EndsTransaction(%q) = %v, want %v", tc.src, got, tc.want)
			}
		})
	}
}

func TestCalls(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"select list", "select ST_Union(geom), count(*), upper(zone) from parcels group by zone", []string{"ST_Union", "count", "upper"}},
		{"nested", "select st_area(st_buffer(geom, 1)) from t", []string{"st_area", "st_buffer"}},
		{"create table with types", "create table t (id integer primary key, name varchar(10), n decimal(10, 2), check (n > 0), unique (name))", nil},
		{"quoted column type", `create table t ("name" varchar(10))`, nil},
		{"if not exists", "create table if not exists t(a)", nil},
		{"insert columns", "insert into summary(zone, n) select zone, count(*) from parcels", []string{"count"}},
		{"qualified table", "insert into main.summary(zone) values (1)", nil},
		{"index", "create unique index i on t(a, lower(b))", []string{"lower"}},
		{"join on a function", "select 1 from a join b on st_intersects(a.g, b.g)", []string{"st_intersects"}},
		{"cte", "with x(a, b) as (select 1, 2), y(c) as materialized (select abs(3)) select * from x, y", []string{"abs"}},
		{"alias after a call", "select f(x) as y from t", []string{"f"}},
		{"table-valued function", "select * from json_each(@x), pragma_table_info('t')", []string{"pragma_table_info"}},
		{"cast", "select cast(x as decimal(10, 2)) from t", nil},
		{"keywords with parentheses", "select * from t where a in (1) and exists (select 1) and b = replace(c, 'a', 'b') and glob('*', d)", nil},
		{"window", "select row_number() over (partition by a) from t", []string{"row_number"}},
		{"virtual table", "create virtual table r using rtree(id, minx, maxx)", nil},
		{"view", "create view v(a) as select 1", nil},
		{"references", "create table c (p integer references parent(id))", nil},
		{"in a string", "select 'st_union(geom)'", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tokenTexts(one(t, tc.src, SQLite).Calls()); !slices.Equal(got, tc.want) {
				t.Errorf("Calls(%q) = %q, want %q", tc.src, got, tc.want)
			}
		})
	}
}

func TestRewrite(t *testing.T) {
	src := "select 1;\nselect 'é', @run_id, x from t where y = @bbox_xmin and @bbox_xmin < 3"
	st, err := Split(src, PostgreSQL)
	if err != nil {
		t.Fatal(err)
	}
	s := st[1]
	n := 0
	out, m := s.Rewrite(func(tk Token) (string, bool) {
		if tk.Kind != Param {
			return "", false
		}
		n++
		return "($" + string(rune('0'+n)) + "::double precision)", true
	})
	want := "select 'é', ($1::double precision), x from t where y = ($2::double precision) and ($3::double precision) < 3"
	if out != want {
		t.Fatalf("Rewrite = %q, want %q", out, want)
	}
	for _, tc := range []struct {
		at   string // a piece of the rewritten text
		want string // what the script holds at the mapped offset
	}{
		{"select", "select"}, {"($1", "@run_id"}, {"::double precision), x", "@run_id"}, {", x from", ", x from"},
		{"($2", "@bbox_xmin and"}, {"< 3", "< 3"}, {"'é'", "'é'"},
	} {
		off := strings.Index(out, tc.at)
		got := m.Script(off)
		if !strings.HasPrefix(src[got:], tc.want) {
			t.Errorf("Script(%d) (at %q) = %d, at %q; want %q", off, tc.at, got, src[got:], tc.want)
		}
	}
	// PostgreSQL counts characters: position 10 is the closing quote after é.
	if off := CharOffset(out, 10); off != 10 || out[off] != '\'' {
		t.Errorf("CharOffset(10) = %d (%q)", off, out[off:])
	}
	if line, col := Position(src, m.Script(strings.Index(out, "($2"))); line != 2 || col != 41 {
		t.Errorf("Position = %d:%d, want 2:41", line, col)
	}
}

func TestVerb(t *testing.T) {
	tests := []struct{ src, want string }{
		{"select 1", "SELECT"}, {"Insert into t values (1)", "INSERT"}, {"create table t as select 1", "CREATE"},
		{"with a as (select 1), b(x) as (select 2) insert into t select * from a", "INSERT"},
		{"with recursive a(n) as (select 1 union all select n + 1 from a where n < 3) select * from a", "SELECT"},
		{"with a as (delete from t returning *) select count(*) from a", "SELECT"},
		{"(select 1)", ""},
	}
	for _, tc := range tests {
		t.Run(tc.src, func(t *testing.T) {
			if got := one(t, tc.src, PostgreSQL).Verb(); got != tc.want {
				t.Errorf("Verb(%q) = %q, want %q", tc.src, got, tc.want)
			}
		})
	}
}

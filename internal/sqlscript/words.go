package sqlscript

import "strings"

// Words are the words of text as either database reads it, lower-cased, quoted
// identifiers unquoted: what a check looks table names up in without parsing SQL. Text
// neither database can read has none.
func Words(text string) map[string]bool {
	words := map[string]bool{}
	for _, dl := range []Dialect{PostgreSQL, SQLite} {
		toks, err := Scan(text, dl)
		if err != nil {
			continue
		}
		for _, t := range toks {
			switch t.Kind {
			case Word:
				words[strings.ToLower(t.Text)] = true
			case Quoted:
				words[strings.ToLower(strings.Trim(t.Text, "\"`[]"))] = true
			}
		}
		break
	}
	return words
}

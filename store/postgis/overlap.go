package postgis

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/geoflow/geoflow/store"
)

// overlapSQL counts the features staged in stage whose row in target, matched by on (a
// condition over s, the staged row, and t, the stored one), the run $1 wrote: run after
// the unit's write, it sees the rows other units of the run committed meanwhile, those
// its insert waited for included.
func overlapSQL(stage, target, on string) string {
	return fmt.Sprintf(`SELECT count(*) FROM %s s JOIN %s t ON %s WHERE t.gf_run_id = $1`, stage, target, on)
}

// upsertMatch matches a staged row to the stored row of its key in an upsert table.
// A skipped feature's stored row has its payload: the payload hash (indexed) finds it,
// the key (NULL matching NULL, as the table's unique index has it) confirms it.
func upsertMatch(t *store.FeatureTable) string {
	on := []string{"t.gf_payload_hash = s.gf_payload_hash"}
	for _, k := range t.Key {
		for j, c := range t.Columns {
			if c.Name == k {
				on = append(on, fmt.Sprintf("t.%s IS NOT DISTINCT FROM %s", pgx.Identifier{k}.Sanitize(), castSQL(fmt.Sprintf("s.c%d", j), c.Type)))
			}
		}
	}
	return strings.Join(on, " AND ")
}

// overlapOf is how many of a unit's skipped features were this run's own (store.Counts.
// Overlap): matches are its staged features whose stored row the run wrote, written the
// rows the unit itself inserted or updated (which the run wrote too, and which each
// match at least once). A feature staged twice in one page is matched twice, once
// skipped. It is never below 0 nor above skipped.
func overlapOf(matches, written, skipped int64) int64 {
	return max(0, min(matches-written, skipped))
}

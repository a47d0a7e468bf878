package export

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	core "github.com/geoflow/geoflow/export"
	"github.com/geoflow/geoflow/internal/sqlscript"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// stage writes a query's result beside its file and puts it in place only when it
// differs from what the file holds: a query's tables have no stamp to tell beforehand,
// so the features are written, and their digest (core.Staged.Fingerprint) compared
// with the one the asset row recorded. An unchanged result is discarded, leaving the
// file as it was (the same inode and modification time: readers see no change).
func (t *Task) stage(ctx context.Context, env *tasks.Env, job *core.Job, stored *store.StoredFile, item string) (*tasks.Output, error) {
	st, err := job.Stage(ctx)
	if err != nil {
		return nil, failure(err)
	}
	if unchanged(stored, st.Fingerprint, t.spec.Path) {
		if err := st.Discard(); err != nil {
			env.Logger.Warn("export: leaving a staged file behind", "err", err)
		}
		env.Logger.Info("export: unchanged, not written again", "path", t.spec.Path, "features", st.Features)
		return &tasks.Output{}, nil
	}
	if err := st.Commit(); err != nil {
		return nil, failure(err)
	}
	hash, err := fileHash(st.Path)
	if err != nil {
		return nil, store.DiskFault("reading back "+st.Path, err)
	}
	env.Logger.Info("export: written", "features", st.Features, "path", st.Path, "format", st.Format,
		"bytes", st.Bytes, "elapsed", st.Elapsed)
	table := Table
	return &tasks.Output{AssetTable: &table, Assets: []store.AssetRow{{Collection: "export", Item: item, Asset: t.spec.Path,
		Path: st.Path, Hash: hash, Bytes: st.Bytes, ContentType: contentType(st.Format), ETag: st.Fingerprint}}}, nil
}

// queryRaces says which tables of the flow the query names (a word of it is the
// table's name) that a task this export does not depend on writes: it would read
// them half written, or before they are. Names are found by their words, not by
// parsing SQL: a table named only through a view or a function is not seen.
func queryRaces(query string, f tasks.FlowInfo) []string {
	words := sqlscript.Words(query)
	var out []string
	for _, id := range slices.Sorted(maps.Keys(f.Tables)) {
		if f.Upstream[id] {
			continue
		}
		if _, name, err := store.SplitTable(f.Tables[id]); err == nil && words[strings.ToLower(name)] {
			out = append(out, fmt.Sprintf("the query names %s, the table task %q writes, which must run first: add %q to depends_on", f.Tables[id], id, id))
		}
	}
	return out
}

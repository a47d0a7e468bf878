package export

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/geoflow/geoflow/dlq"
	core "github.com/geoflow/geoflow/export"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// Table is the asset table every export task records its files in: one row per task
// and path (collection "export", item flow/task, asset the path), whose ETag is the
// export's fingerprint (core.Job.Fingerprint).
var Table = store.AssetTable{Name: "geoflow_exports", Bookkeeping: true}

// unitKey is the key of an export's one unit.
const unitKey = "export"

// Task is a configured export task.
type Task struct {
	id      string
	spec    core.Spec
	of      string
	changes bool
}

var _ tasks.Task = (*Task)(nil)

// Plan implements tasks.Task: one unit, whatever the run's area (a --bbox rerun
// exports again what the tasks it reruns wrote); it creates the asset table.
func (t *Task) Plan(ctx context.Context, env *tasks.Env) ([]store.Unit, error) {
	table := Table
	if err := env.Assets.EnsureAssetTable(ctx, &table); err != nil {
		return nil, err
	}
	return []store.Unit{{Key: unitKey}}, nil
}

// reader is the store as an export reads it.
type reader struct {
	store.Tables
	store.Changes
	store.Queries
}

// Execute implements tasks.Task: it writes the file, unless the asset row says the
// same export (the same fingerprint) wrote the file there and it is still there with
// its size: then it writes nothing (and logs "export: unchanged"). The file's row
// commits with the unit.
func (t *Task) Execute(ctx context.Context, env *tasks.Env, u store.Unit) (*tasks.Output, error) {
	spec := t.spec
	if t.changes {
		spec.Changes = &core.Changes{RunID: env.RunID, Task: t.of}
	}
	if spec.Query != "" && env.Queries == nil {
		return nil, retry.Permanent(dlq.ClassInvalid, errors.New("export: this store runs no queries"))
	}
	job, err := core.Prepare(ctx, spec, reader{env.Tables, env.Changes, env.Queries})
	if err != nil {
		return nil, failure(err)
	}
	table := Table
	item := env.Flow + "/" + env.TaskID
	stored, err := env.Assets.LookupAsset(ctx, &table, "export", item, spec.Path)
	if err != nil {
		return nil, err
	}
	if spec.Query != "" {
		return t.stage(ctx, env, job, stored, item)
	}
	fp := job.Fingerprint()
	if unchanged(stored, fp, spec.Path) {
		env.Logger.Info("export: unchanged, not written again", "path", spec.Path)
		return &tasks.Output{}, nil
	}
	res, err := job.Write(ctx)
	if err != nil {
		return nil, failure(err)
	}
	hash, err := fileHash(res.Path)
	if err != nil {
		return nil, store.DiskFault("reading back "+res.Path, err)
	}
	env.Logger.Info("export: written", "features", res.Features, "path", res.Path, "format", res.Format,
		"bytes", res.Bytes, "elapsed", res.Elapsed)
	out := &tasks.Output{AssetTable: &table, Assets: []store.AssetRow{{Collection: "export", Item: item, Asset: spec.Path,
		Path: res.Path, Hash: hash, Bytes: res.Bytes, ContentType: contentType(res.Format), ETag: fp}}}
	// The file is not counted with the run's features (inserted, updated): the log line
	// says what was written, and the asset row records it.
	return out, nil
}

// unchanged tells whether the stored row says an export with fingerprint fp wrote the
// file at path, and the file is there with the size it had.
func unchanged(stored *store.StoredFile, fp, path string) bool {
	if stored == nil || stored.ETag != fp || stored.Path != path {
		return false
	}
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Size() == stored.Bytes
}

// failure classifies an export's error: the store's faults and cancellation as they
// are, the rest (a table or column that is not there, a CRS the store cannot
// transform, a value the format cannot hold, a full disk) for good: the same export
// fails the same way until the flow or the data changes.
func failure(err error) error {
	var f *store.Fault
	if errors.As(err, &f) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return retry.Permanent(dlq.ClassInvalid, err)
}

// fileHash is the sha-256 of the file at path.
func fileHash(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// contentType is the media type of a format's files.
func contentType(f core.Format) string {
	switch f {
	case core.GeoPackage:
		return "application/geopackage+sqlite3"
	case core.FlatGeobuf:
		return "application/flatgeobuf"
	case core.GeoJSONSeq:
		return "application/geo+json-seq"
	}
	return fmt.Sprintf("application/octet-stream; format=%s", f)
}

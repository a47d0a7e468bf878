package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/geoflow/geoflow/spatial/geojson"
	"github.com/geoflow/geoflow/store"
)

func newChangesCmd(g *globals) *cobra.Command {
	var (
		task          string
		asJS, asGeoJS bool
		wide          bool
	)
	cmd := &cobra.Command{
		Use:   "changes RUN",
		Short: "List the features a run inserted, updated or deleted",
		Long: "List what a run changed in its mirror and history tables (target.mode: mirror, or target.history: true),\n" +
			"feature by feature: inserted, updated, deleted. Append and upsert tables record counts only (geoflow runs show).\n\n" +
			"--json prints one JSON object per line (run, task, table, key, feature_id, change); --geojson prints a\n" +
			"FeatureCollection of the changed features as the run left them (a deleted one as it was), in lon/lat, with\n" +
			"gf_change, gf_key and gf_task among the properties: pipe it into ogr2ogr or draw it.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id < 1 {
				return fmt.Errorf("run id %q: want a positive whole number", args[0])
			}
			if asJS && asGeoJS {
				return fmt.Errorf("--json and --geojson: choose one")
			}
			st, err := openExisting(cmd.Context(), g, true)
			if err != nil {
				return err
			}
			defer st.Close()
			if _, err := st.GetRun(cmd.Context(), id); err != nil {
				return err
			}
			f := store.ChangeFilter{RunID: id, Task: task, Features: asGeoJS}
			w := bufio.NewWriter(g.stdout)
			defer w.Flush()
			switch {
			case asGeoJS:
				return writeChangesGeoJSON(w, func(fn func(store.Change) error) error { return st.ListChanges(cmd.Context(), f, fn) })
			case asJS:
				enc := json.NewEncoder(w)
				return st.ListChanges(cmd.Context(), f, func(c store.Change) error { return enc.Encode(c) })
			}
			return writeChangesTable(w, id, outWidth(g.stdout, wide), func(fn func(store.Change) error) error { return st.ListChanges(cmd.Context(), f, fn) })
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&task, "task", "", "only the changes of this task")
	fl.BoolVar(&asJS, "json", false, "print one JSON object per change, for scripts")
	fl.BoolVar(&asGeoJS, "geojson", false, "print the changed features as a GeoJSON FeatureCollection")
	fl.BoolVar(&wide, "wide", false, wideUsage)
	return cmd
}

// writeChangesTable writes a run's changes as a table within width (0: every value whole).
func writeChangesTable(w io.Writer, run int64, width int, list func(func(store.Change) error) error) error {
	t := table{cols: []column{{head: "TASK", free: true, min: 8}, {head: "TABLE", free: true, min: 8}, {head: "CHANGE"},
		{head: "KEY", free: true, min: 12, drop: 1}, {head: "FEATURE ID", free: true, min: 12}}}
	err := list(func(c store.Change) error {
		t.add(c.Task, c.Table, c.Kind, c.Key, c.FeatureID)
		return nil
	})
	if err != nil {
		return err
	}
	if len(t.rows) == 0 {
		_, err := fmt.Fprintf(w, "run %d changed no feature of a mirror or history table\n", run)
		return err
	}
	return t.write(w, width)
}

// writeChangesGeoJSON streams the changes as one FeatureCollection, a feature at a time.
func writeChangesGeoJSON(w io.Writer, list func(func(store.Change) error) error) error {
	c := geojson.NewCollectionWriter(w)
	err := list(func(ch store.Change) error {
		id, g, props := store.ChangeFeature(ch)
		return c.Feature(id, g, props)
	})
	if err != nil {
		return err
	}
	return c.Close(nil)
}

package cli

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/geoflow/geoflow/export"
	"github.com/geoflow/geoflow/flows"
)

// exportFlags are the flags of geoflow export, as typed.
type exportFlags struct {
	format, bbox, where, srs, columns, changes, sql string
	cpuProfile                                      string
}

func newExportCmd(g *globals) *cobra.Command {
	var ef exportFlags
	cmd := &cobra.Command{
		Use:   "export {TABLE | --sql QUERY} FILE",
		Short: "Write a stored table as a GeoPackage, FlatGeobuf or GeoJSON sequence file",
		Long: "Write a table geoflow stored into FILE, in the format its extension names (.gpkg, .fgb, .geojsons,\n" +
			".geojsonl) or --format: the table's columns with their types, and the feature id as gf_feature_id\n" +
			"(a GeoJSON sequence's id). The file is written beside FILE and renamed over it once complete: a reader\n" +
			"never sees half a file, and a failure leaves FILE as it was.\n\n" +
			"--where is a boolean expression in the store's own SQL (PostgreSQL's, or SQLite's for a GeoPackage),\n" +
			"like ogr2ogr's -where: your own SQL on your own database, run in a read-only transaction.\n" +
			"--changes RUN writes what that run inserted, updated or deleted in TABLE instead (gf_change, gf_key).\n\n" +
			"--sql QUERY writes the result of one SELECT in the store's own SQL instead of a table, like ogr2ogr's\n" +
			"-sql, and then takes FILE alone: its one geometry column is the features' geometry, its other columns\n" +
			"their properties, and the layer is named after FILE. It runs in a read-only transaction.",
		Args: ef.args,
		RunE: func(cmd *cobra.Command, args []string) error {
			table, file := "", args[0]
			if len(args) == 2 {
				table, file = args[0], args[1]
			}
			spec, err := ef.spec(table, file)
			if err != nil {
				return err
			}
			st, err := openExisting(cmd.Context(), g, true)
			if err != nil {
				return err
			}
			defer st.Close()
			exportGC()
			stopProfile, err := startCPUProfile(ef.cpuProfile)
			if err != nil {
				return fmt.Errorf("--cpuprofile: %w", err)
			}
			res, err := export.Write(cmd.Context(), spec, st)
			stopProfile()
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(g.stdout, "%d features of %s written to %s (%s, %s) in %s\n", res.Features, res.Table, res.Path,
				res.Format, byteSize(res.Bytes), res.Elapsed.Round(time.Millisecond))
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&ef.format, "format", "f", "", "gpkg, fgb or geojsonseq (default: from FILE's extension)")
	f.StringVar(&ef.bbox, "bbox", "", "only the features meeting minx,miny,maxx,maxy (lon/lat)")
	f.StringVar(&ef.where, "where", "", "only the rows this SQL expression holds for, in the store's own SQL")
	f.StringVar(&ef.srs, "srs", "", "write in this CRS, EPSG:n (default: the table's own; GeoJSON sequences are lon/lat)")
	f.StringVar(&ef.columns, "columns", "", "only these columns, in this order: a,b,c")
	f.StringVar(&ef.changes, "changes", "", "write the changes run RUN_ID made to TABLE rather than the table")
	f.StringVar(&ef.sql, "sql", "", "write the result of this SQL query (one SELECT) rather than a table; then FILE alone")
	f.StringVar(&ef.cpuProfile, "cpuprofile", "", "write a CPU profile to this file (for benchmarks)")
	_ = f.MarkHidden("cpuprofile")
	return cmd
}

// args checks the arguments: TABLE FILE, or FILE alone with --sql.
func (ef *exportFlags) args(cmd *cobra.Command, args []string) error {
	switch {
	case ef.sql != "" && len(args) != 1:
		return fmt.Errorf("with --sql, give FILE alone (the query says what to export); got %d arguments", len(args))
	case ef.sql == "" && len(args) != 2:
		return fmt.Errorf("give TABLE and FILE (or --sql QUERY and FILE); got %d arguments", len(args))
	}
	return nil
}

// exportGC sets the pace of garbage collection for an export, unless GOGC does. An
// export keeps what it must of each feature (a FlatGeobuf's index entries, a
// GeoPackage's R-tree boxes) and little else: main's GOGC=400, made for harvests, whose
// live heap is small, let a million-feature export grow to five times its index (306
// MB to write a FlatGeobuf). At 25 the heap stays within a quarter more than it keeps,
// for a few more collections of a heap that is mostly boxes, which hold no pointers
// to follow: under 2% of an export's time.
func exportGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(25)
	}
}

// spec checks the flags and makes them an export.Spec of table into file.
func (ef exportFlags) spec(table, file string) (export.Spec, error) {
	spec := export.Spec{Table: table, Path: file, Where: ef.where, Query: ef.sql}
	var err error
	if ef.sql != "" && (ef.where != "" || ef.bbox != "" || ef.changes != "") {
		return spec, errors.New("--sql: the query says which rows: leave out --where, --bbox and --changes")
	}
	if spec.Format, err = export.ParseFormat(ef.format); err != nil {
		return spec, fmt.Errorf("--format: %w", err)
	}
	if ef.bbox != "" {
		if spec.BBox, err = flows.ParseArea(ef.bbox, "EPSG:4326"); err != nil {
			return spec, err
		}
	}
	if ef.srs != "" {
		if spec.SRID, err = export.ParseSRS(ef.srs); err != nil {
			return spec, fmt.Errorf("--srs: %w", err)
		}
	}
	if ef.columns != "" {
		for _, c := range strings.Split(ef.columns, ",") {
			spec.Columns = append(spec.Columns, strings.TrimSpace(c))
		}
	}
	if ef.changes != "" {
		id, err := strconv.ParseInt(ef.changes, 10, 64)
		if err != nil || id < 1 {
			return spec, fmt.Errorf("--changes %q: want a run id (a positive whole number)", ef.changes)
		}
		spec.Changes = &export.Changes{RunID: id}
	}
	return spec, nil
}

// byteSize is n bytes for a person: 812 B, 1.4 MB.
func byteSize(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}

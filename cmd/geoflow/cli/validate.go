package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/flows/engine"
)

func newValidateCmd(g *globals) *cobra.Command {
	var online onlineOptions
	cmd := &cobra.Command{
		Use:   "validate FLOW|DIR...",
		Short: "Check flow files (a directory: its *.yaml and *.yml) and report every problem as file:line:col",
		Long: "Check flow files (a directory: its *.yaml and *.yml) and report every problem as file:line:col.\n\n" +
			"With --database given on the command line, each flow is also checked against that store, as a run checks it\n" +
			"before it starts: a SQL step calling a function the store's database does not have (ST_Union in a\n" +
			"GeoPackage) is refused. Nothing is written to the store (a GeoPackage that does not exist is not created).\n\n" +
			"With --online, each task's server is asked too (no data is fetched): the task's layer must exist, the format\n" +
			"and CRS it asks for be offered, and its bbox meet the extent the server advertises for the layer. A server\n" +
			"that cannot be reached is an error naming the task and the host; --timeout bounds all the servers together.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg := registry()
			bad := 0
			paths, err := flowFiles(args)
			if err != nil {
				return err
			}
			check, done, err := storeCheck(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			onlineOK, onlineDone, err := onlineCheck(cmd, g, online)
			if err != nil {
				return err
			}
			defer onlineDone()
			for _, path := range paths {
				f, err := g.loadFlow(path, reg)
				if err != nil {
					bad++
					var ve *flows.ValidationError
					if errors.As(err, &ve) {
						for _, p := range ve.Problems {
							fmt.Fprintln(g.stderr, g.secrets.String(p.String()))
						}
						continue
					}
					fmt.Fprintf(g.stderr, "%s: %v\n", path, err)
					continue
				}
				if err := check(cmd.Context(), f); err != nil {
					bad++
					fmt.Fprintf(g.stderr, "%s: %s\n", path, g.secrets.String(err.Error()))
					continue
				}
				if !onlineOK(path, f) {
					bad++
					continue
				}
				fmt.Fprintf(g.stdout, "%s: ok (flow %q, %d task%s)\n", path, f.Name, len(f.Tasks), plural(len(f.Tasks)))
			}
			if bad > 0 {
				return &exitError{code: ExitError, err: fmt.Errorf("%d of %d flow files are invalid", bad, len(paths))}
			}
			return nil
		},
	}
	online.flags(cmd)
	return cmd
}

// storeCheck is what validate checks a valid flow with beyond its text: when --database
// was given on the command line, what a run checks before it starts against that store
// (engine.Preflight), else nothing. A GeoPackage that does not exist is not created: the
// check opens a throwaway one, since it asks only what SQLite this build has.
func storeCheck(cmd *cobra.Command, g *globals) (check func(context.Context, *flows.Flow) error, done func(), err error) {
	none := func(context.Context, *flows.Flow) error { return nil }
	if fl := cmd.Flag("database"); fl == nil || !fl.Changed {
		return none, func() {}, nil
	}
	pg, path, err := parseLocation(g.databaseURL())
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() {}
	if _, statErr := os.Stat(path); !pg && errors.Is(statErr, os.ErrNotExist) {
		dir, err := os.MkdirTemp("", "geoflow-validate-")
		if err != nil {
			return nil, nil, err
		}
		cleanup = func() { os.RemoveAll(dir) }
		throwaway := *g
		throwaway.database = filepath.Join(dir, "check.gpkg")
		g = &throwaway
	}
	st, err := openStore(cmd.Context(), g, false)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	log, err := g.logger()
	if err != nil {
		st.Close()
		cleanup()
		return nil, nil, err
	}
	check = func(ctx context.Context, f *flows.Flow) error { return engine.Preflight(ctx, f, stores(st).Tasks, log) }
	return check, func() { st.Close(); cleanup() }, nil
}

// flowFiles expands the directories among args into the flow files they hold (*.yaml
// and *.yml, not recursively, sorted); a directory without any is an error.
func flowFiles(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil || !fi.IsDir() {
			out = append(out, a) // loading it says what is wrong
			continue
		}
		var found []string
		for _, pat := range []string{"*.yaml", "*.yml"} {
			m, _ := filepath.Glob(filepath.Join(a, pat))
			found = append(found, m...)
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%s: a directory without flow files (*.yaml, *.yml)", a)
		}
		sort.Strings(found)
		out = append(out, found...)
	}
	return out, nil
}

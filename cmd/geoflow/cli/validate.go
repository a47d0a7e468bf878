package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"github.com/geoflow/geoflow/flows"
)

func newValidateCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "validate FLOW|DIR...",
		Short: "Check flow files (a directory: its *.yaml and *.yml) and report every problem as file:line:col",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg := registry()
			bad := 0
			paths, err := flowFiles(args)
			if err != nil {
				return err
			}
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
				fmt.Fprintf(g.stdout, "%s: ok (flow %q, %d task%s)\n", path, f.Name, len(f.Tasks), plural(len(f.Tasks)))
			}
			if bad > 0 {
				return &exitError{code: ExitError, err: fmt.Errorf("%d of %d flow files are invalid", bad, len(paths))}
			}
			return nil
		},
	}
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

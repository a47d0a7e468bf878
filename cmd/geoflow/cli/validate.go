package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/geoflow/geoflow/flows"
)

func newValidateCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "validate FLOW...",
		Short: "Check flow files and report every problem as file:line:col",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg := registry()
			bad := 0
			for _, path := range args {
				f, err := loadFlow(path, reg)
				if err != nil {
					bad++
					var ve *flows.ValidationError
					if errors.As(err, &ve) {
						for _, p := range ve.Problems {
							fmt.Fprintln(g.stderr, p.String())
						}
						continue
					}
					fmt.Fprintf(g.stderr, "%s: %v\n", path, err)
					continue
				}
				fmt.Fprintf(g.stdout, "%s: ok (flow %q, %d task%s)\n", path, f.Name, len(f.Tasks), plural(len(f.Tasks)))
			}
			if bad > 0 {
				return &exitError{code: ExitError, err: fmt.Errorf("%d of %d flow files are invalid", bad, len(args))}
			}
			return nil
		},
	}
}

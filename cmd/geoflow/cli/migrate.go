package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func newMigrateCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate up|status",
		Short: "Apply or list geoflow's database migrations",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "up",
		Short: "Create PostGIS when missing and apply pending migrations",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openStore(cmd.Context(), g, false)
			if err != nil {
				return err
			}
			defer st.Close()
			done, err := st.Migrate(cmd.Context())
			if err != nil {
				return err
			}
			if len(done) == 0 {
				fmt.Fprintln(g.stdout, "database is up to date")
			}
			for _, m := range done {
				fmt.Fprintf(g.stdout, "applied %s\n", m.Label())
			}
			return nil
		},
	}, &cobra.Command{
		Use:   "status",
		Short: "List migrations and whether each is applied",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openExisting(cmd.Context(), g, false)
			if err != nil {
				return err
			}
			defer st.Close()
			states, err := st.MigrationStatus(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "VERSION\tNAME\tAPPLIED")
			for _, s := range states {
				at := "pending"
				if s.AppliedAt != nil {
					at = s.AppliedAt.Format("2006-01-02 15:04:05Z07:00")
				}
				version := fmt.Sprintf("%03d", s.Version)
				if s.Line != "" {
					version = s.Line + " " + version
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", version, s.Name, at)
			}
			return tw.Flush()
		},
	})
	return cmd
}

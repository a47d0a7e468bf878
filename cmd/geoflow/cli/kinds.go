package cli

import (
	"github.com/spf13/cobra"

	"github.com/geoflow/geoflow/tasks"
)

// registerKinds registers every task kind. Each kind's package is named here, once.
func registerKinds(r *tasks.Registry) {
}

// addMoreCommands adds the commands of later subsystems (dlq, dev, serve...).
func addMoreCommands(root *cobra.Command, g *globals) {
}

package cli

import (
	"github.com/spf13/cobra"

	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/arcgis"
	"github.com/geoflow/geoflow/tasks/export"
	"github.com/geoflow/geoflow/tasks/imagery"
	"github.com/geoflow/geoflow/tasks/ogcapi"
	"github.com/geoflow/geoflow/tasks/sqltask"
	"github.com/geoflow/geoflow/tasks/tiles"
	"github.com/geoflow/geoflow/tasks/wfs"
)

// registerKinds registers every task kind. Each kind's package is named here, once.
func registerKinds(r *tasks.Registry) {
	w := wfs.Kind()
	w.Inspect, w.Snippet = wfs.Inspect, wfs.Snippet
	r.Register(w)
	o := ogcapi.Kind()
	o.Inspect, o.Snippet = ogcapi.Inspect, ogcapi.Snippet
	r.Register(o)
	a := arcgis.Kind()
	a.Inspect, a.Snippet = arcgis.Inspect, arcgis.Snippet
	r.Register(a)
	r.Register(tiles.Kind())
	r.Register(imagery.Kind())
	r.Register(export.Kind())
	r.Register(sqltask.Kind())
}

// addMoreCommands adds the commands of later subsystems (dlq, dev, serve...).
func addMoreCommands(root *cobra.Command, g *globals) {
	root.AddCommand(newDevCmd(g))
	root.AddCommand(newDLQCmd(g))
	root.AddCommand(newServeCmd(g))
	root.AddCommand(newUICmd(g))
	root.AddCommand(newScheduleCmd(g))
	root.AddCommand(newRunsCmd(g))
	root.AddCommand(newChangesCmd(g))
	root.AddCommand(newExportCmd(g))
	root.AddCommand(newWorkerCmd(g), newWorkersCmd(g))
	root.AddCommand(newDocsCmd())
}

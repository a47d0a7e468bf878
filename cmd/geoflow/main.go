// Command geoflow runs geospatial ETL flows written in YAML.
package main

import (
	"context"
	"os"
	"runtime/debug"
	_ "time/tzdata" // flow timezones must not depend on the host's zoneinfo (minimal images lack it)

	"github.com/geoflow/geoflow/cmd/geoflow/cli"
)

func main() {
	// Harvests stream: the live heap stays small however large the layer, so trading a
	// little of it for fewer collections is cheap. GOGC in the environment still wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	ctx, stop := cli.SignalContext(context.Background())
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Command geoflow runs geospatial ETL flows written in YAML.
package main

import (
	"context"
	"os"

	"github.com/geoflow/geoflow/cmd/geoflow/cli"
)

func main() {
	ctx, stop := cli.SignalContext(context.Background())
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

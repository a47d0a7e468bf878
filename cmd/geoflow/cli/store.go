package cli

import (
	"context"
	"fmt"

	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/postgis"
)

// openStore opens the store the global flags name: the one place the CLI chooses an
// implementation. With migrate, its schema is brought up to date first: any command may
// be the first one run against a database.
func openStore(ctx context.Context, g *globals, migrate bool) (store.Store, error) {
	st, err := postgis.Open(ctx, g.databaseURL(), nil)
	if err != nil {
		return nil, err
	}
	if migrate {
		if _, err := st.Migrate(ctx); err != nil {
			st.Close()
			return nil, fmt.Errorf("migrating the database: %w", err)
		}
	}
	return st, nil
}

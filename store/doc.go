// Package store is the seam between geoflow and where it keeps things: the feature,
// tile and asset tables a flow fills, and geoflow's own bookkeeping (runs, tasks, units,
// dead letters, schedule fires). It states each role as a small interface (Runs, Units
// and UnitTx, FeatureTables, Mirrors, TileStore, AssetStore, DeadLetters, History,
// Fires, Health, the PostgreSQL-only Queue), which the consumers combine into their own
// narrow seams; Store is every role at once, what an implementation provides and a
// command opens. It also states the plain records they exchange, and the typed states of
// runs, tasks and units.
//
// Implementations live below it (store/postgis, store/gpkg) and
// are the only code that imports a database driver. Nothing above this package knows
// which database it talks to: a database failure reaches callers as a *Fault, which says
// whether waiting for the database and trying again may help.
package store

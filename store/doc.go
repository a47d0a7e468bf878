// Package store is the seam between geoflow and where it keeps things: the feature,
// tile and asset tables a flow fills, and geoflow's own bookkeeping (runs, tasks, units,
// dead letters, schedule fires). It states what each consumer needs as small interfaces
// (the runner's RunStore and UnitTx, a task's TaskStore, the triage commands' DeadLetters,
// the history's History, the scheduler's Fires, the server's Health), the plain records
// they exchange, and the typed states of runs, tasks and units.
//
// Implementations live below it (store/postgis; a GeoPackage store next to it later) and
// are the only code that imports a database driver. Nothing above this package knows
// which database it talks to: a database failure reaches callers as a *Fault, which says
// whether waiting for the database and trying again may help.
package store

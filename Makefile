# geoflow: `make demo` and `make test` work on a fresh machine (see README).
GO      ?= go
BIN     := bin/geoflow
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/geoflow/geoflow/cmd/geoflow/cli.Version=$(VERSION)
# PostGIS: $GEOFLOW_TEST_DATABASE_URL / $GEOFLOW_DATABASE_URL, else docker compose, else a
# throwaway Debian cluster started and stopped around the command.
POSTGIS := bash internal/testdb/postgis.sh

.PHONY: build help test demo vet screenshots bench bench-gpkg bench-recovery bench-pgrestart bench-tiles bench-ratelimit bench-vt bench-export bench-chain bench-cpu fuzz clean

## build: bin/geoflow
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/geoflow

## vet: go vet, staticcheck, no unreachable product code (deadcode), functions a reader can hold and imports that point down (make house -check), and no committed file over 1 MB outside the vendored UI assets
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
vet:
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	bash .ci/deadcode
	$(GO) -C .ci/house run . -check ../.. >/dev/null
	bash .ci/bigfiles

## docs: the command reference in docs/cli (Markdown) and docs/man (man pages), generated from the commands' flags
.PHONY: docs
docs:
	$(GO) run ./cmd/geoflow docs --markdown docs/cli --man docs/man

## house: how the code reads: the longest functions, cyclomatic complexity, the widest interface each package takes, the stores' method sets
.PHONY: house
house:
	$(GO) -C .ci/house run . ../..

## help: this list
help:
	@sed -n 's/^## \([a-z-]*\): /\1\t/p' $(firstword $(MAKEFILE_LIST)) | expand -t 18

## test: the whole suite against a real PostGIS it provisions itself
test: vet
	@gdal=$$($(POSTGIS) gdal) && \
	env $$gdal $(POSTGIS) run -- $(GO) test -count=1 -timeout 40m ./...

## demo: a local sample WFS and flows/parcels.yaml end to end, into geoflow-demo.gpkg (no database server); PORT=8090 sets the sample WFS's port (default a free one)
demo: build
	PORT="$(PORT)" bash internal/demo/demo.sh $(BIN)

## bench-vt: the map of a table: vector tiles of 100,000 stored parcels over zoom 10-16 from PostGIS and a GeoPackage, latency p50/p95 by zoom
bench-vt: build
	$(POSTGIS) run --env GEOFLOW_DATABASE_URL -- bash bench/vt.sh $(BIN)

## bench-export: 1,000,000 stored parcels exported to FlatGeobuf and a GeoPackage from each store, geoflow export against ogr2ogr in the same run
bench-export: build
	$(POSTGIS) run --env GEOFLOW_DATABASE_URL -- bash bench/export.sh $(BIN)

## bench-chain: the README's chain (harvest, SQL, export) on PostGIS and a GeoPackage judged by GDAL, a --bbox rerun, and target.srs against ogr2ogr -t_srs
bench-chain: build
	$(POSTGIS) run --env GEOFLOW_DATABASE_URL -- bash bench/chain.sh $(BIN)

## screenshots: the web UI's pages, photographed in headless Chromium into docs/screenshots, with page weight and time to first map draw
screenshots:
	@$(POSTGIS) gdal >/dev/null && $(POSTGIS) run --env GEOFLOW_DATABASE_URL -- $(GO) run ./internal/uishots -out docs/screenshots

## bench: geoflow vs the raw download limit vs ogr2ogr (writes docs/benchmarks.md figures)
bench: build
	$(POSTGIS) run --env GEOFLOW_DATABASE_URL -- bash bench/wfs.sh $(BIN)

## bench-recovery: requests spent by a bbox rerun, a resume after SIGKILL, and dead-letter replay (WFS, OGC API, ArcGIS)
bench-recovery: build
	$(POSTGIS) run --env GEOFLOW_DATABASE_URL -- bash bench/recovery.sh $(BIN)
	SOURCE=ogcapi $(POSTGIS) run --env GEOFLOW_DATABASE_URL -- bash bench/recovery.sh $(BIN)
	SOURCE=arcgis $(POSTGIS) run --env GEOFLOW_DATABASE_URL -- bash bench/recovery.sh $(BIN)

## bench-pgrestart: PostgreSQL restarted (pg_ctl restart -m fast) in the middle of a 100,000-feature harvest
bench-pgrestart: build
	bash bench/pgrestart.sh $(BIN)

## bench-diskfull: the disk under a GeoPackage fills up mid-harvest (a 3 MB tmpfs; needs root): what the run logs, how it ends, then --resume
.PHONY: bench-diskfull
bench-diskfull: build
	bash bench/diskfull.sh $(BIN)

## bench-cpu: the client's CPU per stored feature by stage (decode, hash, encode, write, index, GC) from CPU profiles, GeoJSON and GML into PostGIS and a GeoPackage; FEATURES (1000000), ROUNDS (3), FORMATS, STORES, BEFORE (an older geoflow binary to compare, round by round)
bench-cpu: build
	$(POSTGIS) run --env GEOFLOW_DATABASE_URL -- bash bench/cpu.sh $(BIN)

## bench-gpkg: the GeoPackage store end to end (ogrinfo, GDAL's validator, ogr2ogr into PostGIS, rerun, --bbox, --resume) and against PostGIS
bench-gpkg: build
	$(POSTGIS) run --env GEOFLOW_DATABASE_URL -- bash bench/gpkg.sh $(BIN)

## bench-tiles: tiles per second for 10,000 small tiles vs curl at the same concurrency
bench-tiles:
	$(POSTGIS) run --env GEOFLOW_DATABASE_URL -- $(GO) run ./bench/tiles
	$(POSTGIS) run --env GEOFLOW_DATABASE_URL -- $(GO) run ./bench/tiles -latency 5ms

## bench-ratelimit: goodput of the rate-limit handler vs naive retry strategies, against a slow server, then three geoflow processes on one quota
bench-ratelimit: build
	$(GO) run ./bench/ratelimit
	$(GO) run ./bench/ratelimit -latency 300ms -quota 10 -requests 400 -timeout 300s
	$(POSTGIS) run --env GEOFLOW_DATABASE_URL -- $(GO) run ./bench/sharedquota -geoflow bin/geoflow -features 100000 -quota 5
	$(POSTGIS) run --env GEOFLOW_DATABASE_URL -- $(GO) run ./bench/sharedquota -geoflow bin/geoflow -features 100000 -quota 5 -kill 12s -modes shared

## bench-signin: 300 wrong tokens sent to geoflow ui --token as fast as one client can: the answers, the log lines, then a 4 MB body and /metrics without the token
.PHONY: bench-signin
bench-signin: build
	$(GO) run ./bench/signin -geoflow $(BIN)

## bench-pool: distributed runs on a pool of geoflow worker processes: 3 workers vs a local run (100,000 features), one SIGKILLed, the starting process SIGKILLed (a worker adopts the run), a quota-limited host, scaling 1-3 workers against 200 ms answers
.PHONY: bench-pool
bench-pool: build
	$(POSTGIS) run --env GEOFLOW_DATABASE_URL -- $(GO) run ./bench/pool -geoflow bin/geoflow

## bench-limits: peak heap of the feature readers fed hostile responses, with the default limits
.PHONY: bench-limits
bench-limits:
	$(GO) run ./bench/limits

## bench-memory: peak RSS of a run harvesting 4 features of 4.99 million vertices at once, under the memory budget (default, then 512MiB)
.PHONY: bench-memory
bench-memory: build
	$(POSTGIS) run --env GEOFLOW_DATABASE_URL -- $(GO) run ./bench/memory -geoflow $(BIN)
	$(POSTGIS) run --env GEOFLOW_DATABASE_URL -- $(GO) run ./bench/memory -geoflow $(BIN) -- --memory-limit 512MiB

## bench-mapserver: PostgreSQL restarted under a harvest from a real MapServer WFS that reads from it
.PHONY: bench-mapserver
bench-mapserver: build
	bash bench/mapserver/pgrestart.sh $(BIN)

## bench-ogcapi: a real MapServer 8 OGC API - Features over PostGIS, harvested by geoflow and by ogr2ogr
.PHONY: bench-ogcapi
bench-ogcapi: build
	bash bench/mapserver/ogcapi.sh $(BIN)

## bench-arcgis: 100,000 parcels from the sample ArcGIS layer (maxRecordCount 1000, id lists capped, 5% faults) against the source
.PHONY: bench-arcgis
bench-arcgis: build
	$(POSTGIS) run --env GEOFLOW_DATABASE_URL -- bash bench/arcgis.sh $(BIN)

## bench-mirror: a 100,000-parcel mirror run with 1% changed upstream, against a plain append run (PostGIS and GeoPackage)
.PHONY: bench-mirror
bench-mirror: build
	$(POSTGIS) run --env GEOFLOW_DATABASE_URL -- bash bench/mirror.sh $(BIN)
	GEOFLOW_DATABASE_URL=$$(mktemp -d)/bench-mirror.gpkg bash bench/mirror.sh $(BIN)

## bench-hostile: geoflow against servers that misbehave on purpose (omitted features, lying counts, endless next links and transfer limits, phantom ids, giant features, a broken ring, a full disk), each cut off after 150 s; ONLY=3,4 for some rows, HOSTILE_FLAGS for more
.PHONY: bench-hostile
bench-hostile: build
	$(POSTGIS) run --env GEOFLOW_DATABASE_URL -- $(GO) run ./bench/hostile -geoflow $(BIN)$(if $(ONLY), -only $(ONLY)) $(HOSTILE_FLAGS)

## fuzz: run every fuzz target for FUZZTIME each (default 30s)
FUZZTIME ?= 30s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

## clean: remove bin/
clean:
	rm -rf bin

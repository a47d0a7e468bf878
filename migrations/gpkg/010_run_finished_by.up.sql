-- Who follows a run to its end when it is not the process that started it, as in
-- PostgreSQL's 014. A GeoPackage has no pool of workers, so nothing adopts its runs and
-- both stay NULL; the columns keep the two stores' run records alike.
ALTER TABLE geoflow_runs ADD COLUMN finished_by TEXT;
ALTER TABLE geoflow_runs ADD COLUMN adopted_at TEXT;

-- Features a unit skipped because this same run had stored them already (as in
-- PostgreSQL's 019): of features_skipped, those returned more than once within the run.
ALTER TABLE geoflow_units ADD COLUMN features_overlap INTEGER NOT NULL DEFAULT 0;

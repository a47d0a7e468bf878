-- Features a unit skipped because this same run had stored them already: returned more
-- than once within the run (a feature on the edge of two tiles, or pages that overlap),
-- not stored by an earlier run. features_skipped keeps counting them too: of it,
-- features_overlap were this run's own, the rest were already present before the run.
ALTER TABLE geoflow_units ADD COLUMN features_overlap bigint NOT NULL DEFAULT 0;

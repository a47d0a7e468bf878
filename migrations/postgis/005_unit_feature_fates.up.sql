-- What became of a unit's features besides inserted, skipped and updated: refused by the
-- decoder (the unit is then dead-lettered as rejected), and skipped because a row with
-- the same payload and another feature id is stored (append mode keys rows on the
-- payload, so such features are one row; the completeness check counts them).
ALTER TABLE geoflow_units ADD COLUMN features_rejected bigint NOT NULL DEFAULT 0,
    ADD COLUMN features_merged bigint NOT NULL DEFAULT 0;

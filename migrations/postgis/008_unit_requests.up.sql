-- The HTTP requests each unit's execution made, retries included, for the web UI's unit
-- details (0 for units recorded before it was counted).
ALTER TABLE geoflow_units ADD COLUMN requests bigint NOT NULL DEFAULT 0;

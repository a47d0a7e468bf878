-- A run records the flow it ran: its resolved text and a hash of it, so that --resume and
-- dlq replay run the flow that failed rather than whatever the file holds by then.
ALTER TABLE geoflow_runs ADD COLUMN flow_text text, ADD COLUMN flow_hash text;

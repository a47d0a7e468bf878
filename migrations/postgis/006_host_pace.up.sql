-- Pacing shared by every process harvesting from one host (issue 13): a GCRA schedule
-- per host. tat ("theoretical arrival time") is when the next send slot is free; a
-- process books n slots with one atomic UPDATE that moves it n intervals on, so the
-- processes' requests interleave at the pace of the host's quota. paused_until holds
-- every process back after a 429 any of them received. Nothing here belongs to a
-- process: one that dies strands at most the slots of its last booking, which pass.
-- Times are the database's clock (clock_timestamp()); processes speak in durations.

CREATE TABLE geoflow_host_pace (
    host         text             PRIMARY KEY,  -- scheme://host:port
    tat          timestamptz      NOT NULL,
    paused_until timestamptz      NOT NULL DEFAULT '-infinity',
    interval_s   double precision NOT NULL DEFAULT 0, -- the last booking's spacing, for operators
    updated_at   timestamptz      NOT NULL DEFAULT clock_timestamp()
);

-- Geoflow's bookkeeping out of the GIS user's way. The store runs its migrations with the
-- bookkeeping schema first in the search_path (geoflow unless --schema names another),
-- so current_schema() is that schema, and the unqualified names below resolve to it.
--
-- 1. The bookkeeping tables, and River's (the job queue of distributed runs: its tables
--    with their sequences, indexes and triggers, its enum type and its function), leave
--    public for that schema. The data tables stay where they are. Each object moves only
--    when it is in public and not yet in the schema, so this is safe to run again.
-- 2. The bookkeeping's geometries (a run's area, a unit's and a dead letter's box, a
--    deleted feature's geometry in the changes, the export task's record's footprint) become EWKB in bytea, values kept, so that
--    geometry_columns, which QGIS and ogrinfo list as layers, names none of them.
-- 3. Every data table geoflow wrote (a geom geometry and a bytea gf_payload_hash) that has
--    no primary key gets fid, an identity bigint primary key, which GDAL and QGIS take as
--    the feature id (gf_fid where the data already has a column named fid). Adding it
--    rewrites the table: on a big table this step takes a while.
DO $$
DECLARE
    target text := current_schema();
    obj text;
    fn regprocedure;
BEGIN
    IF target IS NOT NULL AND target <> 'public' THEN
        FOREACH obj IN ARRAY ARRAY[
            'geoflow_runs', 'geoflow_run_tasks', 'geoflow_units', 'geoflow_dlq', 'geoflow_schedule_fires',
            'geoflow_merged', 'geoflow_host_pace', 'geoflow_seen', 'geoflow_changes', 'geoflow_workers',
            'geoflow_absent', 'geoflow_table_stamps', 'geoflow_schema_migrations', 'geoflow_exports',
            'river_migration', 'river_job', 'river_leader', 'river_queue', 'river_notification',
            'river_client', 'river_client_queue']
        LOOP
            IF to_regclass(format('public.%I', obj)) IS NOT NULL
               AND to_regclass(format('%I.%I', target, obj)) IS NULL THEN
                EXECUTE format('ALTER TABLE public.%I SET SCHEMA %I', obj, target);
            END IF;
        END LOOP;
        IF to_regtype('public.river_job_state') IS NOT NULL
           AND to_regtype(format('%I.river_job_state', target)) IS NULL THEN
            EXECUTE format('ALTER TYPE public.river_job_state SET SCHEMA %I', target);
        END IF;
        FOR fn IN
            SELECT p.oid::regprocedure FROM pg_proc p
            WHERE p.pronamespace = 'public'::regnamespace
              AND p.proname IN ('river_job_state_in_bitmask', 'river_job_notify')
              AND NOT EXISTS (SELECT 1 FROM pg_proc q
                              WHERE q.pronamespace = target::regnamespace AND q.proname = p.proname)
        LOOP
            EXECUTE format('ALTER FUNCTION %s SET SCHEMA %I', fn, target);
        END LOOP;
    END IF;
END $$;

-- 2. EWKB instead of geometry, where the column is still a geometry. The units' and dead
-- letters' spatial indexes become indexes on the decoded box, which their filters use.
DROP INDEX IF EXISTS geoflow_units_bbox_idx;
DROP INDEX IF EXISTS geoflow_dlq_bbox_idx;
DROP INDEX IF EXISTS geoflow_exports_footprint_idx;
DO $$
DECLARE
    col record;
BEGIN
    FOR col IN
        SELECT c.oid::regclass AS tbl, a.attname
        FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
        WHERE c.relnamespace = current_schema()::regnamespace
          AND (c.relname, a.attname) IN (('geoflow_runs', 'area'), ('geoflow_units', 'bbox'),
                                         ('geoflow_dlq', 'bbox'), ('geoflow_changes', 'geom'),
                                         ('geoflow_exports', 'footprint'))
          AND NOT a.attisdropped AND format_type(a.atttypid, NULL) = 'geometry'
    LOOP
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I TYPE bytea USING ST_AsEWKB(%I)', col.tbl, col.attname, col.attname);
    END LOOP;
END $$;
CREATE INDEX IF NOT EXISTS geoflow_units_bbox_idx ON geoflow_units USING gist (ST_GeomFromEWKB(bbox));
CREATE INDEX IF NOT EXISTS geoflow_dlq_bbox_idx ON geoflow_dlq USING gist (ST_GeomFromEWKB(bbox));

-- 3. An integer primary key on the data tables that have none.
DO $$
DECLARE
    t record;
BEGIN
    FOR t IN
        SELECT c.oid::regclass AS tbl,
               CASE WHEN bool_or(a.attname = 'fid') THEN 'gf_fid' ELSE 'fid' END AS fid
        FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace
        JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
        WHERE c.relkind = 'r' AND NOT c.relispartition
          AND n.nspname NOT IN ('information_schema', 'pg_catalog', 'pg_toast') AND n.nspname NOT LIKE 'pg\_%'
          AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conrelid = c.oid AND k.contype = 'p')
          -- only tables this role may alter: another role's copy of a data table is left as
          -- it is rather than failing the migration for everyone
          AND pg_has_role(c.relowner, 'MEMBER')
        GROUP BY c.oid
        HAVING bool_or(a.attname = 'gf_payload_hash' AND a.atttypid = 'bytea'::regtype)
           AND bool_or(a.attname = 'geom' AND format_type(a.atttypid, NULL) = 'geometry')
    LOOP
        EXECUTE format('ALTER TABLE %s ADD COLUMN %I bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY', t.tbl, t.fid);
    END LOOP;
END $$;

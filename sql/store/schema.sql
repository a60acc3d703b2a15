-- Schema bookkeeping. Each file under sql/schema/ is applied once, in order, and recorded here.

-- name: create_schema_version
create table if not exists schema_version (
    version     integer primary key,
    name        varchar not null,
    applied_at  timestamp not null default current_timestamp
);

-- name: current_version
select coalesce(max(version), 0) as version from schema_version;

-- name: record_version
insert into schema_version (version, name) values ($version, $name);

-- name: record_versions
-- A new store, given the latest schema at once: every version, as if applied in order.
insert into schema_version (version, name)
select unnest($versions::integer[]), unnest($names::varchar[]);

-- name: schema_state
-- Whether the file has a schema_version table, and how many tables it has.
select count(*) filter (where table_name = 'schema_version') > 0 as has_version,
       count(*) as n_tables
from information_schema.tables
where table_schema = 'main';

-- The queries below write sql/schema/fresh.sql (tools/write_fresh_schema.py) from a database the
-- migrations built.

-- name: user_enums
-- Each ENUM type the schema defines, with its values.
select type_name, labels from duckdb_types()
where logical_type = 'ENUM' and not internal
order by type_name;

-- name: user_tables
-- The tables whose rows a migration may seed (not schema_version, recorded apart).
select table_name from duckdb_tables() where table_name <> 'schema_version' order by table_name;

-- name: table_rows
-- Every row of {table} (quoted from user_tables).
select * from {table};

-- name: export_schema
-- DuckDB's own schema.sql (and data) of this database into {folder}, a literal path.
export database {folder};

-- name: store_id
-- The store's identity (schema 9 on; sql/schema/009_store_identity.sql). Output: store_id.
select store_id from store_info;

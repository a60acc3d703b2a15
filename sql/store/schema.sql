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

-- name: count_tables
select count(*) as n from information_schema.tables where table_schema = 'main';

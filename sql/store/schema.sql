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

-- name: has_table
select count(*) as n
from information_schema.tables
where table_schema = 'main' and table_name = $table;

-- name: count_tables
select count(*) as n from information_schema.tables where table_schema = 'main';

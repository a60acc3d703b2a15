-- Schema 9: the store's identity, a random UUID drawn when the store is created (or upgraded
-- to this version). An export records it beside every run, so that the runs of two stores,
-- whose run ids overlap, never replace each other in one export folder.
create table store_info (store_id varchar not null);
insert into store_info select cast(uuid() as varchar);

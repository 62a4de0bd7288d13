-- The service's own database and role, beside Temporal's in the same PostgreSQL 16 server.
create role collections login password 'collections';
create database collections owner collections;

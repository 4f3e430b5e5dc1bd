-- Run once by the postgres image when its data volume is first initialised
-- (docker-compose.yml mounts this into /docker-entrypoint-initdb.d/).
-- The application database `leadline` is created through POSTGRES_DB; the
-- schema registry keeps its schemas in a database of its own.
CREATE DATABASE leadline_registry;

-- The raw-PostgreSQL baseline for the server's redemptions: the two tables the classic
-- transaction needs, filled with active tickets '1'..'N'. Run again before each pgbench run
-- (it starts over):
--   psql URL -v ON_ERROR_STOP=1 -v tickets=1000000 -f tools/pgbench/setup.sql
-- then tools/pgbench/redeem.sql (see there). scripts/bench-server.sh does both.
\if :{?tickets}
\else
\set tickets 1000000
\endif
SET client_min_messages = warning;

DROP TABLE IF EXISTS bench_redemptions;
DROP TABLE IF EXISTS bench_tickets;
DROP SEQUENCE IF EXISTS bench_hot_seq;

CREATE TABLE bench_tickets (tid text PRIMARY KEY, status text NOT NULL);
CREATE TABLE bench_redemptions (
    redemption_id text PRIMARY KEY,
    tid text NOT NULL,
    at timestamptz NOT NULL
);
-- The hot variant's shared request counter: request k goes to ticket k / group + 1, as in
-- `gatemesh bench server --mode hot`.
CREATE SEQUENCE bench_hot_seq START 0 MINVALUE 0;

INSERT INTO bench_tickets (tid, status)
SELECT i::text, 'active' FROM generate_series(1, :tickets) AS i;

VACUUM ANALYZE bench_tickets, bench_redemptions;

-- The classic redemption transaction, for pgbench, after tools/pgbench/setup.sql:
-- record the redemption under its (random) id, retries doing nothing, and mark the ticket
-- used only if it is still active.
--
--   distinct: every transaction a different ticket (a per-client counter interleaved
--             across clients, so no ticket is asked twice):
--     pgbench -n -M prepared -c 16 -j 2 -T 10 -D hot=0 -D clients=16 -D n=0 \
--       -f tools/pgbench/redeem.sql URL
--   hot:      all clients race on one ticket at a time, `group` transactions each (a shared
--             sequence hands out the requests, as the gatemesh bench's shared counter does):
--     pgbench -n -M prepared -c 16 -j 2 -T 10 -D hot=1 -D group=40 \
--       -f tools/pgbench/redeem.sql URL
--
-- -D clients must equal -c. Tickets '1'..'N' exist (setup.sql's `tickets`); a distinct run
-- needs N above the transactions it makes.
\set rid random(1, 9000000000000000000)
\if :hot
BEGIN;
INSERT INTO bench_redemptions (redemption_id, tid, at)
    VALUES (:rid, (nextval('bench_hot_seq') / :group + 1)::text, now())
    ON CONFLICT DO NOTHING RETURNING tid \gset
UPDATE bench_tickets SET status = 'used' WHERE tid = :tid::text AND status = 'active';
END;
\else
\set n :n + 1
\set tid (:n - 1) * :clients + :client_id + 1
BEGIN;
INSERT INTO bench_redemptions (redemption_id, tid, at)
    VALUES (:rid, :tid::text, now())
    ON CONFLICT DO NOTHING;
UPDATE bench_tickets SET status = 'used' WHERE tid = :tid::text AND status = 'active';
END;
\endif

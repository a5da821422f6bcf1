-- Runs the archive could not store: PostgreSQL refused the document itself (a value out
-- of its range, a constraint), so writing it again would fail for ever. Each is kept here
-- with why, so that one document never holds up the backlog and nothing of it is lost
-- when its Redis keys expire. `doc` is the snapshot the write was given, as JSON text
-- (JSON.stringify escapes what text cannot hold). A later write of the run deletes its row.
CREATE TABLE rein.dead_letters (
  run_id text PRIMARY KEY,
  tenant_id text NOT NULL,
  revision bigint[] NOT NULL,
  error text NOT NULL,
  sqlstate text,
  doc text NOT NULL,
  failed_at timestamptz NOT NULL DEFAULT now()
);

-- The archive of finished runs (issue 27): written once per run when it reaches a
-- terminal status, read when its Redis keys are gone. Everything lives in the `rein`
-- schema so the archive can share a database with other things.
--
-- Index plan, not partitioning. Reads are by run id (a primary-key probe: four or five
-- B-tree levels at tens of millions of rows) and by tenant and time (the composite
-- indexes below, each ending in (created_at DESC, id DESC) so a page is one index range
-- scan whatever the table's size). Partitioning runs by month would make the id read
-- probe every partition (run ids are random UUIDs, not time-ordered, and a unique index
-- must include the partition key), and needs partitions created ahead of time; what it
-- buys is cheap retention (DROP of a month), and retention is off by default. If an
-- operator's retention deletes turn out to hurt (to be measured by the bench), a later
-- migration converts these tables to monthly partitions keyed by created_at.
--
-- pg_trgm is a trusted extension (PostgreSQL 13+): a database owner may create it.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- One row per finished run. `doc` is the run record exactly as Redis held it; the other
-- columns are copies of its fields for filtering and aggregating. Documents are `json`,
-- not `jsonb`: json keeps the text as written (key order included), so an archived
-- event's payload reads back byte for byte as Redis served it; nothing queries inside them.
CREATE TABLE rein.runs (
  id text PRIMARY KEY,
  tenant_id text NOT NULL,
  user_id text NOT NULL,
  agent text NOT NULL,
  status text NOT NULL,
  reason text,
  session_id text,
  app_version text,
  input text NOT NULL,
  final_answer text,
  -- What text search looks in (inputs and final answers): a trigram index serves
  -- ILIKE '%…%' for any script, Chinese included (no word splitting needed).
  search_text text GENERATED ALWAYS AS (input || E'\n' || coalesce(final_answer, '')) STORED,
  steps integer NOT NULL,
  prompt_tokens bigint NOT NULL,
  completion_tokens bigint NOT NULL,
  total_tokens bigint NOT NULL,
  cost_usd double precision NOT NULL,
  -- finished_at - created_at: the run's wall time, queued and parked time included (the trace's elapsedMs).
  duration_ms bigint NOT NULL,
  created_at timestamptz NOT NULL,
  finished_at timestamptz NOT NULL,
  archived_at timestamptz NOT NULL DEFAULT now(),
  -- Which read of the run this is (store/hot-runs.ts, revisionOf): a later one replaces it, an equal or older one writes nothing.
  revision bigint[] NOT NULL,
  doc json NOT NULL,
  compensation json
);
CREATE INDEX runs_tenant_time ON rein.runs (tenant_id, created_at DESC, id DESC);
CREATE INDEX runs_tenant_user_time ON rein.runs (tenant_id, user_id, created_at DESC, id DESC);
CREATE INDEX runs_tenant_agent_time ON rein.runs (tenant_id, agent, created_at DESC, id DESC);
CREATE INDEX runs_tenant_status_time ON rein.runs (tenant_id, status, created_at DESC, id DESC);
-- Retention (REIN_ARCHIVE_RETENTION_DAYS) deletes by age across tenants.
CREATE INDEX runs_created_at ON rein.runs (created_at);
CREATE INDEX runs_search ON rein.runs USING gin (search_text gin_trgm_ops);

-- A committed step, without its tool calls (those are rows of tool_calls).
CREATE TABLE rein.steps (
  run_id text NOT NULL REFERENCES rein.runs (id) ON DELETE CASCADE,
  index integer NOT NULL,
  tenant_id text NOT NULL,
  model text NOT NULL,
  prompt_tokens bigint NOT NULL,
  completion_tokens bigint NOT NULL,
  cost_usd double precision NOT NULL,
  duration_ms double precision NOT NULL,
  finished_at timestamptz NOT NULL,
  doc json NOT NULL,
  PRIMARY KEY (run_id, index)
);

-- A step's tool call: its arguments and observation as columns, the rest of the record in `doc`.
CREATE TABLE rein.tool_calls (
  run_id text NOT NULL,
  step integer NOT NULL,
  position integer NOT NULL,
  tenant_id text NOT NULL,
  name text NOT NULL,
  outcome text NOT NULL,
  approval_id text,
  arguments json,
  observation text NOT NULL,
  doc json NOT NULL,
  PRIMARY KEY (run_id, step, position),
  FOREIGN KEY (run_id, step) REFERENCES rein.steps (run_id, index) ON DELETE CASCADE
);

-- The run's approvals and their decisions (GET /v1/approvals reads them by tenant and time).
CREATE TABLE rein.approvals (
  id text PRIMARY KEY,
  run_id text NOT NULL REFERENCES rein.runs (id) ON DELETE CASCADE,
  tenant_id text NOT NULL,
  status text NOT NULL,
  tool_name text NOT NULL,
  created_at timestamptz NOT NULL,
  decided_at timestamptz,
  doc json NOT NULL
);
CREATE INDEX approvals_run ON rein.approvals (run_id);
CREATE INDEX approvals_tenant_time ON rein.approvals (tenant_id, created_at DESC, id DESC);
CREATE INDEX approvals_tenant_status_time ON rein.approvals (tenant_id, status, created_at DESC, id DESC);

-- The run's event stream, keyed by the Redis stream entry id (ms-seq), so that an SSE
-- reader's Last-Event-ID means the same before and after the Redis keys are gone.
CREATE TABLE rein.events (
  run_id text NOT NULL REFERENCES rein.runs (id) ON DELETE CASCADE,
  ms bigint NOT NULL,
  seq bigint NOT NULL,
  tenant_id text NOT NULL,
  type text NOT NULL,
  doc json NOT NULL,
  PRIMARY KEY (run_id, ms, seq)
);

-- The decision log beyond Redis's hot retention: store/audit-log.ts copies a tenant's
-- entries here before it trims them from Redis. Each entry is kept exactly as it was
-- stored (its JSON text), so the chain verifies over the same bytes wherever it is read.
CREATE TABLE rein.audit (
  tenant_id text NOT NULL,
  seq bigint NOT NULL,
  at timestamptz NOT NULL,
  entry text NOT NULL,
  PRIMARY KEY (tenant_id, seq)
);
CREATE INDEX audit_by_time ON rein.audit (tenant_id, at);

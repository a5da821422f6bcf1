-- The decision log's head, copied out of Redis on a schedule (the workers' housekeeping):
-- a log whose entries were removed and whose head was rewound in Redis no longer holds the
-- last checkpoint, which verify and the checkpoint pass both notice.
CREATE TABLE rein.audit_checkpoints (
  tenant_id text NOT NULL,
  seq bigint NOT NULL,
  hash text NOT NULL,
  at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, seq)
);

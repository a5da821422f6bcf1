-- The LangGraph store's items when the archive is configured: per tenant and scope (the
-- tenant's shared space, or one user's), a namespace and a key. value_text is the value's
-- JSON, lower-cased, for text queries through a trigram index (as the archive's search).
CREATE TABLE rein.store_items (
  tenant_id text NOT NULL,
  scope text NOT NULL,
  namespace text[] NOT NULL,
  key text NOT NULL,
  value jsonb NOT NULL,
  value_text text NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  ttl_minutes double precision,
  expires_at timestamptz,
  PRIMARY KEY (tenant_id, scope, namespace, key)
);
CREATE INDEX store_items_text ON rein.store_items USING gin (value_text gin_trgm_ops);
CREATE INDEX store_items_expiry ON rein.store_items (expires_at) WHERE expires_at IS NOT NULL;

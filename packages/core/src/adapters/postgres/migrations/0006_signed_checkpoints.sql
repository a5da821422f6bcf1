-- Checkpoints signed with the fleet's audit key (REIN_AUDIT_SIGNING_KEY): a copy of a
-- tenant's chain head that an operator who rewrites Redis and PostgreSQL together cannot
-- forge without the key. Unsigned checkpoints (no key configured) keep both columns null.
ALTER TABLE rein.audit_checkpoints ADD COLUMN key_id text, ADD COLUMN signature text;

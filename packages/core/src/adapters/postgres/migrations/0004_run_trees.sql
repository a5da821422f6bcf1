-- A run's place in its tree as Redis held it (its `children` and `tree` hashes): the
-- sub-agent runs it started and what each descendant spent, so that a run read after hot
-- retention answers `children` and `treeUsage` as before. NULL: not a parent, or archived
-- before this column existed.
ALTER TABLE rein.runs ADD COLUMN tree json;

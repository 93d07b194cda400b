-- Contexts no decision refers to are deleted when the audit is pruned
-- (docs/retention.md, "Access decisions"); this index finds a context's
-- decisions without reading the table.
CREATE INDEX platform_access_decisions_context ON platform_access_decisions(context_id);

-- Compatibility verdicts (spec 2, "Project level", "Errors"): whether this
-- server can run each project's published definitions. report is the
-- last scan's JSON; times are Unix milliseconds (UTC).
CREATE TABLE platform_compatibility (
	project_id   TEXT PRIMARY KEY REFERENCES platform_projects(id),
	verdict      TEXT NOT NULL CHECK (verdict IN ('compatible', 'restricted')),
	report       TEXT NOT NULL,
	checked_at   INTEGER NOT NULL,
	next_scan_at INTEGER NOT NULL
);
CREATE INDEX platform_compatibility_due ON platform_compatibility(next_scan_at);

-- A tool call made inside a subagent (Claude's Task tool) names the call
-- that started the subagent, so tool observations nest as the agent ran
-- them (docs/bridge-api.md "Reads"). NULL for the main agent's calls.
ALTER TABLE bridge_tools ADD COLUMN parent_call_id TEXT;

"""The triage orchestrator: inbox to notes, decisions, human-approved drafts, send, done."""

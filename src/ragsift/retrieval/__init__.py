"""Retrieval logic (pure functions) and its orchestration (the service)."""

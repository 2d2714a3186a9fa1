"""Request ids shared by logs and traces, JSON logs, and OpenTelemetry spans (all optional)."""

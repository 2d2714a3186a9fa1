"""Logs, traces and progress lines (tracing off by default)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ragsift.config.concern import Concern


class ObservabilitySettings(Concern):
    """Observability."""

    log_format: Literal["text", "json"] = Field(
        default="text", description="json: one JSON object per log line, with the request id"
    )
    otel_exporter: Literal["none", "otlp", "console"] = Field(
        default="none", description="OpenTelemetry spans of each retrieval and its stages "
        "(the `otel` extra): otlp over HTTP, or console"
    )
    otel_endpoint: str | None = Field(
        default=None, description="OTLP traces endpoint; default: OTEL_EXPORTER_OTLP_ENDPOINT "
        "or http://localhost:4318/v1/traces"
    )
    # `ragsift eval` progress when stderr is not a terminal (a log): one line per interval
    progress_interval_s: float = Field(
        default=10.0, gt=0, description="seconds between progress lines of `ragsift eval` "
        "in a log (stderr not a terminal)",
    )
    progress_percent_step: float = Field(
        default=0.0, ge=0, le=100, description="also a progress line every this many percent "
        "of a task (0: by time only)",
    )

"""Prometheus metrics of one app: requests per route, retrieval stages, degradations, ingestion."""

from __future__ import annotations

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from ragsift.domain.trace import RetrievalTrace

_HTTP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_STAGE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)


class ApiMetrics:
    """Counters and histograms in a registry of their own (one per app, never the global one)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.key_requests = Counter(
            "ragsift_key_requests", "Requests per API key name and outcome (ok, forbidden, "
            "rate_limited, busy); `-` counts requests with a missing or bad key",
            ["key", "outcome"], registry=self.registry,
        )
        self.requests = Counter(
            "ragsift_http_requests", "HTTP requests by method, route template and status",
            ["method", "route", "status"], registry=self.registry,
        )
        self.latency = Histogram(
            "ragsift_http_request_duration_seconds", "HTTP request latency by route template",
            ["method", "route"], buckets=_HTTP_BUCKETS, registry=self.registry,
        )
        self.stages = Histogram(
            "ragsift_retrieval_stage_duration_seconds",
            "Retrieval stage latency, from the trace's timings", ["stage"],
            buckets=_STAGE_BUCKETS, registry=self.registry,
        )
        self.degradations = Counter(
            "ragsift_retrieval_degradations", "Retrieval stages that failed while the request "
            "went on, by degradation code", ["code"], registry=self.registry,
        )
        self.documents = Counter(
            "ragsift_ingestion_documents", "Documents the background worker finished, by status",
            ["status"], registry=self.registry,
        )
        self.running = Gauge(
            "ragsift_http_requests_running", "Requests running now per limited route class "
            "(search, chat, upload); at RAGSIFT_MAX_CONCURRENT_* more are refused with 503",
            ["route_class"], registry=self.registry,
        )

    def observe_key(self, key_name: str, outcome: str) -> None:
        """One request authenticated by a key (by its name, never its secret)."""
        self.key_requests.labels(key_name, outcome).inc()

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        """Count one request and record its latency."""
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(method, route).observe(seconds)

    def observe_retrieval(self, trace: RetrievalTrace) -> None:
        """Record every stage timing and degradation of one retrieval."""
        for stage, milliseconds in trace.timings_ms.items():
            self.stages.labels(stage).observe(milliseconds / 1000)
        for degradation in trace.degradations:
            self.degradations.labels(degradation.code).inc()

    def observe_running(self, route_class: str, running: int) -> None:
        """The number of requests of a limited route class running now."""
        self.running.labels(route_class).set(running)

    def observe_document(self, status: str) -> None:
        """Count one document the worker finished (READY or FAILED)."""
        self.documents.labels(status).inc()

    def render(self) -> tuple[bytes, str]:
        """The text exposition format and its content type."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST

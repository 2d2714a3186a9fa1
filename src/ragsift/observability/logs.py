"""JSON log lines (RAGSIFT_LOG_FORMAT=json): one object per line, with the request id."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

from ragsift.observability.context import bound_request_id

# uvicorn's `color_message` repeats the message with terminal colours
_RESERVED = frozenset(vars(logging.makeLogRecord({}))) | {"color_message"}


class JsonFormatter(logging.Formatter):
    """time, level, logger, message, request_id (when bound), exception, and extra fields."""

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = getattr(record, "request_id", None) or bound_request_id()
        if request_id:
            payload["request_id"] = request_id
        if record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        for key, value in vars(record).items():
            if key not in _RESERVED and key not in payload and not key.startswith("_"):
                payload[key] = value if isinstance(value, (str, int, float, bool)) else str(value)
        return json.dumps(payload, ensure_ascii=False)


def configure_logging(log_format: str) -> None:
    """Send the root logger's records to stderr as JSON lines (format "json"); "text"
    leaves logging as it is."""
    if log_format != "json":
        return
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers = [handler]
    # uvicorn's loggers carry their own handlers: route them through this one
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        named = logging.getLogger(name)
        named.handlers = []
        named.propagate = True

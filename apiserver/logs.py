"""Structured logs (structlog): key=value on a terminal, JSON with ``--logging-format=json``.
Never log a bearer token, a private key or a Secret's data."""

from __future__ import annotations

import logging
import sys

import orjson
import structlog

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR}


_request_log = True


def request_log_enabled() -> bool:
    """Whether the per-request line (level info) is written: callers skip building it."""
    return _request_log


def _orjson(obj: object, **_: object) -> str:
    return orjson.dumps(obj, default=str).decode()


def configure(fmt: str = "text", level: str = "info") -> None:
    """Route structlog and the standard library's logging to stderr in one format."""
    global _request_log
    lvl = _LEVELS.get(level, logging.INFO)
    _request_log = lvl <= logging.INFO
    # key=value and JSON renderers: one line per event, cheap enough for a line per request
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer(serializer=_orjson) if fmt == "json"
        else structlog.processors.KeyValueRenderer(
            key_order=["timestamp", "level", "event"], drop_missing=True))
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[*shared, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        processor=renderer, foreign_pre_chain=shared))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(lvl)
    # aiohttp's access log duplicates our per-request line.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)

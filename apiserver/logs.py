"""Structured logs (structlog): key=value on a terminal, JSON with ``--logging-format=json``.
Never log a bearer token, a private key or a Secret's data."""

from __future__ import annotations

import datetime
import logging
import sys
import time
from typing import Any

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


class _UtcStamp:
    """``TimeStamper(fmt="iso", utc=True)`` at the request line's rate: the date and time to
    the second are formatted once a second, the microseconds appended (always six digits)."""

    __slots__ = ("_cache",)

    def __init__(self) -> None:
        self._cache = (-1, "")  # (second, its text), replaced as one (threads log too)

    def __call__(self, _: Any, __: str, event_dict: Any) -> Any:
        now = time.time()
        sec = int(now)
        cached, text = self._cache
        if sec != cached:
            text = datetime.datetime.fromtimestamp(sec, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S")
            self._cache = (sec, text)
        event_dict["timestamp"] = f"{text}.{int((now - sec) * 1e6):06d}Z"
        return event_dict


_FIRST = ("timestamp", "level", "event")


def _render_kv(_: Any, __: str, event_dict: Any) -> str:
    """``KeyValueRenderer(key_order=[timestamp, level, event], drop_missing=True)``'s output,
    with less per-call overhead: those three first (when not None), then the rest as given,
    ``key=repr(value)``."""
    parts = []
    for key in _FIRST:
        value = event_dict.pop(key, None)
        if value is not None:
            parts.append(f"{key}={value!r}")
    trace = event_dict.pop("exception", None)
    parts += [f"{k}={v!r}" for k, v in event_dict.items()]
    line = " ".join(parts)
    # A traceback (``format_exc_info``) follows its line as written, not as one repr.
    return f"{line}\n{trace.rstrip()}" if trace else line


def configure(fmt: str = "text", level: str = "info") -> None:
    """Route structlog and the standard library's logging to stderr in one format."""
    global _request_log
    lvl = _LEVELS.get(level, logging.INFO)
    _request_log = lvl <= logging.INFO
    # key=value and JSON renderers: one line per event, cheap enough for a line per request
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer(serializer=_orjson) if fmt == "json"
        else _render_kv)
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        _UtcStamp(),
        # exc_info (log.exception) becomes the formatted traceback, key "exception"
        structlog.processors.format_exc_info,
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
    server_log = logging.getLogger("aiohttp.server")
    if not any(isinstance(f, _BadRequestFilter) for f in server_log.filters):
        server_log.addFilter(_BadRequestFilter())


class _BadRequestFilter(logging.Filter):
    """aiohttp logs a request it cannot parse with the exception, whose text quotes the
    start of the offending line: an over-long ``Authorization`` header put the start of a
    token in the log. Such a record keeps the exception's name only."""

    def filter(self, record: logging.LogRecord) -> bool:
        from aiohttp.http_exceptions import HttpProcessingError

        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            message = record.getMessage()
            record.msg, record.args = "%s (%s)", (message, type(exc).__name__)
            record.exc_info = None
            record.exc_text = None
        return True

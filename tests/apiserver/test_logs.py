"""The request line's cheaper processors render what structlog's own would."""

from __future__ import annotations

import datetime
import re

import structlog

from apiserver import logs


def test_key_value_renderer_matches_structlogs() -> None:
    event = {"verb": "get", "path": "/api/v1/namespaces/a/configmaps/b", "subresource": None,
             "code": 200, "latency_ms": 1.25, "event": "request", "level": "info",
             "timestamp": "2026-11-22T09:33:47.372821Z", "user": "it's"}
    theirs = structlog.processors.KeyValueRenderer(
        key_order=["timestamp", "level", "event"], drop_missing=True)(None, "info", dict(event))
    assert logs._render_kv(None, "info", dict(event)) == theirs
    no_time = {k: v for k, v in event.items() if k != "timestamp"}
    assert logs._render_kv(None, "info", dict(no_time)).startswith("level='info' event=")


def test_utc_stamp_is_iso_utc_and_current() -> None:
    stamp = logs._UtcStamp()
    before = datetime.datetime.now(datetime.UTC)
    text = stamp(None, "info", {})["timestamp"]
    again = stamp(None, "info", {})["timestamp"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", text)
    parsed = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    assert abs((parsed - before).total_seconds()) < 5
    assert again >= text


def test_tracebacks_are_written(capsys) -> None:
    """An internal error's log line carries its traceback (the 500's message says "see the
    server log"), from structlog and from the standard library's loggers alike."""
    import logging

    logs.configure()
    try:
        def fail() -> None:
            raise ValueError("boom in fail")

        for logger in (structlog.get_logger("t"), logging.getLogger("t")):
            try:
                fail()
            except ValueError:
                logger.exception("request failed")
        err = capsys.readouterr().err
        assert err.count("Traceback (most recent call last):") == 2, err
        assert err.count("ValueError: boom in fail") == 2
        assert "in fail" in err and "exc_info" not in err
    finally:
        structlog.reset_defaults()
        logging.getLogger().handlers.clear()

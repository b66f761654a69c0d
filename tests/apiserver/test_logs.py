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


def _sink_lines(sink: logs._Sink) -> list[str]:
    return sink.file.getvalue().splitlines()  # type: ignore[attr-defined]


def test_request_lines_are_held_until_another_line_and_stay_in_order() -> None:
    import io

    sink = logs._Sink(io.StringIO(), flush_frequency=3600)
    try:
        for i in range(3):
            sink.hold(f"request {i}")
        assert _sink_lines(sink) == []  # held: no write per request
        sink.write("warning")
        assert _sink_lines(sink) == ["request 0", "request 1", "request 2", "warning"]
        sink.hold("request 3")
        sink.flush()
        assert _sink_lines(sink)[-1] == "request 3"
    finally:
        sink.stop()


def test_held_lines_are_written_by_the_timer_and_at_the_size_limit() -> None:
    import io
    import time

    sink = logs._Sink(io.StringIO(), flush_frequency=0.05)
    try:
        sink.hold("alone")
        deadline = time.monotonic() + 10
        while _sink_lines(sink) != ["alone"] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _sink_lines(sink) == ["alone"]
    finally:
        sink.stop()
    sink = logs._Sink(io.StringIO(), flush_frequency=3600)
    try:
        line = "x" * 1000
        n = -(-logs.HOLD_LIMIT // len(line))  # the line that reaches the limit
        for _ in range(n - 1):
            sink.hold(line)
        assert _sink_lines(sink) == []
        sink.hold(line)
        assert len(_sink_lines(sink)) == n
    finally:
        sink.stop()
    sink = logs._Sink(io.StringIO(), flush_frequency=0)  # 0: no holding
    sink.hold("at once")
    assert _sink_lines(sink) == ["at once"]
    sink = logs._Sink(io.StringIO(), flush_frequency=3600)
    sink.stop()  # replaced by a new configure: a logger that kept it writes at once
    sink.hold("late")
    assert _sink_lines(sink) == ["late"]


def test_configured_loggers_hold_only_the_request_line(monkeypatch) -> None:
    import io
    import logging

    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    logs.configure(flush_frequency=3600)
    try:
        structlog.get_logger(logs.REQUEST_LOGGER).info("request", verb="get", code=200)
        assert err.getvalue() == ""
        structlog.get_logger("other").info("started")
        first, second = err.getvalue().splitlines()
        assert "event='request'" in first and "code=200" in first
        assert "event='started'" in second
        structlog.get_logger(logs.REQUEST_LOGGER).info("request", verb="list", code=200)
        logging.getLogger("stdlib").warning("careful")  # the standard library's, in order
        lines = err.getvalue().splitlines()
        assert "verb='list'" in lines[2] and "careful" in lines[3]
        structlog.get_logger(logs.REQUEST_LOGGER).info("request", verb="watch", code=200)
        logs.flush()
        assert "verb='watch'" in err.getvalue().splitlines()[-1]
    finally:
        structlog.reset_defaults()
        logging.getLogger().handlers.clear()
        logs._new_sink(0)


def test_writes_to_a_tls_connection_the_client_closed_are_not_logged(capsys) -> None:
    """uvloop's (and asyncio's) warning for each write dropped while a TLS connection the
    client closed shuts down is not written; other warnings of the loop are."""
    import logging

    logs.configure()
    try:
        loop_log = logging.getLogger("asyncio")
        for _ in range(3):
            loop_log.warning("SSL connection is closed")
        loop_log.warning("socket.send() raised exception.")
        err = capsys.readouterr().err
        assert "SSL connection is closed" not in err
        assert err.count("socket.send() raised exception.") == 1
    finally:
        structlog.reset_defaults()
        logging.getLogger().handlers.clear()

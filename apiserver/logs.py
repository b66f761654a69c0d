"""Structured logs (structlog): key=value on a terminal, JSON with ``--logging-format=json``.
Never log a bearer token, a private key or a Secret's data."""

from __future__ import annotations

import atexit
import datetime
import logging
import sys
import threading
import time
from typing import IO, Any, Final

import orjson
import structlog

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR}


_request_log = True

# The logger of the per-request line (``apiserver.filters.recovery``): the one whose info
# lines are held for a moment (``_Sink``) rather than written one system call each.
REQUEST_LOGGER: Final = "apiserver.request"
# Upstream's --log-flush-frequency default: at most this long between a line and its write.
FLUSH_FREQUENCY: Final = 5.0
# Held lines are written once they add up to this many characters.
HOLD_LIMIT: Final = 64 * 1024


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


class _Sink:
    """Every log line goes through one writer, in order. The per-request line (info) is held
    and written with the lines after it, at most ``flush_frequency`` seconds later or once
    ``HOLD_LIMIT`` characters are held: one write for many requests instead of a write and a
    flush each (about a tenth of a GET's CPU here). Upstream's klog buffers the same way
    (``--log-flush-frequency``, 5 s). Any other line, and the exit, writes what is held
    first, so nothing is reordered and a crash's traceback follows the requests before it."""

    def __init__(self, file: IO[str], flush_frequency: float) -> None:
        self.file = file
        self.flush_frequency = flush_frequency
        self._lock = threading.Lock()
        self._held: list[str] = []
        self._size = 0
        self._wake = threading.Event()
        self._flusher: threading.Thread | None = None

    def hold(self, line: str) -> None:
        if self.flush_frequency <= 0:
            self.write(line)
            return
        with self._lock:
            self._held.append(line)
            self._size += len(line)
            if self._size >= HOLD_LIMIT:
                self._write_locked()
            elif self._flusher is None:
                self._start_flusher()

    def write(self, line: str) -> None:
        with self._lock:
            self._held.append(line)
            self._write_locked()

    def flush(self) -> None:
        with self._lock:
            if self._held:
                self._write_locked()

    def _write_locked(self) -> None:
        text = "\n".join(self._held)
        self._held.clear()
        self._size = 0
        try:
            self.file.write(text + "\n")
            self.file.flush()
        except (OSError, ValueError):  # stderr gone or closed: a request must not fail
            pass

    def _start_flusher(self) -> None:
        self._flusher = threading.Thread(target=self._flush_periodically,
                                         name="log-flush", daemon=True)
        self._flusher.start()

    def _flush_periodically(self) -> None:
        while not self._wake.wait(self.flush_frequency):
            self.flush()

    def stop(self) -> None:
        """No more holding: a logger that kept this sink (structlog caches loggers on first
        use) writes at once from now on."""
        self.flush_frequency = 0
        self._wake.set()
        self.flush()


class _Logger:
    """structlog's logger over the sink: ``held`` for the methods whose lines may wait."""

    __slots__ = ("_now", "debug", "info")

    def __init__(self, sink: _Sink, held: bool) -> None:
        self._now = sink.write
        self.debug = self.info = sink.hold if held else sink.write

    def msg(self, message: str) -> None:
        self._now(message)

    log = warn = warning = err = error = fatal = failure = critical = exception = msg


class _SinkHandler(logging.Handler):
    """The standard library's records, formatted, through the same sink (in order)."""

    def __init__(self, sink: _Sink) -> None:
        super().__init__()
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.sink.write(self.format(record))
        except Exception:  # noqa: BLE001 - logging's own convention
            self.handleError(record)


_sink: _Sink | None = None


def flush() -> None:
    """Write the held lines now (shutdown, tests)."""
    if _sink is not None:
        _sink.flush()


def _new_sink(flush_frequency: float) -> _Sink:
    global _sink
    if _sink is not None:
        _sink.stop()
    else:
        atexit.register(flush)
    _sink = _Sink(sys.stderr, flush_frequency)
    return _sink


def configure(fmt: str = "text", level: str = "info",
              flush_frequency: float = FLUSH_FREQUENCY) -> None:
    """Route structlog and the standard library's logging to stderr in one format, through
    one ``_Sink`` (the request line held up to ``flush_frequency`` seconds)."""
    global _request_log
    lvl = _LEVELS.get(level, logging.INFO)
    _request_log = lvl <= logging.INFO
    sink = _new_sink(flush_frequency)
    # key=value and JSON renderers: one line per event, cheap enough for a line per request
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer(serializer=_orjson) if fmt == "json"
        else _render_kv)
    # (no merge_contextvars: nothing binds context variables, and it copies the context of
    # every line)
    shared: list[structlog.typing.Processor] = [
        structlog.processors.add_log_level,
        _UtcStamp(),
        # exc_info (log.exception) becomes the formatted traceback, key "exception"
        structlog.processors.format_exc_info,
    ]
    structlog.configure(
        processors=[*shared, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=lambda *args: _Logger(sink, held=args[:1] == (REQUEST_LOGGER,)),
        cache_logger_on_first_use=True,
    )
    handler = _SinkHandler(sink)
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
    loop_log = logging.getLogger("asyncio")
    if not any(isinstance(f, _PeerGoneFilter) for f in loop_log.filters):
        loop_log.addFilter(_PeerGoneFilter())


class _PeerGoneFilter(logging.Filter):
    """A TLS client that closes its connection while a response is being written (a watch
    dropped during its initial events, a client killed) leaves the TLS layer shutting the
    connection down for a loop turn before the transport reports it closed; writes meanwhile
    are dropped, and uvloop (as asyncio) logs a warning "SSL connection is closed" for every
    one after the fifth: thousands of lines when watchers reconnect. Nothing is wrong with
    the server and the client is gone, so those lines are dropped; the next write fails as
    for any closed connection and the handler ends."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg != "SSL connection is closed"


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

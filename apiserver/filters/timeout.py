"""Request timeout for requests that are not long-running (upstream
``WithTimeoutForNonLongRunningRequests`` + ``WithRequestDeadline``): ``--request-timeout``,
shortened by a valid ``?timeout=`` from the client; watches and proxies are exempt. A handler
that overruns is cancelled and the client gets 504 Timeout."""

from __future__ import annotations

import asyncio
import math
from typing import TYPE_CHECKING, Any, Final

from aiohttp import web

from apiserver.filters.longrunning import is_long_running
from apiserver.options import parse_duration
from apiserver.request import REQUEST_INFO
from apiserver.status import GenericServerError, bad_request

if TYPE_CHECKING:
    from aiohttp.typedefs import Handler, Middleware

TIMEOUT_MESSAGE: Final = ("Timeout: request did not complete within requested timeout - "
                          "context deadline exceeded")
# Deadlines are rounded up to a multiple of this, and the requests of one such slot share
# one timer of the event loop.
DEADLINE_SLOT: Final = 0.05


class Deadlines:
    """Deadlines of running requests, with one loop timer per ``DEADLINE_SLOT`` of deadline
    instead of one per request (``asyncio.timeout``'s timer per request cost about 7% of a
    GET's CPU: a timer handle made, scheduled and cancelled each time). A slot's timer
    cancels the tasks still in it, as ``asyncio.timeout`` would, at most ``DEADLINE_SLOT``
    late; the cancellation is told apart from others the same way (``Task.cancelling``)."""

    def __init__(self) -> None:
        self._slots: dict[tuple[asyncio.AbstractEventLoop, int], set[asyncio.Task[Any]]] = {}
        self.expired: set[asyncio.Task[Any]] = set()

    def add(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any],
            seconds: float) -> tuple[asyncio.AbstractEventLoop, int]:
        key = (loop, math.ceil((loop.time() + seconds) / DEADLINE_SLOT))
        tasks = self._slots.get(key)
        if tasks is None:
            tasks = self._slots[key] = set()
            loop.call_at(key[1] * DEADLINE_SLOT, self._expire, key)
        tasks.add(task)
        return key

    def discard(self, key: tuple[asyncio.AbstractEventLoop, int],
                task: asyncio.Task[Any]) -> None:
        tasks = self._slots.get(key)
        if tasks is not None:
            tasks.discard(task)

    def _expire(self, key: tuple[asyncio.AbstractEventLoop, int]) -> None:
        for task in self._slots.pop(key, ()):
            if not task.done():
                self.expired.add(task)
                task.cancel()


def request_timeout(default_seconds: float) -> Middleware:
    deadlines = Deadlines()

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        info = request[REQUEST_INFO]
        if is_long_running(info):
            return await handler(request)
        seconds = default_seconds
        raw = request.query.get("timeout")
        if raw:
            try:
                asked = parse_duration(raw, negative=True)
            except ValueError as e:
                raise bad_request(
                    f"invalid timeout specified in the request URL - {e}") from None
            if 0 < asked < seconds:
                seconds = asked
        task = asyncio.current_task()
        if task is None:  # not in a task: nothing to cancel
            return await handler(request)
        cancelling = task.cancelling()
        key = deadlines.add(asyncio.get_running_loop(), task, seconds)
        try:
            return await handler(request)
        except asyncio.CancelledError:
            if task in deadlines.expired:
                deadlines.expired.discard(task)
                if task.uncancel() <= cancelling:  # no other cancellation: ours
                    raise GenericServerError(504, "Timeout", TIMEOUT_MESSAGE) from None
            raise
        finally:
            deadlines.discard(key, task)
            if task in deadlines.expired:  # expired as it finished: the cancel is undone
                deadlines.expired.discard(task)
                task.uncancel()

    return middleware

"""``NextCall``: one call of an async function shared by every caller that arrived before it
started (request coalescing with a linearizability guarantee).

The cacher uses it for the store's current revision and for progress requests: a consistent
read must use a revision read that began after the read arrived (an answer that was already
on its way may predate a write the client saw acknowledged), but any number of reads waiting
at the same moment can share one. Callers that arrive while a call is in flight wait for the
next one, which starts when the current one ends::

    t0  A arrives           -> call 1 starts (A)
    t1  B, C arrive         -> wait for call 2 (call 1 began before them)
    t2  call 1 ends         -> A gets its result; call 2 starts (B, C)
    t3  D arrives           -> waits for call 3

Gathering (``gather_turns``). Under concurrency a call's answer is shared by the callers
that arrived while the previous call was in flight, so the number of calls follows the
call's round trip, not the number of callers. When the call that just ended was shared by
two or more callers, the next one waits for the event loop to go round up to
``gather_turns`` times (at most ``gather_limit`` seconds) before it starts, so that the
requests whose bytes have already arrived are read and join it. A lone caller (one call
per caller, as with a client that issues one read after another) is never delayed. Waiting
longer only moves the call's start later, after every caller's arrival, so the guarantee
above holds. Over a three-member etcd with 32 clients reading one object, a consistent
read from the watch cache made 0.079 revision reads per read without gathering and 0.033
with 8 turns (docs/apiserver.md).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class NextCall(Generic[T]):
    """``await next_call()``: the result (or exception) of a call of ``fn`` that started after
    this await began. At most one call is in flight; a cancelled caller does not cancel the
    call the others share."""

    def __init__(self, fn: Callable[[], Awaitable[T]], *, gather_turns: int = 0,
                 gather_limit: float = 0.0) -> None:
        self._fn = fn
        self._pending: asyncio.Future[T] | None = None  # the call not started yet
        self._task: asyncio.Task[None] | None = None
        self._callers = 0  # of the pending call
        self._gather_turns = gather_turns
        self._gather_limit = gather_limit

    async def __call__(self) -> T:
        fut = self._pending
        if fut is None:
            loop = asyncio.get_running_loop()
            fut = self._pending = loop.create_future()
            if self._task is None:
                self._task = loop.create_task(self._run())
        self._callers += 1
        return await asyncio.shield(fut)

    async def _gather(self) -> None:
        """Let the loop go round (see the module's docstring)."""
        loop = asyncio.get_running_loop()
        until = loop.time() + self._gather_limit
        for _ in range(self._gather_turns):
            await asyncio.sleep(0)
            if loop.time() >= until:
                return

    async def _run(self) -> None:
        shared = False  # the call that just ended had two or more callers
        try:
            while True:
                if shared and self._gather_turns:
                    await self._gather()
                fut = self._pending
                if fut is None:
                    break
                self._pending = None  # whoever comes now waits for the next call
                shared, self._callers = self._callers > 1, 0
                try:
                    result = await self._fn()
                except asyncio.CancelledError:
                    fut.cancel()
                    raise
                except Exception as exc:  # noqa: BLE001 - handed to every caller
                    if not fut.done():
                        fut.set_exception(exc)
                else:
                    if not fut.done():
                        fut.set_result(result)
        finally:
            self._task = None
            if self._pending is not None:  # cancelled between calls
                self._pending.cancel()
                self._pending = None

    async def close(self) -> None:
        """Cancel the call in flight (its callers see CancelledError)."""
        task = self._task
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

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

    def __init__(self, fn: Callable[[], Awaitable[T]]) -> None:
        self._fn = fn
        self._pending: asyncio.Future[T] | None = None  # the call not started yet
        self._task: asyncio.Task[None] | None = None

    async def __call__(self) -> T:
        fut = self._pending
        if fut is None:
            loop = asyncio.get_running_loop()
            fut = self._pending = loop.create_future()
            if self._task is None:
                self._task = loop.create_task(self._run())
        return await asyncio.shield(fut)

    async def _run(self) -> None:
        try:
            while (fut := self._pending) is not None:
                self._pending = None  # whoever comes now waits for the next call
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

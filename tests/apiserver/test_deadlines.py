"""The request timeout's shared deadline timers (apiserver/filters/timeout.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import pytest
from aiohttp import web

from apiserver.filters.timeout import DEADLINE_SLOT, request_timeout
from apiserver.request import REQUEST_INFO, RequestInfo
from apiserver.status import APIError


class _Request(dict[Any, Any]):  # what the middleware reads of a request
    def __init__(self, query: dict[str, str] | None = None) -> None:
        super().__init__()
        self[REQUEST_INFO] = RequestInfo(is_resource_request=True, path="/api/v1/configmaps",
                                         verb="list", resource="configmaps")
        self.query = query or {}


Handler = Callable[[Any], Awaitable[web.StreamResponse]]


def _middleware(seconds: float) -> Callable[..., Coroutine[Any, Any, web.StreamResponse]]:
    mw = request_timeout(seconds)

    async def run(handler: Handler, query: dict[str, str] | None = None) -> web.StreamResponse:
        return await mw(_Request(query), handler)  # type: ignore[arg-type]

    return run


async def test_an_overrun_is_a_504_within_a_slot() -> None:
    run = _middleware(0.1)

    async def slow(_: Any) -> web.StreamResponse:
        await asyncio.sleep(10)
        return web.Response()

    loop = asyncio.get_running_loop()
    t0 = loop.time()
    with pytest.raises(APIError) as err:
        await run(slow)
    assert err.value.code == 504
    assert 0.1 <= loop.time() - t0 < 0.1 + DEADLINE_SLOT + 1.0
    # the task is not left cancelled: it goes on awaiting
    await asyncio.sleep(0)


async def test_many_requests_share_a_timer_and_finish_untouched() -> None:
    run = _middleware(0.2)
    loop = asyncio.get_running_loop()
    scheduled = 0
    call_at = loop.call_at

    def counting_call_at(*args: Any, **kwargs: Any) -> Any:
        nonlocal scheduled
        scheduled += 1
        return call_at(*args, **kwargs)

    async def quick(_: Any) -> web.StreamResponse:
        await asyncio.sleep(0)
        return web.Response(text="ok")

    loop.call_at = counting_call_at  # type: ignore[method-assign,assignment]
    try:
        results = await asyncio.gather(*(run(quick) for _ in range(100)))
    finally:
        del loop.call_at
    assert all(r.status == 200 for r in results)
    assert scheduled <= 2  # one timer per slot, not one per request
    await asyncio.sleep(0.2 + 2 * DEADLINE_SLOT)  # the slot's timer fires on nobody


async def test_a_cancellation_from_elsewhere_stays_a_cancellation() -> None:
    run = _middleware(0.1)
    started = asyncio.Event()

    async def slow(_: Any) -> web.StreamResponse:
        started.set()
        await asyncio.sleep(10)
        return web.Response()

    task = asyncio.create_task(run(slow))
    await started.wait()
    task.cancel()  # the client went away, before the deadline
    with pytest.raises(asyncio.CancelledError):
        await task

    # cancelled from elsewhere after the deadline fired too: still a cancellation
    started.clear()

    async def stubborn(_: Any) -> web.StreamResponse:
        started.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            await asyncio.sleep(1.0)  # cleaning up while the outer cancel comes
            raise
        return web.Response()

    task = asyncio.create_task(run(stubborn))
    await started.wait()
    await asyncio.sleep(0.1 + 2 * DEADLINE_SLOT)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_handler_that_swallows_the_cancel_answers() -> None:
    run = _middleware(0.05)

    async def swallow(_: Any) -> web.StreamResponse:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            return web.Response(text="late")
        return web.Response()

    resp = await run(swallow)
    assert isinstance(resp, web.Response) and resp.text == "late"
    # the task's cancellation was taken back, so it can go on awaiting
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]
    await asyncio.sleep(0)

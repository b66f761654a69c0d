"""Watch (upstream ``handlers/watch.go``): a chunked stream of JSON documents, one
``{"type": ..., "object": ...}`` per event followed by a newline, each written (and so sent)
as it arrives. The stream ends when the store ends it, when ``timeoutSeconds`` passes, or
when the client goes away; the store's stream is stopped in every case.

aiohttp does not cancel a handler when its client disconnects, so a watchdog task checks the
transport once per ``_IDLE_CHECK`` seconds (and the deadline) and stops the store's stream,
which ends the handler's loop; the loop itself awaits nothing but the next event and the
write.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any, Final

from aiohttp import web

from apiserver.endpoints import serializers
from apiserver.endpoints.fieldvalidation import warning_header
from apiserver.endpoints.negotiation import JSON, TABLE
from apiserver.endpoints.params import list_options
from apiserver.endpoints.response import transform_watch_object
from apiserver.status import APIError

if TYPE_CHECKING:
    from apiserver.endpoints.response import Scope
    from apiserver.registry.interface import WatchItem, WatchStream

_IDLE_CHECK: Final = 1.0


class _LastFrame:
    """The most recent plain frame. Every watcher of an event gets the same (read-only)
    object from the registry, and the watchers of one event run one after the other on the
    loop, so a single remembered frame encodes each event once instead of once per watcher.
    Holding the object keeps the identity test sound."""

    __slots__ = ("type", "obj", "media", "data")

    def __init__(self) -> None:
        self.type = ""
        self.obj: object = None
        self.media = ""
        self.data = b""


_LAST: Final = _LastFrame()


def _frame(scope: Scope, item: WatchItem, first: bool) -> bytes:
    obj: Any = item.object
    media = scope.output.media_type
    if not scope.output.convert and item.type != "ERROR":
        last = _LAST
        if last.obj is obj and last.type == item.type and last.media == media:
            return last.data
        data = serializers.encode_watch_event(item.type, obj, media)
        last.type, last.obj, last.media, last.data = item.type, obj, media, data
        return data
    if scope.output.convert == TABLE and item.type == "BOOKMARK":
        rv = (obj.get("metadata") or {}).get("resourceVersion", "")
        obj = {"kind": TABLE, "apiVersion": scope.output.convert_api_version,
               "metadata": {"resourceVersion": rv}, "columnDefinitions": None, "rows": None}
    elif item.type != "ERROR":
        obj = transform_watch_object(scope, obj, first=first)
    return serializers.encode_watch_event(item.type, obj, scope.output.media_type)


def _gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


async def _watchdog(request: web.Request, stream: WatchStream, deadline: float | None) -> None:
    loop = asyncio.get_running_loop()
    while True:
        wait = _IDLE_CHECK
        if deadline is not None:
            wait = min(wait, deadline - loop.time())
            if wait <= 0:
                break
        await asyncio.sleep(wait)
        if _gone(request):
            break
    stream.stop()


async def handle(scope: Scope) -> web.StreamResponse:
    request = scope.request
    opts = list_options(request.query, watch=True, name=scope.info.name)
    stream = await scope.store.watch(scope.ctx, opts)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + opts.timeout_seconds if opts.timeout_seconds > 0 else None
    resp = web.StreamResponse(status=200)
    media = scope.output.media_type
    # upstream: JSON streams keep their type, others say ;stream=watch
    resp.headers["Content-Type"] = media if media == JSON else f"{media};stream=watch"
    resp.enable_chunked_encoding()
    for w in scope.warnings:
        resp.headers.add("Warning", warning_header(w))
    # A watchdog, not a per-event wait: it stops the store's stream at the deadline or when
    # the client is gone, which ends the loop below. Creating a task and a wait per event
    # cost more than the rest of the delivery at a thousand watchers.
    watchdog = asyncio.create_task(_watchdog(request, stream, deadline))
    try:
        await resp.prepare(request)
        first = True
        try:
            async for item in stream:
                await resp.write(_frame(scope, item, first))
                if item.type in ("ADDED", "MODIFIED", "DELETED"):
                    first = False
        except APIError as err:
            # Headers are sent: a failure now can only be an ERROR event (upstream).
            await resp.write(serializers.encode_watch_event("ERROR", err.body(),
                                                            scope.output.media_type))
    except (ConnectionResetError, ConnectionError):
        pass
    finally:
        watchdog.cancel()
        stream.stop()
    with contextlib.suppress(ConnectionResetError, ConnectionError, RuntimeError):
        await resp.write_eof()
    return resp

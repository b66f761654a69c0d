"""Max in flight (upstream ``WithMaxInFlightLimit``): at most ``--max-requests-inflight``
read-only and ``--max-mutating-requests-inflight`` mutating requests at once (0: no limit);
over the limit -> 429 with ``Retry-After: 1``. Long-running requests (watch, proxy) are not
counted. Members of system:masters are served even over the limit, as upstream (a
super-admin must always get an answer)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from aiohttp import web

from apiserver.filters.longrunning import is_long_running
from apiserver.metrics import CURRENT_INFLIGHT
from apiserver.request import REQUEST_INFO, USER
from apiserver.status import too_many_requests

if TYPE_CHECKING:
    from aiohttp.typedefs import Handler, Middleware

PRIVILEGED_GROUP: Final = "system:masters"
NON_MUTATING: Final = frozenset({"get", "list", "watch", "head", "options"})


class _Slots:
    __slots__ = ("limit", "used")

    def __init__(self, limit: int, kind: str) -> None:
        self.limit = limit
        self.used = 0
        # read at scrape time: nothing to update per request
        CURRENT_INFLIGHT.labels(kind).set_function(lambda: self.used)


def max_in_flight(read_only_limit: int, mutating_limit: int) -> Middleware:
    read_only = _Slots(read_only_limit, "readOnly")
    mutating = _Slots(mutating_limit, "mutating")

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        info = request[REQUEST_INFO]
        if is_long_running(info):
            return await handler(request)
        slots = read_only if info.verb in NON_MUTATING else mutating
        if slots.limit == 0:
            return await handler(request)
        if slots.used >= slots.limit and \
                PRIVILEGED_GROUP not in request[USER].groups:
            raise too_many_requests(1)
        # single-threaded event loop: the check above and this increment are atomic
        slots.used += 1
        try:
            return await handler(request)
        finally:
            slots.used -= 1

    return middleware

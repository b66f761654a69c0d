"""GET of a collection (upstream ``handlers/get.go`` ListResource, list half)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from apiserver.endpoints.params import list_options
from apiserver.endpoints.response import write_object

if TYPE_CHECKING:
    from aiohttp import web

    from apiserver.endpoints.response import Scope


async def handle(scope: Scope) -> web.StreamResponse:
    opts = list_options(scope.request.query, watch=False)
    obj = await scope.store.list(scope.ctx, opts)
    return write_object(scope, 200, obj)

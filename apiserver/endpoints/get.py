"""GET of one object or sub-resource (upstream ``handlers/get.go`` GetResource)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from apiserver.endpoints.response import write_object
from apiserver.registry.interface import GetOptions

if TYPE_CHECKING:
    from aiohttp import web

    from apiserver.endpoints.response import Scope


async def handle(scope: Scope) -> web.StreamResponse:
    rv = scope.request.query.get("resourceVersion", "")
    obj = await scope.store.get(scope.ctx, scope.info.name, GetOptions(resource_version=rv))
    return write_object(scope, 200, obj)

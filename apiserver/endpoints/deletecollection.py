"""DELETE of a collection (upstream ``handlers/delete.go`` DeleteCollection): returns the
list of what was deleted."""

from __future__ import annotations

from typing import TYPE_CHECKING

from apiserver.endpoints.delete import options_body
from apiserver.endpoints.params import UNSAFE_DELETE_GATE, delete_options, list_options
from apiserver.endpoints.response import write_object

if TYPE_CHECKING:
    from aiohttp import web

    from apiserver.endpoints.response import Scope


async def handle(scope: Scope) -> web.StreamResponse:
    query = scope.request.query
    list_opts = list_options(query, watch=False)
    body = await options_body(scope)
    opts = delete_options(query, body, collection=True,
                          unsafe_delete_gate=scope.gates.get(UNSAFE_DELETE_GATE, False))
    result = await scope.store.delete_collection(scope.ctx, opts, list_opts)
    return write_object(scope, 200, result)

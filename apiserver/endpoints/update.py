"""PUT of one object or sub-resource (upstream ``handlers/update.go``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from apiserver.endpoints import apply
from apiserver.endpoints.body import decode_request_object
from apiserver.endpoints.create import ensure_namespace
from apiserver.endpoints.params import write_options
from apiserver.endpoints.response import write_object
from apiserver.registry.generic_update import reads_only
from apiserver.registry.treecopy import give
from apiserver.status import bad_request

if TYPE_CHECKING:
    from aiohttp import web

    from apiserver.endpoints.response import Scope
    from apiserver.registry.interface import Object


def check_name(scope: Scope, obj: dict[str, Any]) -> None:
    """Upstream checkName: the object names the object of the URL."""
    meta = obj.get("metadata") or {}
    name = meta.get("name") or ""
    if name != scope.info.name:
        raise bad_request(f"the name of the object ({name}) does not match the name on the URL "
                          f"({scope.info.name})")
    ns = meta.get("namespace") or ""
    want = scope.ctx.namespace
    if want and ns and ns != want:
        raise bad_request(f"the namespace of the object ({ns}) does not match the namespace on "
                          f"the request ({want})")


async def handle(scope: Scope) -> web.StreamResponse:
    request = scope.request
    opts = write_options(request.query, request.headers.get("User-Agent", ""),
                         kind="UpdateOptions")
    obj = await decode_request_object(scope, opts.field_validation)
    check_name(scope, obj)
    ensure_namespace(scope, obj)
    fm = apply.field_manager(scope)
    manager = apply.manager_name(scope)
    frozen = orjson.dumps(obj)
    first: list[Object] = [obj]

    @reads_only
    async def transform(current: Object | None) -> Object:
        # The store compares metadata.resourceVersion with the stored one (409 if stale).
        # A fresh object per call (the decoded body, then copies of it): a store may retry
        # the transform after a lost race, and it changes what it is handed.
        fresh: Object = first.pop() if first else orjson.loads(frozen)
        return give(apply.record_update(scope, fm, current, fresh, manager))

    result, created = await scope.store.update(scope.ctx, scope.info.name, transform, opts)
    return write_object(scope, 201 if created else 200, result)

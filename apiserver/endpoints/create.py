"""POST to a collection (upstream ``handlers/create.go``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from apiserver.api import decode
from apiserver.endpoints import apply
from apiserver.endpoints.body import decode_request_object
from apiserver.endpoints.params import write_options
from apiserver.endpoints.response import write_object
from apiserver.registry.treecopy import give
from apiserver.status import bad_request

if TYPE_CHECKING:
    from aiohttp import web

    from apiserver.endpoints.response import Scope


async def handle(scope: Scope) -> web.StreamResponse:
    request = scope.request
    opts = write_options(request.query, request.headers.get("User-Agent", ""),
                         kind="CreateOptions")
    obj = await decode_request_object(scope, opts.field_validation)
    ensure_namespace(scope, obj)
    checked = decode.was_checked(obj)
    obj = apply.record_update(scope, apply.field_manager(scope), None, obj,
                              apply.manager_name(scope))
    if checked:
        # the same object, defaulted and with the managedFields recorded here: the store's
        # type check of it would walk it again for nothing
        decode.mark_checked(obj)
    # decoded from this request's body, nothing else holds it: the store need not copy it
    result = await scope.store.create(scope.ctx, give(obj), opts)
    return write_object(scope, 201, result)


def ensure_namespace(scope: Scope, obj: dict[str, object]) -> None:
    """Upstream EnsureObjectNamespaceMatchesRequestNamespace: an empty namespace takes the
    request's; cluster-scoped objects lose theirs; a different one is a 400."""
    meta = obj["metadata"]
    assert isinstance(meta, dict)
    want = scope.ctx.namespace if scope.store.info.namespaced else ""
    have = meta.get("namespace") or ""
    if have == want:
        return
    if have == "" or want == "":
        if want:
            meta["namespace"] = want
        else:
            meta.pop("namespace", None)
        return
    raise bad_request("the namespace of the provided object does not match the namespace sent "
                      "on the request")

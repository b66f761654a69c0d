"""DELETE of one object (upstream ``handlers/delete.go`` DeleteResource)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from apiserver.endpoints import serializers
from apiserver.endpoints.body import read_body
from apiserver.endpoints.negotiation import negotiate_input
from apiserver.endpoints.params import UNSAFE_DELETE_GATE, delete_options
from apiserver.endpoints.response import write_object
from apiserver.status import bad_request

if TYPE_CHECKING:
    from aiohttp import web

    from apiserver.endpoints.response import Scope

# DeleteOptions bodies may name the meta group or (for old clients) the core/own group.
_META_VERSIONS = ("v1", "meta.plat.io/v1", "meta.k8s.io/v1")


async def options_body(scope: Scope) -> dict[str, Any] | None:
    """The decoded DeleteOptions body, or None when the body is empty."""
    request = scope.request
    body = await read_body(request)
    if not body.strip():
        return None
    media = negotiate_input(request.headers.get("Content-Type", ""))
    try:
        obj, _ = serializers.decode_object(body, media, track_duplicates=False)
    except serializers.DecodeError as e:
        raise bad_request(str(e)) from None
    kind = obj.get("kind") or "DeleteOptions"
    av = obj.get("apiVersion") or "v1"
    if kind != "DeleteOptions" or (av not in _META_VERSIONS
                                   and av != scope.store.info.group_version):
        raise bad_request(f'{kind} in version "{av.rsplit("/", 1)[-1]}" cannot be handled as a '
                          "DeleteOptions: decoded object cannot be converted to DeleteOptions")
    return obj


async def handle(scope: Scope) -> web.StreamResponse:
    body = await options_body(scope)
    opts = delete_options(scope.request.query, body,
                          unsafe_delete_gate=scope.gates.get(UNSAFE_DELETE_GATE, False))
    result, deleted_now = await scope.store.delete(scope.ctx, scope.info.name, opts)
    status = 200
    # Upstream: 202 only when the object is still there and the client asked explicitly
    # for cascading deletion with orphanDependents=false.
    if not deleted_now and opts.orphan_dependents is False:
        status = 202
    return write_object(scope, status, result)

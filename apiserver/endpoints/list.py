"""GET of a collection (upstream ``handlers/get.go`` ListResource, list half).

Compact JSON and Protobuf without conversion, the common cases (kubectl, informers), are built
from the watch cache's per-object encodings when the store keeps them (``RESTStore``
``list_encoded``, the generic store over the cacher): the same bytes as encoding the list
object, without copying and encoding every item on every list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from apiserver.endpoints import serializers
from apiserver.endpoints.negotiation import JSON, PROTOBUF_TYPES
from apiserver.endpoints.params import list_options
from apiserver.endpoints.response import encoded_response, is_pretty, write_object

if TYPE_CHECKING:
    from aiohttp import web

    from apiserver.endpoints.response import Scope

# Names of the item encodings for the caches (see list_encoded): serializers.encode_item's
# and serializers.encode_protobuf_item's.
JSON_ITEMS: Final = "json"
PROTOBUF_ITEMS: Final = "protobuf"


async def handle(scope: Scope) -> web.StreamResponse:
    opts = list_options(scope.request.query, watch=False)
    out = scope.output
    list_encoded = getattr(scope.store, "list_encoded", None)
    if list_encoded is not None and not out.convert:
        if out.media_type == JSON and not is_pretty(scope.request, out):
            encoded = await list_encoded(scope.ctx, opts, JSON_ITEMS, serializers.encode_item)
            if encoded is not None:
                body = serializers.encode_list(*encoded)
                return encoded_response(scope.request, 200, body, out, scope.warnings)
        elif out.media_type in PROTOBUF_TYPES:
            encoded = await list_encoded(scope.ctx, opts, PROTOBUF_ITEMS,
                                         serializers.encode_protobuf_item)
            if encoded is not None:
                body = serializers.encode_protobuf_list(*encoded)
                return encoded_response(scope.request, 200, body, out, scope.warnings)
    obj = await scope.store.list(scope.ctx, opts)
    return write_object(scope, 200, obj)

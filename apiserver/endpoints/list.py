"""GET of a collection (upstream ``handlers/get.go`` ListResource, list half).

Compact JSON without conversion, the common case (kubectl, informers), is built from the watch
cache's per-object encodings when the store keeps them (``RESTStore`` ``list_encoded``, the
generic store over the cacher): the same bytes as encoding the list object, without copying
and encoding every item on every list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from apiserver.endpoints import serializers
from apiserver.endpoints.negotiation import JSON
from apiserver.endpoints.params import list_options
from apiserver.endpoints.response import encoded_response, is_pretty, write_object

if TYPE_CHECKING:
    from aiohttp import web

    from apiserver.endpoints.response import Scope

# Names serializers.encode_item's encoding for the caches (see list_encoded).
ITEM_ENCODING: Final = "json"


async def handle(scope: Scope) -> web.StreamResponse:
    opts = list_options(scope.request.query, watch=False)
    out = scope.output
    list_encoded = getattr(scope.store, "list_encoded", None)
    if (list_encoded is not None and out.media_type == JSON and not out.convert
            and not is_pretty(scope.request, out)):
        encoded = await list_encoded(scope.ctx, opts, ITEM_ENCODING, serializers.encode_item)
        if encoded is not None:
            head, items = encoded
            return encoded_response(scope.request, 200, serializers.encode_list(head, items),
                                    out, scope.warnings)
    obj = await scope.store.list(scope.ctx, opts)
    return write_object(scope, 200, obj)

"""PATCH of one object or sub-resource (upstream ``handlers/patch.go``).

JSON Patch (RFC 6902, ``test`` included) and JSON Merge Patch (RFC 7386) are applied to a
copy of the current object inside the store's compare-and-swap loop, so a patch never
overwrites a concurrent write. Strategic merge and apply patches are routed but answer 415
until their issues land.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import jsonpatch
import jsonpointer
import orjson

from apiserver.endpoints.body import apply_field_validation, read_body
from apiserver.endpoints.negotiation import media_type_of, unsupported_media_type
from apiserver.endpoints.params import write_options
from apiserver.endpoints.response import GenericServerError, write_object
from apiserver.endpoints.serializers import decode_patch_json, depth_exceeds
from apiserver.endpoints.update import check_name
from apiserver.status import APIError, bad_request, not_found, too_large

if TYPE_CHECKING:
    from aiohttp import web

    from apiserver.endpoints.response import Scope
    from apiserver.registry.interface import Object

JSON_PATCH: Final = "application/json-patch+json"
MERGE_PATCH: Final = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH: Final = "application/strategic-merge-patch+json"
APPLY_PATCH_YAML: Final = "application/apply-patch+yaml"
APPLY_PATCH_CBOR: Final = "application/apply-patch+cbor"
# Served now; the others are recognised and refused with 415 like any unknown type.
SUPPORTED_PATCH_TYPES: Final = (JSON_PATCH, MERGE_PATCH)
MAX_JSON_PATCH_OPERATIONS: Final = 10000


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 MergePatch: objects merge key by key, null deletes, anything else
    replaces."""
    if not isinstance(patch, dict):
        return patch
    result: dict[str, Any] = target if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _patch_failed() -> APIError:
    # Upstream NewGenericServerResponse(422, ...): the cause is not echoed.
    return GenericServerError(422, "Invalid",
                              "the server rejected our request due to an error in our request")


def _decode_json_patch(body: bytes) -> jsonpatch.JsonPatch:
    ops = decode_patch_json(body)
    if not isinstance(ops, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    if len(ops) > MAX_JSON_PATCH_OPERATIONS:
        raise too_large(f"The allowed maximum operations in a JSON patch is "
                        f"{MAX_JSON_PATCH_OPERATIONS}, got {len(ops)}")
    try:
        return jsonpatch.JsonPatch(ops)
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError,
            AttributeError, KeyError) as e:
        raise bad_request(f"invalid JSON Patch: {e}") from None


async def handle(scope: Scope) -> web.StreamResponse:
    request = scope.request
    patch_type = media_type_of(request.headers.get("Content-Type", ""))
    if patch_type not in SUPPORTED_PATCH_TYPES:
        raise unsupported_media_type(SUPPORTED_PATCH_TYPES)
    body = await read_body(request)
    opts = write_options(request.query, request.headers.get("User-Agent", ""),
                         kind="PatchOptions", force_forbidden=True)
    if patch_type == JSON_PATCH:
        json_patch = _decode_json_patch(body)
        merge: Any = None
    else:
        json_patch = None
        merge = decode_patch_json(body)
        if not isinstance(merge, dict):
            raise bad_request("Invalid JSON Patch")
    base_warnings = len(scope.warnings)

    async def transform(current: Object | None) -> Object:
        if current is None:
            raise not_found(scope.resource, scope.group, scope.info.name)
        del scope.warnings[base_warnings:]  # a retried attempt warns afresh
        doc: Any = orjson.loads(orjson.dumps(current))
        if json_patch is not None:
            try:
                doc = json_patch.apply(doc, in_place=True)
            except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError,
                    KeyError, IndexError, ValueError):
                raise _patch_failed() from None
        else:
            doc = merge_patch(doc, orjson.loads(orjson.dumps(merge)))
        if depth_exceeds(doc):
            raise _patch_failed()
        if not isinstance(doc, dict):
            raise bad_request(f"the object provided is unrecognized (must be of type "
                              f"{scope.kind}): couldn't get version/kind; json parse error: "
                              "json: cannot unmarshal non-object into Go value")
        _check_type_meta_unchanged(scope, current, doc)
        meta = doc.get("metadata")
        if not isinstance(meta, dict):
            raise bad_request(f"{scope.kind}.metadata: must be an object")
        apply_field_validation(scope, doc, [], opts.field_validation, decode_prefix=False)
        check_name(scope, doc)
        if scope.store.info.namespaced and not meta.get("namespace"):
            meta["namespace"] = scope.ctx.namespace
        patched: Object = doc
        return patched

    result, _ = await scope.store.update(scope.ctx, scope.info.name, transform, opts)
    return write_object(scope, 200, result)


def _check_type_meta_unchanged(scope: Scope, current: Object, doc: dict[str, Any]) -> None:
    for key in ("apiVersion", "kind"):
        want = current.get(key)
        have = doc.get(key)
        if have is None and want is not None:
            doc[key] = want
        elif want is not None and have != want:
            raise bad_request(f"{key} of the patched object ({have}) does not match the "
                              f"object's ({want})")

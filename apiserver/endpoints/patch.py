"""PATCH of one object or sub-resource (upstream ``handlers/patch.go``).

JSON Patch (RFC 6902, ``test`` included), JSON Merge Patch (RFC 7386) and, for the built-in
kinds the schema describes, strategic merge patch (``strategicpatch``) are applied to a copy
of the current object inside the store's compare-and-swap loop, so a patch never overwrites
a concurrent write. Custom resources refuse strategic merge with 415 as upstream. Apply
patches (``application/apply-patch+yaml``) go to ``apply.handle_apply`` where the endpoint
tracks field ownership; CBOR apply is refused with 415 (no CBOR gate yet). Every other patch
records its manager's ownership (``apply.record_update``) on the patched object.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import jsonpatch
import jsonpointer
import orjson

from apiserver.api import schema
from apiserver.api.decode import json_kind
from apiserver.api.gofmt import go_format
from apiserver.endpoints import apply, fieldvalidation, serializers, strategicpatch
from apiserver.endpoints.body import apply_field_validation, read_body
from apiserver.endpoints.negotiation import JSON, media_type_of, unsupported_media_type
from apiserver.endpoints.params import write_options
from apiserver.endpoints.response import write_object
from apiserver.endpoints.serializers import decode_patch_json, depth_exceeds
from apiserver.endpoints.update import check_name
from apiserver.registry import validation
from apiserver.status import (
    APIError,
    GenericServerError,
    bad_request,
    invalid,
    not_found,
    too_large,
)

if TYPE_CHECKING:
    from aiohttp import web

    from apiserver.endpoints.response import Scope
    from apiserver.registry.interface import Object

JSON_PATCH: Final = "application/json-patch+json"
MERGE_PATCH: Final = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH: Final = "application/strategic-merge-patch+json"
APPLY_PATCH_YAML: Final = "application/apply-patch+yaml"
APPLY_PATCH_CBOR: Final = "application/apply-patch+cbor"
# Served for the kinds the schema describes (the OpenAPI documents list these), and for
# custom resources, which have no patch strategies; apply where the endpoint tracks fields;
# the others are recognised and refused with 415 like any unknown type.
SUPPORTED_PATCH_TYPES: Final = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH)
APPLY_PATCH_TYPES: Final = (*SUPPORTED_PATCH_TYPES, APPLY_PATCH_YAML)
CUSTOM_RESOURCE_PATCH_TYPES: Final = (JSON_PATCH, MERGE_PATCH)
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


def _schema_node(scope: Scope) -> schema.Node | None:
    """The schema of the patched kind; None for kinds it does not describe (custom
    resources), which have no patch strategies."""
    group, _, version = scope.api_version.rpartition("/")
    return schema.for_kind(group, version, scope.kind)


def _decode_strategic_patch(body: bytes, track_duplicates: bool) -> tuple[bytes, list[str]]:
    """The patch re-encoded (each attempt of the update loop decodes a fresh copy, which the
    merge may modify) and the duplicate fields it repeats."""
    try:
        value, dups = serializers.decode(body, JSON, track_duplicates=track_duplicates)
    except serializers.DecodeError as e:
        raise bad_request(str(e)) from None
    if value is None:  # null into a map: an empty patch
        value = {}
    if not isinstance(value, dict):
        raise bad_request(f"json: cannot unmarshal {json_kind(value)} into Go value of type "
                          "map[string]interface {}")
    return orjson.dumps(value), dups


async def handle(scope: Scope) -> web.StreamResponse:
    request = scope.request
    patch_type = media_type_of(request.headers.get("Content-Type", ""))
    node = _schema_node(scope)
    fm = apply.field_manager(scope) if node is not None else None
    accepted: tuple[str, ...] = SUPPORTED_PATCH_TYPES if node is not None \
        else CUSTOM_RESOURCE_PATCH_TYPES
    if fm is not None:
        accepted = APPLY_PATCH_TYPES
    if patch_type not in accepted:
        raise unsupported_media_type(accepted)
    body = await read_body(request)
    if patch_type == APPLY_PATCH_YAML and fm is not None:
        return await apply.handle_apply(scope, body, fm)
    manager = apply.manager_name(scope)
    opts = write_options(request.query, request.headers.get("User-Agent", ""),
                         kind="PatchOptions", force_forbidden=True)
    strategic: bytes | None = None
    strategic_dups: list[str] = []
    if patch_type == JSON_PATCH:
        json_patch = _decode_json_patch(body)
        merge: Any = None
    elif patch_type == STRATEGIC_MERGE_PATCH:
        json_patch = None
        merge = None
        strategic, strategic_dups = _decode_strategic_patch(
            body, opts.field_validation != fieldvalidation.IGNORE)
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
        patch_text = ""
        if strategic is not None and node is not None:
            smp = orjson.loads(strategic)
            try:
                doc = strategicpatch.apply(doc, smp, node)
            except strategicpatch.StrategicMergePatchError as e:
                raise strategicpatch.api_error(e) from None
            if opts.field_validation == fieldvalidation.STRICT:
                # upstream prints the patch as the merge left it, before decoding the result
                patch_text = go_format(smp)
        elif json_patch is not None:
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
        if meta is None:  # patched away: the typed object has empty metadata (name check)
            meta = doc["metadata"] = {}
        if not isinstance(meta, dict):
            raise bad_request(f"{scope.kind}.metadata: must be an object")
        if strategic is not None:
            _strategic_field_validation(scope, doc, strategic_dups, opts.field_validation,
                                        patch_text)
        else:
            apply_field_validation(scope, doc, [], opts.field_validation, decode_prefix=False)
        check_name(scope, doc)
        if scope.store.info.namespaced and not meta.get("namespace"):
            meta["namespace"] = scope.ctx.namespace
        patched: Object = apply.record_update(scope, fm, current, doc, manager)
        return patched

    result, _ = await scope.store.update(scope.ctx, scope.info.name, transform, opts)
    return write_object(scope, 200, result)


def _strategic_field_validation(scope: Scope, doc: dict[str, Any], duplicates: list[str],
                                directive: str, patch_text: str) -> None:
    """Unknown fields of the merged object are dropped; with the patch's duplicate fields
    they are warnings under Warn and, under Strict, upstream's 422 on the field ``patch``
    (the patch printed as Go prints a map)."""
    unknown = fieldvalidation.drop_unknown_fields(doc, scope.kind, scope.api_version)
    if directive == fieldvalidation.IGNORE:
        return
    # upstream: the patch's own strict errors (duplicates) come before the object's
    problems = fieldvalidation.field_problems([], duplicates) + \
        fieldvalidation.field_problems(unknown, [])
    if not problems:
        return
    if directive == fieldvalidation.STRICT:
        cause = validation.invalid("patch", patch_text, fieldvalidation.strict_message(problems))
        raise invalid("", "", "", [cause])
    scope.warnings.extend(problems)


def _check_type_meta_unchanged(scope: Scope, current: Object, doc: dict[str, Any]) -> None:
    for key in ("apiVersion", "kind"):
        want = current.get(key)
        have = doc.get(key)
        if have is None and want is not None:
            doc[key] = want
        elif want is not None and have != want:
            raise bad_request(f"{key} of the patched object ({have}) does not match the "
                              f"object's ({want})")

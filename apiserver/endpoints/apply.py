"""Server-side apply over HTTP and field ownership on every write (upstream
``handlers/patch.go`` ``applyPatcher`` and the ``FieldManager`` calls of the create, update and
patch handlers).

``field_manager(scope)`` is the endpoint's :class:`FieldManager` (None where fields are not
tracked: kinds the schema does not describe, sub-resources of another kind).
``record_update`` runs it on a non-apply write: the object is defaulted first (upstream
defaults while decoding, so defaulted fields are owned by the writer) and the write's fields
join its manager's ``Update`` entry. ``handle_apply`` serves ``application/apply-patch+yaml``.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any, Final

import orjson
import yaml

from apiserver.api import schema
from apiserver.api.fieldmanager import FieldManager, manager_or_user_agent
from apiserver.api.fieldmanager.manager import UnknownError
from apiserver.api.fieldmanager.options import patch_options_causes
from apiserver.endpoints import fieldvalidation, serializers
from apiserver.endpoints.negotiation import JSON, YAML
from apiserver.endpoints.params import options_invalid, parse_bool, write_options
from apiserver.endpoints.response import write_object
from apiserver.status import APIError, bad_request

if TYPE_CHECKING:
    from aiohttp import web

    from apiserver.endpoints.response import Scope
    from apiserver.registry.interface import Object, WriteOptions

# Top-level fields that are not the object's content (never reset by a sub-resource).
_META_FIELDS: Final = frozenset({"apiVersion", "kind", "metadata"})
_TYPE_FAILURE: Final = "failed to create typed patch object"


@functools.lru_cache(maxsize=512)
def _manager(group: str, version: str, kind: str, subresource: str,
             reset_fields: tuple[str, ...]) -> FieldManager | None:
    try:
        return FieldManager.for_kind(group, version, kind, subresource=subresource,
                                     reset_fields=reset_fields)
    except KeyError:
        return None


def reset_fields(group: str, version: str, kind: str, subresource: str,
                 has_status: bool) -> tuple[str, ...]:
    """Upstream's strategy ``GetResetFields``: the main resource of a kind with a status
    sub-resource does not change ``status``; ``/status`` changes nothing but ``status`` (and
    metadata); ``/finalize`` does not change ``status``."""
    if subresource == "status":
        node = schema.for_kind(group, version, kind) or {}
        props = node.get("properties") or {}
        return tuple(sorted(k for k in props if k not in _META_FIELDS and k != "status"))
    if subresource == "finalize" or (subresource == "" and has_status):
        return ("status",)
    return ()


def field_manager(scope: Scope) -> FieldManager | None:
    info = scope.store.info
    if info.sub_kind:
        return None  # another kind (Scale, TokenRequest, ...): not tracked here
    group, _, version = scope.api_version.rpartition("/")
    strategy = getattr(scope.store, "strategy", None)
    has_status = bool(getattr(strategy, "has_status", False))
    resets = reset_fields(group, version, scope.kind, info.subresource, has_status)
    return _manager(group, version, scope.kind, info.subresource, resets)


def manager_name(scope: Scope) -> str:
    request = scope.request
    return manager_or_user_agent(request.query.get("fieldManager"),
                                 request.headers.get("User-Agent", ""))


def default_object(scope: Scope, obj: Object) -> None:
    """The strategy's defaulting (idempotent; the store runs it again). An object whose shape
    the defaulting cannot walk is left for the store's checks to refuse."""
    strategy = getattr(scope.store, "strategy", None)
    if strategy is None:
        return
    try:
        strategy.default(obj)
        strategy.drop_empty_fields(obj)
    except (TypeError, AttributeError, KeyError, ValueError, IndexError):
        pass


def record_update(scope: Scope, fm: FieldManager | None, live: Object | None, new: Object,
                  manager: str) -> Object:
    """``new`` (defaulted) with ``manager``'s Update recorded in its managedFields."""
    if fm is None:
        return new
    default_object(scope, new)
    out: Object = fm.update(live, new, manager)
    return out


# ---- apply ------------------------------------------------------------------------------------


def _apply_options(scope: Scope) -> tuple[WriteOptions, str, bool]:
    """PatchOptions of an apply: ``fieldManager`` is required, ``force`` allowed (upstream
    ValidatePatchOptions: a 422 on PatchOptions listing every problem)."""
    request = scope.request
    query = request.query
    raw_manager = query.get("fieldManager")
    force_value = query.get("force")
    force = parse_bool(force_value) if force_value is not None else None
    causes: list[dict[str, str]] = [
        c for c in patch_options_causes(raw_manager, apply=True, force=force)
        if c.get("field") == "fieldManager" and c.get("reason") == "FieldValueRequired"]
    try:
        opts = write_options(query, request.headers.get("User-Agent", ""), kind="PatchOptions")
    except APIError as e:
        if not causes:
            raise
        raise options_invalid("PatchOptions", causes + list(e.details.get("causes") or [])
                              ) from None
    if causes:
        raise options_invalid("PatchOptions", causes)
    return opts, str(raw_manager), bool(force)


def _decode_config(body: bytes) -> tuple[dict[str, Any], bool]:
    """The applied configuration (YAML, JSON being YAML) and whether it repeats a key."""
    media = JSON if body.lstrip()[:1] == b"{" else YAML
    try:
        value, dups = serializers.decode(body, media, track_duplicates=True)
    except serializers.DecodeError as e:
        if media == JSON:  # not JSON after all: YAML may still read it
            try:
                value, dups = serializers.decode(body, YAML)
            except serializers.DecodeError as e2:
                raise bad_request(f"error decoding YAML: {e2}") from None
        else:
            raise bad_request(f"error decoding YAML: {e}") from None
    if value is None:
        value = {}
    if not isinstance(value, dict):
        kind = "array" if isinstance(value, list) else (
            "string" if isinstance(value, str) else
            "bool" if isinstance(value, bool) else "number")
        raise bad_request("error decoding YAML: error unmarshaling JSON: while decoding JSON: "
                          f"json: cannot unmarshal {kind} into Go value of type "
                          "map[string]interface {}")
    return value, bool(dups)


def _go_key(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def duplicate_key_error(body: bytes) -> str:
    """The strict YAML decoder's error for repeated mapping keys (go-yaml v2 wording, as
    sigs.k8s.io/yaml's UnmarshalStrict reports it); "" when nothing repeats."""
    try:
        root = yaml.compose(body, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return ""
    lines: list[str] = []
    stack: list[Any] = [root] if root is not None else []
    seen_nodes: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key, val in node.value:
                if isinstance(key, yaml.ScalarNode):
                    if key.value in seen:
                        lines.append(f"  line {key.start_mark.line + 1}: key "
                                     f"{_go_key(key.value)} already set in map")
                    seen.add(key.value)
                stack.append(val)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    if not lines:
        return ""
    lines.sort(key=lambda s: int(s.split()[1].rstrip(":")))
    return "error converting YAML to JSON: yaml: unmarshal errors:\n" + "\n".join(lines)


async def handle_apply(scope: Scope, body: bytes, fm: FieldManager) -> web.StreamResponse:
    opts, manager, force = _apply_options(scope)
    config, repeats = _decode_config(body)
    frozen = orjson.dumps(config)
    strict_error = duplicate_key_error(body) if repeats and \
        opts.field_validation != fieldvalidation.IGNORE else ""
    base_warnings = len(scope.warnings)

    async def transform(current: Object | None) -> Object:
        del scope.warnings[base_warnings:]  # a retried attempt warns afresh
        cfg = orjson.loads(frozen)
        try:
            result = fm.apply(current, cfg, manager, force=force)
        except UnknownError as e:
            if e.message.startswith(_TYPE_FAILURE):
                # upstream answers 500 for a configuration its typed objects cannot hold
                # (kubernetes/kubernetes#122480); bad input gets a 400 here, same words
                raise bad_request(e.message) from None
            raise
        # upstream checks the YAML strictly after the merge (a conflict comes first)
        if strict_error:
            if opts.field_validation == fieldvalidation.STRICT:
                raise bad_request(f"error strict decoding YAML: {strict_error}")
            scope.warnings.append(strict_error)
        if current is not None and not result.changed:
            return current  # nothing to write: the store keeps the resourceVersion
        out: Object = result.object
        default_object(scope, out)
        return out

    obj, created = await scope.store.update(scope.ctx, scope.info.name, transform, opts,
                                            force_allow_create=True)
    return write_object(scope, 201 if created else 200, obj)

"""Field validation of request bodies (SPEC 4.8.5, upstream ``fieldValidation``).

Known fields come from the v1.33 schema data of ``apiserver.protobuf`` (every field of
every built-in kind, at every depth, as upstream's Go types know them: inline structs
flattened, maps of objects and lists of objects walked, free-form values such as
RawExtension, FieldsV1, IntOrString and Quantity left alone). Kinds the schema does not
know (custom resources, until their schemas arrive) fall back to a smaller table: the top
level of the kinds enumerated below, ``metadata`` (ObjectMeta), its ``ownerReferences``
items and ``managedFields`` entries. Unknown fields are always removed from the object;
the directive decides what the client hears:

- ``Strict``: 400 listing every unknown and duplicate field;
- ``Warn`` (default): success with one ``Warning: 299 - "..."`` header per field;
- ``Ignore``: nothing.
"""

from __future__ import annotations

import functools
from typing import Any, Final

from apiserver import protobuf
from apiserver.protobuf.schema import Field, Kind, Message, Special, message

IGNORE: Final = "Ignore"
WARN: Final = "Warn"
STRICT: Final = "Strict"
DIRECTIVES: Final = ("", IGNORE, STRICT, WARN)  # sorted, as upstream lists them

_COMMON: Final = frozenset({"apiVersion", "kind", "metadata"})

OBJECT_META_FIELDS: Final = frozenset({
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
    "annotations", "ownerReferences", "finalizers", "managedFields",
})
OWNER_REFERENCE_FIELDS: Final = frozenset({
    "apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion",
})
MANAGED_FIELDS_ENTRY_FIELDS: Final = frozenset({
    "manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1", "subresource",
})

# Top-level fields per kind (besides apiVersion, kind, metadata). Extended with
# register_kind_fields() by the registry as it learns more kinds.
_KIND_FIELDS: dict[str, frozenset[str]] = {
    "ConfigMap": frozenset({"data", "binaryData", "immutable"}),
    "Secret": frozenset({"data", "stringData", "type", "immutable"}),
    "ServiceAccount": frozenset({"secrets", "imagePullSecrets",
                                 "automountServiceAccountToken"}),
    "Namespace": frozenset({"spec", "status"}),
    "Event": frozenset({
        "involvedObject", "reason", "message", "source", "firstTimestamp", "lastTimestamp",
        "count", "type", "eventTime", "series", "action", "related", "reportingComponent",
        "reportingInstance",
    }),
    "Lease": frozenset({"spec"}),
    "StatefulSet": frozenset({"spec", "status"}),
    "Scale": frozenset({"spec", "status"}),
}


def register_kind_fields(kind: str, fields: frozenset[str] | set[str]) -> None:
    """Declare the top-level fields of ``kind`` (apiVersion, kind, metadata implied)."""
    _KIND_FIELDS[kind] = frozenset(fields)


def _prune(obj: dict[str, Any], known: frozenset[str], path: str, out: list[str]) -> None:
    for key in [k for k in obj if k not in known]:
        out.append(f"{path}.{key}" if path else key)
        del obj[key]


@functools.cache
def _fields_by_json_name(name: str) -> dict[str, Field]:
    """The JSON members of message ``name``, inline (embedded) structs flattened."""
    out: dict[str, Field] = {}
    for f in message(name).ordered:
        if f.inline and f.message is not None:
            out.update(_fields_by_json_name(f.message))
        else:
            out[f.name] = f
    return out


@functools.cache
def _has_type_meta(name: str) -> bool:
    """Whether the Go type of message ``name`` embeds TypeMeta (apiVersion/kind are then
    known fields even when nested, as in a StatefulSet's volumeClaimTemplates). The schema
    data does not say; a type with ``metadata`` or an options type is taken to."""
    return "metadata" in _fields_by_json_name(name) or name.endswith("Options")


def _walk_message(obj: dict[str, Any], msg: Message, path: str, out: list[str],
                  top: bool = False) -> None:
    fields = _fields_by_json_name(msg.name)
    for key in list(obj):
        f = fields.get(key)
        child = f"{path}.{key}" if path else key
        if f is None:
            if key in ("apiVersion", "kind") and (top or _has_type_meta(msg.name)):
                continue
            out.append(child)
            del obj[key]
            continue
        value = obj[key]
        if f.kind == Kind.MESSAGE and f.message is not None and f.special == Special.NONE:
            sub = message(f.message)
            if f.repeated and isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, dict):
                        _walk_message(item, sub, f"{child}[{i}]", out)
            elif isinstance(value, dict):
                _walk_message(value, sub, child, out)
        elif (f.kind == Kind.MAP and f.map is not None and f.map.value_message is not None
              and f.map.value_special == Special.NONE and isinstance(value, dict)):
            sub = message(f.map.value_message)
            for k, item in value.items():
                if isinstance(item, dict):
                    _walk_message(item, sub, f"{child}[{k}]", out)


def _schema_of(api_version: str, kind: str) -> Message | None:
    try:
        return message(protobuf.type_name_for(api_version, kind))
    except protobuf.UnknownKind:
        return None


def drop_unknown_fields(obj: dict[str, Any], kind: str, api_version: str = "") -> list[str]:
    """Remove unknown fields from ``obj`` in place; return their dotted paths in document
    order."""
    unknown: list[str] = []
    schema = _schema_of(api_version, kind) if api_version else None
    if schema is not None:
        _walk_message(obj, schema, "", unknown, top=True)
        return unknown
    top = _KIND_FIELDS.get(kind)
    if top is not None:
        _prune(obj, _COMMON | top, "", unknown)
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        _prune(meta, OBJECT_META_FIELDS, "metadata", unknown)
        refs = meta.get("ownerReferences")
        if isinstance(refs, list):
            for i, ref in enumerate(refs):
                if isinstance(ref, dict):
                    _prune(ref, OWNER_REFERENCE_FIELDS, f"metadata.ownerReferences[{i}]",
                           unknown)
        entries = meta.get("managedFields")
        if isinstance(entries, list):
            for i, entry in enumerate(entries):
                if isinstance(entry, dict):
                    _prune(entry, MANAGED_FIELDS_ENTRY_FIELDS, f"metadata.managedFields[{i}]",
                           unknown)
    return unknown


def field_problems(unknown: list[str], duplicates: list[str]) -> list[str]:
    """The strict-decoding error texts, unknown fields first (upstream order)."""
    return ([f'unknown field "{p}"' for p in unknown]
            + [f'duplicate field "{p}"' for p in duplicates])


def strict_message(problems: list[str]) -> str:
    return "strict decoding error: " + ", ".join(problems)


def warning_header(text: str) -> str:
    """A ``Warning`` header value (RFC 7234 code 299, agent ``-``), text quoted as Go's
    strconv.Quote would for ASCII text."""
    quoted = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'299 - "{quoted}"'

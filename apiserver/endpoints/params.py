"""Query parameters (SPEC 4.2) and delete-option bodies, parsed and validated as upstream:
conversion errors are 400 BadRequest, rule violations are 422 Invalid on the options kind
(``ListOptions.meta.plat.io "" is invalid: ...``), and the combinations of SPEC 8.1 that the
storage layer would refuse are refused here so that a store only sees valid options.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from multidict import MultiMapping

from apiserver.endpoints.fieldvalidation import DIRECTIVES, WARN
from apiserver.registry.interface import DeleteOptions, ListOptions, WriteOptions
from apiserver.status import APIError, bad_request, invalid

META_GROUP: Final = "meta.plat.io"
DRY_RUN_ALL: Final = "All"
FIELD_MANAGER_MAX_LENGTH: Final = 128
PROPAGATION_POLICIES: Final = ("Foreground", "Background", "Orphan")
IGNORE_READ_ERROR: Final = "ignoreStoreReadErrorWithClusterBreakingPotential"

Query = MultiMapping[str]


# ---- field errors (upstream util/validation/field) -------------------------------------------


def go_repr(value: Any) -> str:
    """A value as Go's field errors print it (%q for strings, %#v for string slices)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[]string{" + ", ".join(go_repr(v) for v in value) + "}"
    if value is None:
        return "null"
    return str(value)


def forbidden(field: str, detail: str) -> dict[str, str]:
    return {"reason": "FieldValueForbidden", "message": f"Forbidden: {detail}", "field": field}


def not_supported(field: str, value: Any, supported: list[str] | tuple[str, ...]
                  ) -> dict[str, str]:
    values = ", ".join(f'"{s}"' for s in supported)
    return {"reason": "FieldValueNotSupported",
            "message": f"Unsupported value: {go_repr(value)}: supported values: {values}",
            "field": field}


def invalid_value(field: str, value: Any, detail: str) -> dict[str, str]:
    return {"reason": "FieldValueInvalid",
            "message": f"Invalid value: {go_repr(value)}: {detail}", "field": field}


def required(field: str, detail: str) -> dict[str, str]:
    return {"reason": "FieldValueRequired", "message": f"Required value: {detail}",
            "field": field}


def options_invalid(kind: str, causes: list[dict[str, str]]) -> APIError:
    return invalid(kind, META_GROUP, "", causes)


# ---- scalar conversions (upstream runtime query-parameter conversion) ---------------------


def parse_bool(value: str) -> bool:
    """Upstream Convert_Slice_string_To_bool: only "0" and "false" (any case) are false."""
    return not (value == "0" or value.lower() == "false")


def parse_int(value: str) -> int:
    v = value.strip()
    try:
        if not v or v != value or not (v.lstrip("+-").isdigit()):
            raise ValueError
        n = int(v)
    except ValueError:
        raise bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax') from None
    if not -(2**63) <= n < 2**63:
        raise bad_request(f'strconv.ParseInt: parsing "{value}": value out of range')
    return n


def _first(query: Query, name: str) -> str | None:
    values = query.getall(name, [])
    return values[0] if values else None


def _bool_param(query: Query, name: str) -> bool | None:
    v = _first(query, name)
    return None if v is None else parse_bool(v)


def _int_param(query: Query, name: str) -> int | None:
    v = _first(query, name)
    return None if v is None else parse_int(v)


def dry_run_values(query: Query) -> list[str]:
    # An empty value (``?dryRun``) counts as absent (SPEC 4.2: may be given with no value).
    return [v for v in query.getall("dryRun", []) if v != ""]


def dry_run_causes(values: list[str]) -> list[dict[str, str]]:
    if all(v == DRY_RUN_ALL for v in values):
        return []
    return [not_supported("dryRun", values, [DRY_RUN_ALL])]


# ---- write options ---------------------------------------------------------------------------


def manager_from_user_agent(user_agent: str) -> str:
    """Upstream prefixFromUserAgent: the part before the first "/", at most 128 bytes."""
    return user_agent.split("/", 1)[0][:FIELD_MANAGER_MAX_LENGTH]


def _field_manager_causes(manager: str) -> list[dict[str, str]]:
    causes: list[dict[str, str]] = []
    if len(manager.encode("utf-8")) > FIELD_MANAGER_MAX_LENGTH:
        causes.append({"reason": "FieldValueTooLong",
                       "message": f"Too long: may not be more than {FIELD_MANAGER_MAX_LENGTH}"
                                  " bytes", "field": "fieldManager"})
    for i, ch in enumerate(manager):
        if not ch.isprintable():
            causes.append(invalid_value(
                "fieldManager", manager,
                f"invalid character U+{ord(ch):04X} (at position {i})"))
    return causes


def write_options(query: Query, user_agent: str, *, kind: str, force_forbidden: bool = False
                  ) -> WriteOptions:
    """CreateOptions / UpdateOptions / PatchOptions (``kind`` names which, for errors)."""
    dry = dry_run_values(query)
    manager = _first(query, "fieldManager") or ""
    validation = _first(query, "fieldValidation") or ""
    causes: list[dict[str, str]] = []
    if force_forbidden and _first(query, "force") is not None:
        causes.append(forbidden("force", "may not be specified for non-apply patch"))
    causes += _field_manager_causes(manager)
    causes += dry_run_causes(dry)
    if validation not in DIRECTIVES:
        causes.append(not_supported("fieldValidation", validation, DIRECTIVES))
    if causes:
        raise options_invalid(kind, causes)
    return WriteOptions(
        dry_run=bool(dry),
        field_manager=manager or manager_from_user_agent(user_agent),
        field_validation=validation or WARN,
    )


# ---- list / watch options --------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TableParams:
    include_object: str = "Metadata"  # "None" | "Object" | "Metadata"


def table_params(query: Query) -> TableParams:
    value = _first(query, "includeObject") or ""
    if value not in ("", "None", "Object", "Metadata"):
        raise options_invalid("TableOptions", [invalid_value(
            "includeObject", value, "must be 'Metadata', 'Object', 'None', or empty")])
    return TableParams(include_object=value or "Metadata")


def list_options(query: Query, *, watch: bool, name: str = "") -> ListOptions:
    """ListOptions for list, watch and deletecollection. ``name`` is set for a watch on
    one object's path (its field selector becomes metadata.name=<name>)."""
    rv = _first(query, "resourceVersion") or ""
    match = _first(query, "resourceVersionMatch") or ""
    cont = _first(query, "continue") or ""
    limit = _int_param(query, "limit") or 0
    timeout = _int_param(query, "timeoutSeconds") or 0
    send_initial = _bool_param(query, "sendInitialEvents")
    bookmarks = bool(_bool_param(query, "allowWatchBookmarks"))
    field_selector = _first(query, "fieldSelector") or ""
    label_selector = _first(query, "labelSelector") or ""

    causes: list[dict[str, str]] = []
    if watch:
        if send_initial is not None and match != "NotOlderThan":
            causes.append(forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
        if match:
            if send_initial is None:
                causes.append(forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
                    "provided"))
            if match != "NotOlderThan":
                causes.append(not_supported("resourceVersionMatch", match, ["NotOlderThan"]))
            if cont:
                causes.append(forbidden("resourceVersionMatch",
                                        "resourceVersionMatch is forbidden when continue is "
                                        "provided"))
    else:
        if match:
            if not rv:
                causes.append(forbidden("resourceVersionMatch",
                                        "resourceVersionMatch is forbidden unless "
                                        "resourceVersion is provided"))
            if cont:
                causes.append(forbidden("resourceVersionMatch",
                                        "resourceVersionMatch is forbidden when continue is "
                                        "provided"))
            if match not in ("Exact", "NotOlderThan"):
                causes.append(not_supported("resourceVersionMatch", match,
                                            ["Exact", "NotOlderThan", ""]))
            if match == "Exact" and rv == "0":
                causes.append(forbidden("resourceVersionMatch",
                                        'resourceVersionMatch "exact" is forbidden for '
                                        'resourceVersion "0"'))
        if send_initial is not None:
            causes.append(forbidden("sendInitialEvents", "sendInitialEvents is forbidden for "
                                                         "list"))
    if causes:
        raise options_invalid("ListOptions", causes)
    if not watch and cont and rv not in ("", "0"):
        # SPEC 8.1: limit + continue + a non-zero resourceVersion (storage's wording).
        raise bad_request("specifying resource version is not allowed when using continue")

    if name:
        if field_selector.strip():
            if not _selects_exactly_name(field_selector, name):
                raise bad_request("fieldSelector metadata.name doesn't match requested name")
        else:
            field_selector = f"metadata.name={name}"
    return ListOptions(
        label_selector=label_selector, field_selector=field_selector, resource_version=rv,
        resource_version_match=match, limit=max(limit, 0), continue_token=cont, watch=watch,
        allow_watch_bookmarks=bookmarks, send_initial_events=send_initial,
        timeout_seconds=max(timeout, 0),
    )


def _selects_exactly_name(selector: str, name: str) -> bool:
    """Upstream RequiresExactMatch("metadata.name") == name over a comma list of terms."""
    for term in selector.split(","):
        for op in ("==", "="):
            key, sep, value = term.partition(op)
            if sep and "!" not in key and key.strip() == "metadata.name":
                return value.strip() == name
    return False


# ---- delete options --------------------------------------------------------------------------

_DELETE_OPTION_KEYS: Final = ("dryRun", "gracePeriodSeconds", "orphanDependents",
                              "preconditions", "propagationPolicy")


def _type_error(field: str, want: str, value: Any) -> APIError:
    got = {bool: "bool", int: "number", float: "number", str: "string", list: "array",
           dict: "object"}.get(type(value), "null")
    return bad_request(f"json: cannot unmarshal {got} into Go struct field "
                       f"DeleteOptions.{field} of type {want}")


def _delete_body_fields(body: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if (v := body.get("dryRun")) is not None:
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise _type_error("dryRun", "[]string", v)
        out["dryRun"] = v
    if (v := body.get("gracePeriodSeconds")) is not None:
        if isinstance(v, bool) or not isinstance(v, int):
            raise _type_error("gracePeriodSeconds", "int64", v)
        out["gracePeriodSeconds"] = v
    for key in ("orphanDependents", IGNORE_READ_ERROR):
        if (v := body.get(key)) is not None:
            if not isinstance(v, bool):
                raise _type_error(key, "bool", v)
            out[key] = v
    if (v := body.get("propagationPolicy")) is not None:
        if not isinstance(v, str):
            raise _type_error("propagationPolicy", "v1.DeletionPropagation", v)
        out["propagationPolicy"] = v
    if (v := body.get("preconditions")) is not None:
        if not isinstance(v, dict):
            raise _type_error("preconditions", "v1.Preconditions", v)
        for key in ("uid", "resourceVersion"):
            if v.get(key) is not None and not isinstance(v[key], str):
                raise _type_error(f"preconditions.{key}", "string", v[key])
        out["preconditions"] = v
    return out


def _delete_query_fields(query: Query) -> dict[str, Any]:
    out: dict[str, Any] = {}
    dry = dry_run_values(query)
    if dry:
        out["dryRun"] = dry
    if (g := _int_param(query, "gracePeriodSeconds")) is not None:
        out["gracePeriodSeconds"] = g
    for key in ("orphanDependents", IGNORE_READ_ERROR):
        if (b := _bool_param(query, key)) is not None:
            out[key] = b
    if (p := _first(query, "propagationPolicy")) is not None:
        out["propagationPolicy"] = p
    return out


UNSAFE_DELETE_GATE: Final = "AllowUnsafeMalformedObjectDeletion"


def delete_options(query: Query, body: Mapping[str, Any] | None, *, collection: bool = False,
                   unsafe_delete_gate: bool = False) -> DeleteOptions:
    """DeleteOptions from the body when there is one, else from the query (as upstream: a
    body replaces the query form entirely), validated as upstream ValidateDeleteOptions.
    While the AllowUnsafeMalformedObjectDeletion gate is off the unsafe option is dropped
    before validation, as upstream's handler does."""
    f = _delete_body_fields(body) if body is not None else _delete_query_fields(query)
    if not unsafe_delete_gate:
        f.pop(IGNORE_READ_ERROR, None)
    causes: list[dict[str, str]] = []
    policy = f.get("propagationPolicy")
    if f.get("orphanDependents") is not None and policy is not None:
        causes.append(invalid_value("propagationPolicy", policy,
                                    "orphanDependents and deletionPropagation cannot be both "
                                    "set"))
    if policy is not None and policy not in PROPAGATION_POLICIES:
        causes.append(not_supported("propagationPolicy", policy,
                                    [*PROPAGATION_POLICIES, "nil"]))
    causes += dry_run_causes(f.get("dryRun", []))
    unsafe = bool(f.get(IGNORE_READ_ERROR))
    if unsafe:
        # SPEC 4.6: the unsafe delete stands alone.
        for key in _DELETE_OPTION_KEYS:
            if key in f:
                value = f[key]
                shown = "" if key == "preconditions" else value
                causes.append(invalid_value(key, shown, "can not be set together with "
                                                        f"{IGNORE_READ_ERROR}"))
    if causes:
        raise options_invalid("DeleteOptions", causes)
    if unsafe and collection:
        raise options_invalid("DeleteOptions", [invalid_value(
            IGNORE_READ_ERROR, True,
            "is not allowed with DELETECOLLECTION, try again after removing the option")])
    pre = f.get("preconditions") or {}
    return DeleteOptions(
        dry_run=bool(f.get("dryRun")),
        grace_period_seconds=f.get("gracePeriodSeconds"),
        precondition_uid=pre.get("uid"),
        precondition_resource_version=pre.get("resourceVersion"),
        propagation_policy=policy,
        orphan_dependents=f.get("orphanDependents"),
        ignore_store_read_error=unsafe,
    )

"""Field errors and object-metadata validation with upstream's field paths and messages
(``apimachinery/pkg/util/validation``, ``apimachinery/pkg/api/validation/objectmeta.go``).

A cause is upstream's StatusCause: ``{"reason": "FieldValueInvalid", "message": "Invalid
value: \\"X\\": ...", "field": "metadata.name"}``; ``apiserver.status.invalid`` renders a list
of them as one 422.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

Cause = dict[str, str]

DNS1123_LABEL_MAX: Final = 63
DNS1123_SUBDOMAIN_MAX: Final = 253
QUALIFIED_NAME_MAX: Final = 63
LABEL_VALUE_MAX: Final = 63
TOTAL_ANNOTATION_SIZE: Final = 256 * 1024

_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT = _LABEL_FMT + r"(\." + _LABEL_FMT + ")*"
_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LVALUE_FMT = "(" + _QNAME_FMT + ")?"
_CONFIGMAP_KEY_FMT = "[-._a-zA-Z0-9]+"

_LABEL_RE: Final = re.compile(f"^{_LABEL_FMT}$")
_SUBDOMAIN_RE: Final = re.compile(f"^{_SUBDOMAIN_FMT}$")
_QNAME_RE: Final = re.compile(f"^{_QNAME_FMT}$")
_LVALUE_RE: Final = re.compile(f"^{_LVALUE_FMT}$")
_CONFIGMAP_KEY_RE: Final = re.compile(f"^{_CONFIGMAP_KEY_FMT}$")

STANDARD_FINALIZERS: Final = frozenset({"platform", "orphan", "foregroundDeletion"})


def go_quote(s: str) -> str:
    """Go's %q for the strings we meet (ASCII-ish): a JSON string is close enough."""
    return json.dumps(s, ensure_ascii=False)


class Raw(str):
    """A value printed as it is (e.g. ``0x0``, upstream's %#v of a uint64 zero)."""


def go_value(value: Any) -> str:
    """How upstream's field.Invalid prints a value: strings quoted, ints bare, maps and lists
    in Go syntax."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{go_quote(str(k))}:{go_quote(str(v))}" for k, v in
                          sorted(value.items(), key=lambda kv: str(kv[0])))
        return "map[string]string{" + inner + "}"
    if isinstance(value, list):
        return "[]string{" + ", ".join(go_quote(str(x)) for x in value) + "}"
    if value is None:
        return "null"
    return go_quote(str(value))


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    ex = ",  or ".join(f"'{e}'" for e in examples)
    return f"{msg} (e.g. {ex}, regex used for validation is '{fmt}')"


def dns1123_label_errors(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > DNS1123_LABEL_MAX:
        errs.append(f"must be no more than {DNS1123_LABEL_MAX} characters")
    if not _LABEL_RE.match(value):
        errs.append(_regex_error(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
            "'-', and must start and end with an alphanumeric character", _LABEL_FMT,
            "my-name", "123-abc"))
    return errs


def dns1123_subdomain_errors(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(f"must be no more than {DNS1123_SUBDOMAIN_MAX} characters")
    if not _SUBDOMAIN_RE.match(value):
        errs.append(_regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters,"
            " '-' or '.', and must start and end with an alphanumeric character",
            _SUBDOMAIN_FMT, "example.com"))
    return errs


def path_segment_errors(value: str) -> list[str]:
    """Upstream IsPathSegmentName: what any name must be to fit in a URL path."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


def qualified_name_errors(value: str) -> list[str]:
    """Upstream IsQualifiedName (label keys, annotation keys, finalizer names)."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + e for e in dns1123_subdomain_errors(prefix))
    else:
        return [_regex_error(
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and "
            "must start and end with an alphanumeric character", _QNAME_FMT,
            "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX:
        errs.append(f"name part must be no more than {QUALIFIED_NAME_MAX} characters")
    if name and not _QNAME_RE.match(name):
        errs.append("name part " + _regex_error(
            "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character", _QNAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def label_value_errors(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > LABEL_VALUE_MAX:
        errs.append(f"must be no more than {LABEL_VALUE_MAX} characters")
    if not _LVALUE_RE.match(value):
        errs.append(_regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-',"
            " '_' or '.', and must start and end with an alphanumeric character", _LVALUE_FMT,
            "MyValue", "my_value", "12345"))
    return errs


def config_map_key_errors(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(f"must be no more than {DNS1123_SUBDOMAIN_MAX} characters")
    if not _CONFIGMAP_KEY_RE.match(value):
        errs.append(_regex_error(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            _CONFIGMAP_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    if value in (".", ".."):
        errs.append(f"must not be '{value}'")
    elif value.startswith(".."):
        errs.append("must not start with '..'")
    return errs


# ---------------------------------------------------------------------------------------------
# causes


def invalid(field: str, value: Any, detail: str) -> Cause:
    return {"reason": "FieldValueInvalid",
            "message": f"Invalid value: {go_value(value)}: {detail}", "field": field}


def required(field: str, detail: str = "") -> Cause:
    msg = "Required value" + (f": {detail}" if detail else "")
    return {"reason": "FieldValueRequired", "message": msg, "field": field}


def forbidden(field: str, detail: str) -> Cause:
    return {"reason": "FieldValueForbidden", "message": f"Forbidden: {detail}", "field": field}


def not_supported(field: str, value: Any, supported: list[str]) -> Cause:
    sup = ", ".join(go_quote(s) for s in supported)
    return {"reason": "FieldValueNotSupported",
            "message": f"Unsupported value: {go_value(value)}: supported values: {sup}",
            "field": field}


def duplicate(field: str, value: Any) -> Cause:
    return {"reason": "FieldValueDuplicate", "message": f"Duplicate value: {go_value(value)}",
            "field": field}


def too_long(field: str, limit: int) -> Cause:
    return {"reason": "FieldValueTooLong",
            "message": f"Too long: may not be more than {limit} bytes", "field": field}


def immutable(field: str, value: Any) -> Cause:
    return invalid(field, value, "field is immutable")


def type_invalid(field: str, value: Any, want: str) -> Cause:
    return {"reason": "FieldValueTypeInvalid",
            "message": f"Invalid value: {go_value(value)}: must be {want}", "field": field}


def is_ip(value: Any) -> bool:
    """An IPv4 or IPv6 address (the text of ``value``)."""
    try:
        ipaddress.ip_address(str(value))
    except ValueError:
        return False
    return True


def nonneg(causes: list[Cause], field: str, value: Any) -> None:
    """ValidateNonnegativeField for an optional integer (absent is fine; a non-integer is a
    type error)."""
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool):
        causes.append(type_invalid(field, value, "an integer"))
    elif value < 0:
        causes.append(invalid(field, value, "must be greater than or equal to 0"))


# ---------------------------------------------------------------------------------------------
# object metadata

NameValidator = Callable[[str], list[str]]


def _name_with_prefix(validator: NameValidator, value: str, prefix: bool) -> list[str]:
    # generateName may end with "-": upstream masks a trailing dash before validating
    if prefix and len(value) > 1 and value.endswith("-"):
        value = value[:-1] + "a"
    return validator(value)


def validate_labels(labels: Any, field: str) -> list[Cause]:
    causes: list[Cause] = []
    if labels is None:
        return causes
    if not isinstance(labels, dict):
        return [type_invalid(field, labels, "a map of strings")]
    for k, val in labels.items():
        kerrs = qualified_name_errors(str(k))
        for e in kerrs:
            causes.append(invalid(field, k, e))
        if not isinstance(val, str):
            causes.append(type_invalid(f"{field}[{k}]", val, "a string"))
            continue
        for e in label_value_errors(val):
            causes.append(invalid(field, val, e))
    return causes


def validate_annotations(annotations: Any, field: str) -> list[Cause]:
    causes: list[Cause] = []
    if annotations is None:
        return causes
    if not isinstance(annotations, dict):
        return [type_invalid(field, annotations, "a map of strings")]
    total = 0
    for k, val in annotations.items():
        for e in qualified_name_errors(str(k).lower()):
            causes.append(invalid(field, k, e))
        if not isinstance(val, str):
            causes.append(type_invalid(f"{field}[{k}]", val, "a string"))
            continue
        total += len(str(k)) + len(val)
    if total > TOTAL_ANNOTATION_SIZE:
        causes.append(too_long(field, TOTAL_ANNOTATION_SIZE))
    return causes


def validate_label_selector(sel: Any, field: str) -> list[Cause]:
    """Upstream metav1validation.ValidateLabelSelector."""
    if sel is None:
        return []
    if not isinstance(sel, dict):
        return [type_invalid(field, sel, "a label selector")]
    causes = validate_labels(sel.get("matchLabels"), f"{field}.matchLabels")
    exprs = sel.get("matchExpressions")
    if exprs is None:
        return causes
    if not isinstance(exprs, list):
        return [*causes, type_invalid(f"{field}.matchExpressions", exprs, "a list")]
    for i, expr in enumerate(exprs):
        ef = f"{field}.matchExpressions[{i}]"
        if not isinstance(expr, dict):
            causes.append(type_invalid(ef, expr, "a label selector requirement"))
            continue
        op = expr.get("operator")
        values = expr.get("values") or []
        if not isinstance(values, list):
            causes.append(type_invalid(f"{ef}.values", values, "a list of strings"))
            values = []
        if op in ("In", "NotIn"):
            if not values:
                causes.append(required(f"{ef}.values",
                                       "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                causes.append(forbidden(f"{ef}.values", "may not be specified when `operator` "
                                        "is 'Exists' or 'DoesNotExist'"))
        else:
            causes.append(invalid(f"{ef}.operator", op if isinstance(op, str) else str(op),
                                  "not a valid selector operator"))
        key = expr.get("key")
        for e in qualified_name_errors(key if isinstance(key, str) else ""):
            causes.append(invalid(f"{ef}.key", key, e))
        for j, val in enumerate(values):
            if not isinstance(val, str):
                causes.append(type_invalid(f"{ef}.values[{j}]", val, "a string"))
                continue
            for e in label_value_errors(val):
                causes.append(invalid(f"{ef}.values[{j}]", val, e))
    return causes


def validate_finalizers(finalizers: Any, field: str) -> list[Cause]:
    causes: list[Cause] = []
    if finalizers is None:
        return causes
    if not isinstance(finalizers, list):
        return [type_invalid(field, finalizers, "a list of strings")]
    for i, f in enumerate(finalizers):
        if not isinstance(f, str):
            causes.append(type_invalid(f"{field}[{i}]", f, "a string"))
            continue
        errs = qualified_name_errors(f)
        for e in errs:
            causes.append(invalid(field, f, e))
        if not errs and "/" not in f and f not in STANDARD_FINALIZERS:
            causes.append(invalid(field, f, "name is neither a standard finalizer name nor is "
                                             "it fully qualified"))
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        causes.append(invalid(field, finalizers,
                              "finalizer orphan and foregroundDeletion cannot be both set"))
    return causes


def validate_owner_references(refs: Any, field: str) -> list[Cause]:
    """Upstream ValidateOwnerReferences (field paths without the index, as upstream)."""
    if refs is None:
        return []
    if not isinstance(refs, list):
        return [type_invalid(field, refs, "a list of owner references")]
    causes: list[Cause] = []
    first_controller = ""
    for ref in refs:
        if not isinstance(ref, dict):
            causes.append(type_invalid(field, ref, "an owner reference"))
            continue
        api_version = str(ref.get("apiVersion") or "")
        version = api_version.rsplit("/", 1)[-1]
        if not version:
            causes.append(invalid(f"{field}.apiVersion", api_version,
                                  "version must not be empty"))
        for f in ("kind", "name", "uid"):
            if not ref.get(f):
                causes.append(invalid(f"{field}.{f}", str(ref.get(f) or ""),
                                      f"{f} must not be empty"))
        if ref.get("controller") is True:
            current = f"{ref.get('kind', '')}/{ref.get('name', '')}"
            if first_controller:
                causes.append(invalid(field, Raw("[]v1.OwnerReference{...}"),
                                      'Only one reference can have Controller set to true. '
                                      f'Found "true" in references for {first_controller} and '
                                      f"{current}"))
            else:
                first_controller = current
    return causes


def validate_object_meta(meta: Mapping[str, Any], *, namespaced: bool,
                         name_validator: NameValidator) -> list[Cause]:
    """ValidateObjectMeta: name (or generateName), namespace, labels, annotations,
    finalizers."""
    causes: list[Cause] = []
    name = meta.get("name") or ""
    gen = meta.get("generateName") or ""
    if not isinstance(name, str) or not isinstance(gen, str):
        return [type_invalid("metadata.name", name, "a string")]
    if gen:
        for e in _name_with_prefix(name_validator, gen, True):
            causes.append(invalid("metadata.generateName", gen, e))
    if not name:
        if not gen:
            causes.append(required("metadata.name", "name or generateName is required"))
    else:
        for e in name_validator(name):
            causes.append(invalid("metadata.name", name, e))
    ns = meta.get("namespace") or ""
    if namespaced:
        if not ns:
            causes.append(required("metadata.namespace"))
        else:
            for e in dns1123_label_errors(str(ns)):
                causes.append(invalid("metadata.namespace", ns, e))
    elif ns:
        causes.append(forbidden("metadata.namespace", "not allowed on this type"))
    causes += validate_labels(meta.get("labels"), "metadata.labels")
    causes += validate_annotations(meta.get("annotations"), "metadata.annotations")
    causes += validate_owner_references(meta.get("ownerReferences"),
                                        "metadata.ownerReferences")
    causes += validate_finalizers(meta.get("finalizers"), "metadata.finalizers")
    gen_n = meta.get("generation")
    if isinstance(gen_n, int) and gen_n < 0:
        causes.append(invalid("metadata.generation", gen_n,
                              "must be greater than or equal to 0"))
    return causes


def _go_time(stamp: Any) -> str:
    """A metav1.Time as field errors print it (Go's time.Time String())."""
    try:
        t = datetime.datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return go_quote(str(stamp))
    t = t.astimezone(datetime.UTC)
    return t.strftime("%Y-%m-%d %H:%M:%S") + " +0000 UTC"


def validate_object_meta_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """ValidateObjectMetaUpdate: name, namespace, uid and creationTimestamp immutable; no new
    finalizers on an object being deleted."""
    causes: list[Cause] = []
    for f in ("name", "namespace", "uid"):
        if (new.get(f) or "") != (old.get(f) or ""):
            causes.append(immutable(f"metadata.{f}", new.get(f) or ""))
    # Deletion is the delete verb's: an update may not start it (rest.BeforeUpdate restores
    # both fields when the object is being deleted already).
    stamp = new.get("deletionTimestamp")
    if stamp and not old.get("deletionTimestamp"):
        causes.append(immutable("metadata.deletionTimestamp", Raw(_go_time(stamp))))
    grace = new.get("deletionGracePeriodSeconds")
    if grace != old.get("deletionGracePeriodSeconds"):
        causes.append(immutable("metadata.deletionGracePeriodSeconds", grace))
    if old.get("deletionTimestamp"):
        old_f = set(old.get("finalizers") or [])
        added = [f for f in new.get("finalizers") or [] if f not in old_f]
        if added:
            causes.append(forbidden(
                "metadata.finalizers",
                "no new finalizers can be added if the object is being deleted, found new "
                f"finalizers {go_value(added)}"))
    return causes

"""Decoding a JSON object into a built-in kind as upstream's typed decoder does, driven by the
v1.33 schema (``apiserver.api.schema``).

One walk over the object finds, at every depth:

- unknown fields (removed in place when asked; paths as upstream's strict decoder prints
  them: ``spec.template.spec.containers[0].foo``, map keys as plain steps ``data.key``);
- JSON values of the wrong type, reported with the wording of Go's ``encoding/json``
  (``json: cannot unmarshal string into Go struct field StatefulSetSpec.spec.replicas of
  type int32``: the struct holding the field, the field path without list indices, the Go
  type of the target);
- values refused by the custom decoders of IntOrString, Quantity, Time and MicroTime.

Go's decoder keeps the first plain type error and goes on; an error from a custom decoder
stops it at once and wins over a kept one. :class:`DecodeError` carries whichever wins.

Free-form places are not walked: ``RawExtension``, ``FieldsV1``, ``JSON``, the
``JSONSchemaProps`` family and ``x-kubernetes-preserve-unknown-fields`` nodes.

Each definition is compiled once into a small plan (a dict of field name to (code, checker,
Go type)), so the walk per request is a loop over the object's own keys with the common
scalar cases checked inline.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Final

from apiserver.api import schema
from apiserver.api.gotime import RFC3339_MICRO
from apiserver.api.gotime import canonical as canonical_time
from apiserver.api.gotime import parse_error as time_parse_error
from apiserver.protobuf.schema import Message
from apiserver.protobuf.schema import message as protobuf_message
from apiserver.protobuf.schema import messages as protobuf_messages

Node = Mapping[str, Any]


class DecodeError(Exception):
    """The decoder's error text (the request handler adds the ``<Kind> in version ...``
    prefix)."""


MAX_STRICT_ERRORS: Final = 100  # upstream's decoder stops collecting there

# Where each repeated key of a body is met: object path -> the key whose first occurrence
# follows the repeat in that object (None: the object's end) -> the repeated keys there.
Anchors = dict[str, dict[str | None, list[str]]]


def anchors_from_paths(paths: list[str]) -> Anchors:
    """Anchors when only the repeated keys' paths are known: each at its object's end."""
    out: Anchors = {}
    for p in paths:
        cut = max(p.rfind("."), p.rfind("]"))
        parent, key = (p[:cut + 1].rstrip("."), p[cut + 1:]) if cut >= 0 else ("", p)
        out.setdefault(parent, {}).setdefault(None, []).append(key)
    return out


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as its key/value pairs, repeats included."""


def anchors_from_json(text: str | bytes) -> Anchors:
    """Anchors of the repeated keys of a JSON document, read from its text (the decoded object
    keeps only each key's first position)."""
    out: Anchors = {}
    root = json.loads(text, object_pairs_hook=_Pairs)

    def walk(node: Any, path: str) -> None:
        if isinstance(node, _Pairs):
            seen: set[str] = set()
            repeated: set[str] = set()
            pending: list[str] = []
            last: dict[str, Any] = {}
            for key, value in node:
                if key in seen:
                    if key not in repeated:
                        repeated.add(key)
                        pending.append(key)
                else:
                    if pending:
                        out.setdefault(path, {})[key] = pending
                        pending = []
                    seen.add(key)
                last[key] = value
            if pending:
                out.setdefault(path, {})[None] = pending
            for key, value in last.items():
                walk(value, f"{path}.{key}" if path else key)
        elif isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, f"{path}[{i}]")

    walk(root, "")
    return out


@dataclass(slots=True)
class Outcome:
    """What a walk found: unknown field paths in document order, the strict-decoding problems
    (unknown and duplicate fields, in the order upstream's decoder meets them, at most
    MAX_STRICT_ERRORS) and the first plain type error (None when there is none).

    ``anchors`` place the keys the body repeats. Repeats the decoder never looks at (of
    unknown fields, inside them and inside free-form values) are not reported, as upstream."""

    unknown: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    error: str | None = None
    prune: bool = True
    anchors: Anchors | None = None

    def add_unknown(self, path: str) -> None:
        self.unknown.append(path)
        if len(self.problems) < MAX_STRICT_ERRORS:
            self.problems.append(f"unknown field {go_quote(path)}")

    def add_duplicates(self, keys: list[str], path: str,
                       known: Mapping[str, Any] | None) -> None:
        for key in keys:
            if (known is None or key in known) and len(self.problems) < MAX_STRICT_ERRORS:
                self.problems.append(
                    f"duplicate field {go_quote(f'{path}.{key}' if path else key)}")


def go_quote(s: str) -> str:
    """Go's strconv.Quote: printable characters kept, quotes, backslashes and the rest
    escaped."""
    if s.isprintable() and '"' not in s and "\\" not in s:
        return f'"{s}"'
    out = ['"']
    for c in s:
        if c in '"\\':
            out.append("\\" + c)
        elif c.isprintable():
            out.append(c)
        elif c in "\a\b\f\n\r\t\v":
            out.append({"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
                        "\t": "\\t", "\v": "\\v"}[c])
        elif ord(c) < 0x80:
            out.append(f"\\x{ord(c):02x}")
        elif ord(c) <= 0xFFFF:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(f"\\U{ord(c):08x}")
    return "".join(out) + '"'


# Paths are built only when needed: a chain of (parent, step) pairs from the root (None), a
# step being a key (printed ``.key``), a list index (printed ``[i]``) or a MapKey (printed
# ``[key]``, as validation errors name map entries).
Chain = tuple[Any, str | int] | None


class MapKey(str):
    """A map key step printed as validation paths print it: ``labels[app]``."""

    __slots__ = ()


def chain_path(chain: Chain) -> str:
    """``spec.template.spec.containers[0].name`` from its chain."""
    steps: list[str | int] = []
    while chain is not None:
        chain, step = chain
        steps.append(step)
    out: list[str] = []
    for step in reversed(steps):
        if isinstance(step, int | MapKey):
            out.append(f"[{step}]")
        else:
            out.append(f".{step}" if out else step)
    return "".join(out)


# (value, path with list indices, Go field path, Go name of the struct holding the field,
# outcome)
# returns None, or the canonical form of a value to store in its place (timestamps)
Checker = Callable[[Any, Chain, Chain, str, Outcome], Any]

# how a field's value is checked inline before the checker is called
K_CALL: Final = 0  # always call the checker
K_STR: Final = 1
K_BOOL: Final = 2
K_I32: Final = 3
K_I64: Final = 4
K_F64: Final = 5
K_FREE: Final = 6  # anything goes

I32_MIN: Final = -(2**31)
I32_MAX: Final = 2**31 - 1
I64_MIN: Final = -(2**63)
I64_MAX: Final = 2**63 - 1

_FREE_DEFINITIONS: Final = frozenset({
    "io.plat.apimachinery.pkg.runtime.RawExtension",
    "io.plat.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "io.plat.apimachinery.pkg.apis.meta.v1.Patch",
    "io.plat.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
    "io.plat.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps",
    "io.plat.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
    "io.plat.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
    "io.plat.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
})
_TIME_DEFINITIONS: Final = {
    "io.plat.apimachinery.pkg.apis.meta.v1.Time": "2006-01-02T15:04:05Z07:00",
    "io.plat.apimachinery.pkg.apis.meta.v1.MicroTime": "2006-01-02T15:04:05.000000Z07:00",
}

# Named Go types the schema cannot tell from plain strings, for the fields users most often
# get wrong (definition without the ``io.plat.api.`` prefix, property) -> Go type.
_NAMED_TYPES: Final[Mapping[tuple[str, str], str]] = {
    ("core.v1.Container", "imagePullPolicy"): "v1.PullPolicy",
    ("core.v1.Container", "terminationMessagePolicy"): "v1.TerminationMessagePolicy",
    ("core.v1.ContainerPort", "protocol"): "v1.Protocol",
    ("core.v1.ServicePort", "protocol"): "v1.Protocol",
    ("core.v1.PodSpec", "restartPolicy"): "v1.RestartPolicy",
    ("core.v1.PodSpec", "dnsPolicy"): "v1.DNSPolicy",
    ("core.v1.PodSpec", "preemptionPolicy"): "v1.PreemptionPolicy",
    ("core.v1.ServiceSpec", "type"): "v1.ServiceType",
    ("core.v1.ServiceSpec", "sessionAffinity"): "v1.ServiceAffinity",
    ("core.v1.ServiceSpec", "externalTrafficPolicy"): "v1.ServiceExternalTrafficPolicy",
    ("core.v1.Secret", "type"): "v1.SecretType",
    ("core.v1.Capabilities", "add"): "[]v1.Capability",
    ("core.v1.Capabilities", "drop"): "[]v1.Capability",
    ("core.v1.PersistentVolumeClaimSpec", "accessModes"): "[]v1.PersistentVolumeAccessMode",
    ("core.v1.PersistentVolumeClaimSpec", "volumeMode"): "v1.PersistentVolumeMode",
    ("core.v1.Toleration", "operator"): "v1.TolerationOperator",
    ("core.v1.Toleration", "effect"): "v1.TaintEffect",
    ("core.v1.Taint", "effect"): "v1.TaintEffect",
    ("core.v1.NamespaceSpec", "finalizers"): "[]v1.FinalizerName",
    ("core.v1.NamespaceStatus", "phase"): "v1.NamespacePhase",
    ("core.v1.PodStatus", "phase"): "v1.PodPhase",
    ("core.v1.HostPathVolumeSource", "type"): "v1.HostPathType",
    ("apps.v1.StatefulSetSpec", "podManagementPolicy"): "v1.PodManagementPolicyType",
    ("apps.v1.StatefulSetUpdateStrategy", "type"): "v1.StatefulSetUpdateStrategyType",
    ("apps.v1.StatefulSetPersistentVolumeClaimRetentionPolicy", "whenDeleted"):
        "v1.PersistentVolumeClaimRetentionPolicyType",
    ("apps.v1.StatefulSetPersistentVolumeClaimRetentionPolicy", "whenScaled"):
        "v1.PersistentVolumeClaimRetentionPolicyType",
    ("apps.v1.DeploymentStrategy", "type"): "v1.DeploymentStrategyType",
    ("apps.v1.DaemonSetUpdateStrategy", "type"): "v1.DaemonSetUpdateStrategyType",
    ("batch.v1.JobSpec", "completionMode"): "v1.CompletionMode",
    ("batch.v1.CronJobSpec", "concurrencyPolicy"): "v1.ConcurrencyPolicy",
}


def json_kind(value: Any) -> str:
    """How encoding/json names a JSON value in its errors (``cannot unmarshal array ...``)."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list):
        return "array"
    return "object"


def _number_literal(value: int | float) -> str:
    return str(value) if isinstance(value, int) else repr(value)


def _mismatch(out: Outcome, value: Any, struct: str, gopath: Chain, gotype: str,
              integer: bool = False) -> None:
    if out.error is not None:
        return
    what = json_kind(value)
    if integer and what == "number":
        what = f"number {_number_literal(value)}"
    out.error = (f"json: cannot unmarshal {what} into Go struct field {struct}."
                 f"{chain_path(gopath)} "
                 f"of type {gotype}")


def _inner_mismatch(value: Any, struct: str, gopath: Chain, gotype: str,
                    integer: bool = False) -> DecodeError:
    """The error of a custom decoder that calls encoding/json on the value alone (IntOrString,
    Time): it stops the decoder, which then adds the field's context to it."""
    what = json_kind(value)
    if integer and what == "number":
        what = f"number {_number_literal(value)}"
    return DecodeError(f"json: cannot unmarshal {what} into Go struct field {struct}."
                       f"{chain_path(gopath)} of type {gotype}")


# -- scalar checkers (called only when the inline check failed) -----------------------------

def _string_checker(gotype: str) -> Checker:
    def check(value: Any, path: Chain, gopath: Chain, struct: str, out: Outcome) -> None:
        if value is not None and not isinstance(value, str):
            _mismatch(out, value, struct, gopath, gotype)
    return check


def _bool_checker(value: Any, path: Chain, gopath: Chain, struct: str, out: Outcome) -> None:
    if value is not None and not isinstance(value, bool):
        _mismatch(out, value, struct, gopath, "bool")


def _int_checker(gotype: str, lo: int, hi: int) -> Checker:
    def check(value: Any, path: Chain, gopath: Chain, struct: str, out: Outcome) -> None:
        if value is None or (type(value) is int and lo <= value <= hi):
            return
        _mismatch(out, value, struct, gopath, gotype, integer=True)
    return check


def _float_checker(value: Any, path: Chain, gopath: Chain, struct: str, out: Outcome) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
        _mismatch(out, value, struct, gopath, "float64")


def _free_checker(value: Any, path: Chain, gopath: Chain, struct: str, out: Outcome) -> None:
    return


_B64: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def base64_error_offset(s: str) -> int | None:
    """Where Go's base64.StdEncoding fails on ``s`` (None when it decodes): newlines are
    skipped, an incomplete quantum fails at its start, as in Go."""
    i, n = 0, len(s)
    while i < n:
        j = 0
        while j < 4:
            if i == n:
                return None if j == 0 else i - j
            c = s[i]
            i += 1
            if c in "\r\n":
                continue
            if c == "=":
                if j < 2:
                    return i - 1
                if j == 2:
                    while i < n and s[i] in "\r\n":
                        i += 1
                    if i == n:
                        return n
                    if s[i] != "=":
                        return i - 1
                    i += 1
                while i < n and s[i] in "\r\n":
                    i += 1
                return i if i < n else None
            if c not in _B64:
                return i - 1
            j += 1
    return None


def _bytes_checker(value: Any, path: Chain, gopath: Chain, struct: str, out: Outcome) -> None:
    """[]byte: a base64 string (or, as Go also takes, a JSON array of numbers)."""
    if value is None or isinstance(value, list):
        return
    if not isinstance(value, str):
        _mismatch(out, value, struct, gopath, "[]uint8")
        return
    off = base64_error_offset(value)
    if off is not None and out.error is None:
        out.error = f"illegal base64 data at input byte {off}"


# -- custom decoders (their errors stop the decoder) ----------------------------------------

def _int_or_string(value: Any, path: Chain, gopath: Chain, struct: str, out: Outcome) -> None:
    if value is None or isinstance(value, str):
        return
    if type(value) is int and I32_MIN <= value <= I32_MAX:
        return
    raise _inner_mismatch(value, struct, gopath, "int32", integer=True)


QUANTITY_FORMAT_ERROR: Final = ("quantities must match the regular expression "
                                "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
QUANTITY_SUFFIX_ERROR: Final = "unable to parse quantity's suffix"
_SUFFIX_CHARS: Final = frozenset("eEinumkKMGTP")
_SUFFIXES: Final = frozenset({"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
                              "n", "u", "m", "k", "M", "G", "T", "P", "E"})
_EXPONENT: Final = re.compile(r"[eE][-+]?[0-9]+")


@functools.lru_cache(maxsize=4096)
def quantity_error(text: str) -> str | None:
    """The error resource.ParseQuantity gives for ``text`` (None when it parses)."""
    if not text:
        return QUANTITY_FORMAT_ERROR
    if text == "0":
        return None
    n = len(text)
    pos = 1 if text[0] in "+-" else 0
    while pos < n and text[pos].isdigit() and text[pos].isascii():
        pos += 1
    if pos < n and text[pos] == ".":
        pos += 1
        while pos < n and text[pos].isdigit() and text[pos].isascii():
            pos += 1
    start = pos
    while pos < n and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < n and text[pos] in "+-":
        pos += 1
    while pos < n and text[pos] in "0123456789":
        pos += 1
    if pos < n:
        return QUANTITY_FORMAT_ERROR
    suffix = text[start:]
    if suffix in _SUFFIXES or _EXPONENT.fullmatch(suffix):
        return None
    return QUANTITY_SUFFIX_ERROR


def _quantity(value: Any, path: Chain, gopath: Chain, struct: str, out: Outcome) -> None:
    if value is None:
        return
    if isinstance(value, str):
        text = value.strip()
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int | float):
        text = _number_literal(value)
    else:
        text = "{" if isinstance(value, dict) else "["
    err = quantity_error(text)
    if err is not None:
        raise DecodeError(err)


def _time_checker(layout: str) -> Checker:
    """A Time or MicroTime: Go's parse errors; a valid stamp is returned in the form
    upstream writes it back (UTC, ``Z``, its precision) when that differs, and the struct
    walk stores that form (a Python client sends ``+00:00``)."""
    def check(value: Any, path: Chain, gopath: Chain, struct: str, out: Outcome) -> Any:
        if value is None:
            return None
        if not isinstance(value, str):
            raise _inner_mismatch(value, struct, gopath, "string")
        err = time_parse_error(value, layout)
        if err is not None:
            raise DecodeError(err)
        if value.endswith("Z") and (layout == RFC3339_MICRO or len(value) == 20):
            return None  # already canonical (the usual case): no work
        text = canonical_time(value, layout)
        return text if text != value else None
    return check


# -- containers -----------------------------------------------------------------------------

# inline check: code -> (accepted Python type, low, high) is done in _walk_fields


def _fast_ok(code: int, v: Any) -> bool:
    if code == K_STR:
        return type(v) is str
    if code == K_I32:
        return type(v) is int and I32_MIN <= v <= I32_MAX
    if code == K_BOOL:
        return type(v) is bool
    if code == K_I64:
        return type(v) is int and I64_MIN <= v <= I64_MAX
    if code == K_F64:
        return type(v) is float or type(v) is int
    return code == K_FREE


Plan = tuple[int, Checker, str]
# a struct field: (code, checker, Go type, Go field path segment)
FieldPlan = tuple[int, Checker, str, str]


class _Struct:
    """A Go struct: its JSON fields (embedded structs flattened, as the schema has them)."""

    __slots__ = ("fields", "gotype", "name", "required", "zero_fill")

    def __init__(self, name: str, gotype: str) -> None:
        self.name = name
        self.gotype = gotype
        self.fields: dict[str, FieldPlan] = {}
        # fields without ``omitempty`` in Go (the schema's required ones): a null there
        # stays, for the validation to name (numbers, booleans and IntOrStrings excepted:
        # ``zero_fill``)
        self.required: frozenset[str] = frozenset()
        # the required numbers, booleans and IntOrStrings, with their zero values: Go's
        # decoder leaves a missing or null one at zero and its encoder writes that zero back
        # (``{"protocol": "TCP"}`` as a container port is stored with ``"containerPort":
        # 0``), so the stored object has the field, as upstream's has
        self.zero_fill: tuple[tuple[str, Any], ...] = ()

    def check(self, value: Any, path: Chain, gopath: Chain, struct: str, out: Outcome) -> None:
        if type(value) is not dict:
            if value is not None:
                _mismatch(out, value, struct, gopath, self.gotype)
            return
        fields = self.fields
        name = self.name
        drop: list[str] | None = None
        nulls: list[str] | None = None
        here = ""
        anchors = None
        if out.anchors:
            here = chain_path(path)
            anchors = out.anchors.get(here)
        # the codes are literals here (K_STR 1, K_CALL 0, K_I32 3, K_BOOL 2, K_FREE 6, K_I64 4,
        # K_F64 5), most frequent first: this loop is the walk's hot spot
        for key, v in value.items():
            if anchors is not None and key in anchors:
                out.add_duplicates(anchors[key], here, fields)
            plan = fields.get(key)
            if plan is None:
                out.add_unknown(chain_path((path, key)))
                if drop is None:
                    drop = [key]
                else:
                    drop.append(key)
                continue
            code = plan[0]
            if code == 1:
                if type(v) is str:
                    continue
            elif code == 0:
                pass
            elif code == 3:
                if type(v) is int and -2147483648 <= v <= 2147483647:
                    continue
            elif code == 2:
                if type(v) is bool:
                    continue
            elif code == 6:
                continue
            elif code == 4:
                if type(v) is int and -9223372036854775808 <= v <= 9223372036854775807:
                    continue
            elif type(v) is float or type(v) is int:
                continue
            if v is not None:
                canonical = plan[1](v, (path, key), (gopath, plan[3]), name, out)
                if canonical is not None:
                    value[key] = canonical  # an existing key: the iteration goes on
            elif key in self.required:
                pass
            elif nulls is None:
                nulls = [key]
            else:
                nulls.append(key)
        if drop is not None and out.prune:
            for key in drop:
                del value[key]
        if nulls is not None:
            # Go decodes a JSON null into the typed field's zero value, which an
            # ``omitempty`` field leaves out: not stored, not written back, not owned in
            # managedFields
            for key in nulls:
                del value[key]
        if anchors is not None and None in anchors:
            out.add_duplicates(anchors[None], here, fields)
        for key, zero in self.zero_fill:
            if value.get(key) is None:
                value[key] = zero


_KEEP_NULL: Final = object()


def _zero(elem: Plan) -> Any:
    """What Go's decoder leaves for a JSON null in a list item or map value of this type,
    as its encoder writes it back: a struct's zero value is ``{}`` with its required
    numbers, booleans and IntOrStrings at zero (its check fills them in; its other fields
    are ``omitempty``, or the validation that follows names them), a string's "", a
    number's 0, a Quantity's "0"; pointers, slices, maps, byte strings and times stay null
    (``_KEEP_NULL``)."""
    code, check_item, gotype = elem
    if code == K_STR:
        return ""
    if code in (K_I32, K_I64, K_F64):
        return 0
    if code == K_BOOL:
        return False
    if code == K_CALL:
        if isinstance(getattr(check_item, "__self__", None), _Struct):
            return {}
        if gotype == "intstr.IntOrString":
            return 0
        if gotype == "resource.Quantity":
            return "0"
    return _KEEP_NULL


def _scalar_zero(plan: FieldPlan) -> Any:
    """The zero value Go writes back for a required field of this plan when it is a number,
    a boolean or an IntOrString; None for any other type."""
    code, _, gotype, _ = plan
    if code in (K_I32, K_I64, K_F64):
        return 0
    if code == K_BOOL:
        return False
    if code == K_CALL and gotype == "intstr.IntOrString":
        return 0
    return None


def _list_checker(elem: Plan, gotype: str) -> Checker:
    code, check_item, _ = elem
    zero = _zero(elem)

    def check(value: Any, path: Chain, gopath: Chain, struct: str, out: Outcome) -> None:
        if type(value) is not list:
            if value is not None:
                _mismatch(out, value, struct, gopath, gotype)
            return
        if code == K_FREE:
            return
        for i, item in enumerate(value):
            if item is None:
                if zero is _KEEP_NULL:
                    continue
                if type(zero) is not dict:
                    value[i] = zero
                    continue
                # a struct's zero value: a fresh {} each, with its required scalars
                value[i] = item = {}
            if code != K_CALL and _fast_ok(code, item):
                continue
            check_item(item, (path, i), gopath, struct, out)
    return check


def _map_checker(elem: Plan, gotype: str) -> Checker:
    code, check_item, _ = elem
    zero = _zero(elem)

    def check(value: Any, path: Chain, gopath: Chain, struct: str, out: Outcome) -> None:
        if type(value) is not dict:
            if value is not None:
                _mismatch(out, value, struct, gopath, gotype)
            return
        here = chain_path(path) if out.anchors else ""
        anchors = out.anchors.get(here) if out.anchors else None
        if code != K_FREE or anchors is not None:
            for k, item in value.items():
                if anchors is not None and k in anchors:
                    out.add_duplicates(anchors[k], here, None)
                if item is None:
                    if zero is _KEEP_NULL:
                        continue
                    if type(zero) is not dict:  # Go: a null map[string]string value is ""
                        value[k] = zero
                        continue
                    value[k] = item = {}  # a struct's zero value, as in a list
                if code == K_FREE or (code != K_CALL and _fast_ok(code, item)):
                    continue
                check_item(item, (path, k), gopath, struct, out)
        if anchors is not None and None in anchors:
            out.add_duplicates(anchors[None], here, None)
    return check


def _embedded_prefixes(definition: str, node: Node) -> dict[str, str]:
    """JSON field -> Go field path prefix for fields of embedded (``json:",inline"``) structs:
    Go's decoder puts the embedded struct's name in the error's field path
    (``Volume.spec.volumes.VolumeSource.hostPath``). The protobuf schema data knows which
    fields are embedded; TypeMeta is embedded in every type with apiVersion, kind and
    metadata."""
    out: dict[str, str] = {}
    props = node.get("properties") or {}
    if "apiVersion" in props and "kind" in props and "metadata" in props:
        out["apiVersion"] = out["kind"] = "TypeMeta."
    msg = protobuf_messages().get("plat.io." + definition.removeprefix("io.plat."))
    if msg is None:
        return out

    def walk(m: Message, prefix: str) -> None:
        for f in m.ordered:
            if f.inline and f.message is not None:
                walk(protobuf_message(f.message),
                     f"{prefix}{f.message.rsplit('.', 1)[-1]}.")
            elif prefix:
                out[f.name] = prefix
    walk(msg, "")
    return out


def _go_package(definition: str) -> str:
    parts = definition.split(".")
    return f"{parts[-2]}.{parts[-1]}"


class _Compiler:
    """Compiles schema nodes into plans; definitions once each (recursive ones through a
    late-bound struct)."""

    def __init__(self) -> None:
        self.structs: dict[str, _Struct] = {}
        self.plans: dict[str, Plan] = {}

    def definition(self, name: str) -> Plan:
        plan = self.plans.get(name)
        if plan is not None:
            return plan
        if name in _FREE_DEFINITIONS:
            plan = (K_FREE, _free_checker, _go_package(name))
        elif name == schema.INT_OR_STRING:
            plan = (K_CALL, _int_or_string, "intstr.IntOrString")
        elif name == schema.QUANTITY:
            plan = (K_CALL, _quantity, "resource.Quantity")
        elif name in _TIME_DEFINITIONS:
            plan = (K_CALL, _time_checker(_TIME_DEFINITIONS[name]), _go_package(name))
        else:
            node = schema.definition(name)
            if node.get("type") == "object" or "properties" in node:
                st = _Struct(name.rsplit(".", 1)[-1], _go_package(name))
                st.required = frozenset(node.get("required") or ())
                plan = (K_CALL, st.check, st.gotype)
                self.plans[name] = plan  # before the fields: a type may contain itself
                self.structs[name] = st
                short = name.removeprefix("io.plat.api.")
                embedded = _embedded_prefixes(name, node)
                for prop, sub in (node.get("properties") or {}).items():
                    code, check, gotype = self.node(sub, _NAMED_TYPES.get((short, prop)))
                    st.fields[prop] = (code, check, gotype, embedded.get(prop, "") + prop)
                st.zero_fill = tuple(
                    (prop, _scalar_zero(st.fields[prop])) for prop in sorted(st.required)
                    if prop in st.fields and _scalar_zero(st.fields[prop]) is not None)
                return plan
            plan = self.node(node)
        self.plans[name] = plan
        return plan

    def node(self, node: Node, named: str | None = None) -> Plan:
        ref = node.get("$ref")
        if ref is not None:
            return self.definition(ref)
        if node.get("x-kubernetes-preserve-unknown-fields"):
            return (K_FREE, _free_checker, "")
        t = node.get("type")
        fmt = node.get("format")
        if t == "string":
            if fmt == "byte":
                return (K_CALL, _bytes_checker, "[]uint8")
            if fmt == "int-or-string":
                return (K_CALL, _int_or_string, "intstr.IntOrString")
            if fmt == "quantity":
                return (K_CALL, _quantity, "resource.Quantity")
            gotype = named or "string"
            return (K_STR, _string_checker(gotype), gotype)
        if t == "integer":
            if fmt == "int32":
                return (K_I32, _int_checker("int32", I32_MIN, I32_MAX), "int32")
            return (K_I64, _int_checker("int64", I64_MIN, I64_MAX), "int64")
        if t == "number":
            return (K_F64, _float_checker, "float64")
        if t == "boolean":
            return (K_BOOL, _bool_checker, "bool")
        if t == "array":
            items = node.get("items")
            if not isinstance(items, Mapping):
                return (K_FREE, _free_checker, "")
            elem = self.node(items, named[2:] if named and named.startswith("[]") else None)
            gotype = named or f"[]{elem[2]}"
            return (K_CALL, _list_checker(elem, gotype), gotype)
        if t == "object":
            extra = node.get("additionalProperties")
            if isinstance(extra, Mapping):
                elem = self.node(extra)
                gotype = ("v1.ResourceList" if elem[2] == "resource.Quantity"
                          else f"map[string]{elem[2]}")
                return (K_CALL, _map_checker(elem, gotype), gotype)
        return (K_FREE, _free_checker, "")


_COMPILER: Final = _Compiler()


@functools.cache
def decoder_for(group: str, version: str, kind: str) -> Decoder | None:
    """The decoder of ``kind`` in ``group/version`` (None when the schema does not know it)."""
    name = schema.definition_name(group, version, kind)
    if name is None:
        return None
    _COMPILER.definition(name)
    st = _COMPILER.structs.get(name)
    return Decoder(kind, st) if st is not None else None


def decoder_for_api_version(api_version: str, kind: str) -> Decoder | None:
    group, _, version = api_version.rpartition("/")
    return decoder_for(group, version, kind)


class Decoder:
    """The compiled decoding checks of one kind."""

    __slots__ = ("kind", "_root")

    def __init__(self, kind: str, root: _Struct) -> None:
        self.kind = kind
        self._root = root

    def check(self, obj: dict[str, Any], *, prune: bool = True,
              duplicates: Anchors | list[str] | None = None) -> Outcome:
        """Walk ``obj`` (a decoded JSON object of this kind): unknown fields are listed and,
        with ``prune``, removed; ``duplicates`` (anchors, or just the repeated keys' paths)
        are placed among them. Raises DecodeError for a custom decoder's error; a plain type
        error is returned in ``Outcome.error``."""
        anchors = (anchors_from_paths(duplicates) if isinstance(duplicates, list)
                   else duplicates)
        out = Outcome(prune=prune, anchors=anchors or None)
        self._root.check(obj, None, None, self.kind, out)
        return out

    def decode(self, obj: dict[str, Any], *, prune: bool = True) -> list[str]:
        """``check`` raising DecodeError for any type error; returns the unknown fields."""
        out = self.check(obj, prune=prune)
        if out.error is not None:
            raise DecodeError(out.error)
        return out.unknown


# The object the request handler last decoded in this task: the registry's own shape check
# of the same object (a create passes it on unchanged) can be skipped.
_CHECKED: ContextVar[object | None] = ContextVar("decode_checked", default=None)


def mark_checked(obj: object) -> None:
    """Record that ``obj`` has just been checked by its kind's decoder."""
    _CHECKED.set(obj)


def was_checked(obj: object) -> bool:
    return _CHECKED.get() is obj

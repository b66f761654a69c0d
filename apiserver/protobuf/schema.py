"""Per-message field tables built once from the v1.33 schema data (``schema-v1.33.json``).

The data file lists, for every message of upstream's generated.proto files (packages renamed
``k8s.io`` -> ``plat.io``), its fields: protobuf name, number, type, message or map types.
This module turns it into ``Message`` tables that the decoder and encoder walk:

- the JSON name of a field is its protobuf name, except a handful of fields whose Go JSON tag
  differs (``Webhooks`` -> ``webhooks``, ``uID`` -> ``uid``, ...; ``DaemonEndpoint.Port``
  really is ``Port`` in JSON);
- fields of an embedded Go struct marked ``json:",inline"`` (``Volume.volumeSource``,
  ``Probe.handler``, the ``localObjectReference`` of config-map/secret selectors, ...) are a
  nested message on the wire but flattened into the parent in JSON;
- a few messages have a JSON form of their own (``Special``): Time, MicroTime, Duration,
  IntOrString, Quantity, RawExtension, FieldsV1, and the string-list wrappers Verbs and
  ExtraValue.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Final

from apiserver.protobuf.errors import UnknownKind

SCHEMA_FILE: Final = "schema-v1.33.json"

META_V1: Final = "plat.io.apimachinery.pkg.apis.meta.v1"


class Kind(enum.IntEnum):
    STRING = 0
    BYTES = 1
    INT32 = 2
    INT64 = 3
    BOOL = 4
    MESSAGE = 5
    MAP = 6


class Special(enum.IntEnum):
    NONE = 0
    TIME = 1
    MICROTIME = 2
    DURATION = 3
    INT_OR_STRING = 4
    QUANTITY = 5
    RAW_EXTENSION = 6
    FIELDS_V1 = 7
    STRING_LIST = 8


SPECIALS: Final[dict[str, Special]] = {
    f"{META_V1}.Time": Special.TIME,
    f"{META_V1}.MicroTime": Special.MICROTIME,
    f"{META_V1}.Duration": Special.DURATION,
    "plat.io.apimachinery.pkg.util.intstr.IntOrString": Special.INT_OR_STRING,
    "plat.io.apimachinery.pkg.api.resource.Quantity": Special.QUANTITY,
    "plat.io.apimachinery.pkg.runtime.RawExtension": Special.RAW_EXTENSION,
    f"{META_V1}.FieldsV1": Special.FIELDS_V1,
    f"{META_V1}.Verbs": Special.STRING_LIST,
}
# Every ``<group>.<version>.ExtraValue`` is a Go ``[]string``: a JSON array.
EXTRA_VALUE: Final = ".ExtraValue"

_SCALARS: Final[dict[str, Kind]] = {
    "string": Kind.STRING, "bytes": Kind.BYTES, "int32": Kind.INT32, "int64": Kind.INT64,
    "bool": Kind.BOOL,
}

# Protobuf name -> JSON name where the Go JSON tag is not the protobuf name.
_JSON_NAMES: Final[dict[str, str]] = {
    "Webhooks": "webhooks", "Expression": "expression", "Name": "name", "uID": "uid",
    "aPIGroup": "apiGroup",
}
# Names kept verbatim although they start upper-case (the Go JSON tag says so).
_VERBATIM: Final = frozenset({"Port"})

# Embedded Go structs tagged ``json:",inline"``: message fields with these names are
# flattened into the parent object in JSON. (``RuntimeClass.handler`` is a string, so the
# rule applies to message-typed fields only.)
_INLINE: Final = frozenset({
    "volumeSource", "persistentVolumeSource", "handler", "ephemeralContainerCommon",
    "localObjectReference", "ingressRuleValue", "ruleWithOperations", "rule",
    "deviceConfiguration",
})

# Non-pointer Go scalars tagged ``omitempty``: gogo writes them even when zero, and upstream's
# JSON leaves a zero out. The schema data cannot tell a pointer (``replicas *int32``, whose 0
# means something) from these, so the decoder keeps every zero except for the fields listed
# here: the common kinds' fields, checked against upstream's Go types. Unlisted fields keep
# their zero, which a Go reader treats alike anyway.
OMITTED_ZEROS: Final[dict[str, frozenset[str]]] = {
    f"plat.io.{name}": frozenset(fields.split()) for name, fields in {
        "apimachinery.pkg.apis.meta.v1.ObjectMeta": "generation",
        "apimachinery.pkg.apis.meta.v1.Status": "code",
        "apimachinery.pkg.apis.meta.v1.StatusDetails": "retryAfterSeconds",
        "apimachinery.pkg.apis.meta.v1.ListOptions": "watch allowWatchBookmarks limit",
        "apimachinery.pkg.apis.meta.v1.Condition": "observedGeneration",
        "api.core.v1.Container": "stdin stdinOnce tty",
        "api.core.v1.EphemeralContainerCommon": "stdin stdinOnce tty",
        "api.core.v1.ContainerPort": "hostPort",
        "api.core.v1.VolumeMount": "readOnly",
        "api.core.v1.PodSpec": "hostNetwork hostPID hostIPC",
        "api.core.v1.Probe": "initialDelaySeconds timeoutSeconds periodSeconds "
                             "successThreshold failureThreshold",
        "api.core.v1.ServicePort": "nodePort",
        "api.core.v1.ServiceSpec": "healthCheckNodePort publishNotReadyAddresses",
        "api.core.v1.ContainerStateTerminated": "signal",
        "api.core.v1.NodeSpec": "unschedulable",
        "api.core.v1.PersistentVolumeClaimVolumeSource": "readOnly",
        "api.core.v1.NFSVolumeSource": "readOnly",
        "api.core.v1.GCEPersistentDiskVolumeSource": "partition readOnly",
        "api.core.v1.AWSElasticBlockStoreVolumeSource": "partition readOnly",
        "api.core.v1.Event": "count",
        "api.core.v1.EventSeries": "count",
        "api.core.v1.ReplicationControllerSpec": "minReadySeconds",
        "api.core.v1.ReplicationControllerStatus": "fullyLabeledReplicas readyReplicas "
                                                   "availableReplicas observedGeneration",
        "api.core.v1.PodLogOptions": "follow previous timestamps insecureSkipTLSVerifyBackend",
        "api.core.v1.PodExecOptions": "stdin stdout stderr tty",
        "api.core.v1.PodAttachOptions": "stdin stdout stderr tty",
        "api.apps.v1.DeploymentSpec": "minReadySeconds paused",
        "api.apps.v1.DeploymentStatus": "observedGeneration replicas updatedReplicas "
                                        "readyReplicas availableReplicas unavailableReplicas",
        "api.apps.v1.StatefulSetSpec": "minReadySeconds",
        "api.apps.v1.StatefulSetStatus": "observedGeneration readyReplicas currentReplicas "
                                         "updatedReplicas",
        "api.apps.v1.ReplicaSetSpec": "minReadySeconds",
        "api.apps.v1.ReplicaSetStatus": "fullyLabeledReplicas readyReplicas availableReplicas "
                                        "observedGeneration",
        "api.apps.v1.DaemonSetSpec": "minReadySeconds",
        "api.apps.v1.DaemonSetStatus": "observedGeneration updatedNumberScheduled "
                                       "numberAvailable numberUnavailable",
        "api.batch.v1.JobStatus": "active succeeded failed",
        "api.autoscaling.v1.ScaleSpec": "replicas",
        "api.autoscaling.v2.HorizontalPodAutoscalerStatus": "currentReplicas",
        "api.policy.v1.PodDisruptionBudgetStatus": "observedGeneration",
        "api.networking.v1.ServiceBackendPort": "number",
        "api.scheduling.v1.PriorityClass": "globalDefault",
    }.items()
}

# Go ``*string`` fields where an empty string differs from unset (``storageClassName: ""``
# turns dynamic provisioning off): the decoder keeps their "" (every other "" is dropped).
KEPT_EMPTY_STRINGS: Final[dict[str, frozenset[str]]] = {
    "plat.io.api.core.v1.PersistentVolumeClaimSpec": frozenset({
        "storageClassName", "volumeAttributesClassName"}),
}

WIRE_VARINT: Final = 0
WIRE_FIXED64: Final = 1
WIRE_LEN: Final = 2
WIRE_FIXED32: Final = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class MapType:
    key: Kind
    value: Kind
    value_message: str | None
    value_special: Special


@dataclass(frozen=True, slots=True, kw_only=True)
class Field:
    number: int
    name: str  # the JSON name
    kind: Kind
    repeated: bool
    message: str | None  # the message type of a MESSAGE field
    special: Special  # how the message type maps to JSON
    inline: bool
    omit_zero: bool  # a non-pointer omitempty scalar: its zero is left out of the JSON form
    keep_empty: bool  # a string whose "" stays in the JSON form
    map: MapType | None
    wire: int  # the wire type this field is written with
    tag: bytes  # the encoded key (number << 3 | wire), written before each value


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    name: str
    special: Special
    by_number: dict[int, Field]
    ordered: tuple[Field, ...] = field(default=())  # by field number: gogo's write order


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _special_of(name: str | None) -> Special:
    if name is None:
        return Special.NONE
    if name.endswith(EXTRA_VALUE):
        return Special.STRING_LIST
    return SPECIALS.get(name, Special.NONE)


def _json_name(proto_name: str) -> str:
    if proto_name in _JSON_NAMES:
        return _JSON_NAMES[proto_name]
    return proto_name


def _kind_of(type_name: str) -> tuple[Kind, str | None]:
    if type_name in _SCALARS:
        return _SCALARS[type_name], None
    return Kind.MESSAGE, type_name


def _build_field(raw: dict[str, Any], omitted_zeros: frozenset[str],
                 kept_empty: frozenset[str]) -> Field:
    number = int(raw["number"])
    name = str(raw["name"])
    map_type: MapType | None = None
    message: str | None = None
    if "map" in raw:
        kind = Kind.MAP
        key_kind, _ = _kind_of(raw["map"]["key"])
        value_kind, value_message = _kind_of(raw["map"]["value"])
        map_type = MapType(key=key_kind, value=value_kind, value_message=value_message,
                           value_special=_special_of(value_message))
    elif raw["type"] == "message":
        kind = Kind.MESSAGE
        message = str(raw["message"])
    else:
        kind = _SCALARS[raw["type"]]
    wire = WIRE_VARINT if kind in (Kind.INT32, Kind.INT64, Kind.BOOL) else WIRE_LEN
    return Field(
        number=number, name=name if name in _VERBATIM else _json_name(name), kind=kind,
        repeated=bool(raw.get("repeated", False)), message=message,
        special=_special_of(message),
        inline=kind == Kind.MESSAGE and name in _INLINE and not raw.get("repeated"),
        omit_zero=name in omitted_zeros and wire == WIRE_VARINT and not raw.get("repeated"),
        keep_empty=name in kept_empty and kind == Kind.STRING,
        map=map_type, wire=wire, tag=_varint(number << 3 | wire),
    )


@cache
def messages() -> dict[str, Message]:
    """All messages of the schema, by full name (loaded and indexed once per process)."""
    text = resources.files(__package__).joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    data = json.loads(text)
    out: dict[str, Message] = {}
    for name, raw_fields in data["messages"].items():
        zeros = OMITTED_ZEROS.get(name, frozenset())
        kept = KEPT_EMPTY_STRINGS.get(name, frozenset())
        fields = [_build_field(f, zeros, kept) for f in raw_fields]
        out[name] = Message(
            name=name, special=_special_of(name),
            by_number={f.number: f for f in fields},
            ordered=tuple(sorted(fields, key=lambda f: f.number)),
        )
    return out


def message(name: str) -> Message:
    """The message called ``name``; UnknownKind when the schema has none."""
    found = messages().get(name)
    if found is None:
        raise UnknownKind(f"no protobuf message {name!r}")
    return found


# API group (without the ``.plat.io`` suffix) -> protobuf package segment, where the package is
# not simply the group's first label.
_PACKAGES: Final[dict[str, str]] = {
    "": "core",
    "internal.apiserver": "apiserverinternal",
    "meta": "meta",
}
_GROUP_SUFFIXES: Final = (".plat.io", ".k8s.io")
# meta.v1 kinds that every group version serves (options, Status, discovery documents).
META_KINDS: Final = frozenset({
    "Status", "DeleteOptions", "CreateOptions", "UpdateOptions", "PatchOptions", "GetOptions",
    "ListOptions", "ApplyOptions", "TableOptions", "WatchEvent", "APIGroup", "APIGroupList",
    "APIVersions", "APIResourceList", "List", "PartialObjectMetadata",
    "PartialObjectMetadataList", "RootPaths",
})


@cache
def type_name_for(api_version: str, kind: str) -> str:
    """The protobuf message of an apiVersion/kind, e.g. ("apps/v1", "StatefulSet") ->
    "plat.io.api.apps.v1.StatefulSet"; meta kinds (Status, DeleteOptions, WatchEvent, ...)
    under any group version resolve to meta.v1. Raises UnknownKind."""
    if not kind or not api_version:
        raise UnknownKind(f"no protobuf message for apiVersion {api_version!r}, "
                          f"kind {kind!r}")
    group, _, version = api_version.rpartition("/")
    for suffix in _GROUP_SUFFIXES:
        if group.endswith(suffix):
            group = group[: -len(suffix)]
            break
    package = _PACKAGES.get(group, group.split(".", 1)[0])
    table = messages()
    candidates = [f"plat.io.api.{package}.{version}.{kind}"]
    if package == "meta":
        candidates.insert(0, f"plat.io.apimachinery.pkg.apis.meta.{version}.{kind}")
    if kind in META_KINDS:
        candidates.append(f"plat.io.apimachinery.pkg.apis.meta.{version}.{kind}")
        candidates.append(f"{META_V1}.{kind}")
    for candidate in candidates:
        if candidate in table:
            return candidate
    raise UnknownKind(f"no protobuf message for apiVersion {api_version!r}, kind {kind!r}")

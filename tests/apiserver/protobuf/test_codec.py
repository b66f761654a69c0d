"""The codec beyond the golden vectors: real kubectl bodies, wire details, bad input."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from apiserver import protobuf
from apiserver.protobuf import schema, wellknown

GOLDEN = Path(__file__).resolve().parents[2] / "data" / "protobuf-golden"
CORE = "plat.io.api.core.v1"


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _len(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = _len(1, api_version.encode()) + _len(2, kind.encode())
    return b"k8s\x00" + _len(1, type_meta) + _len(2, raw) + b"\x1a\x00\x22\x00"


# --- bodies captured from the stock kubectl here (kubectl create ...) --------------------

def _kubectl(name: str) -> dict[str, Any]:
    return protobuf.decode((GOLDEN / "kubectl" / f"{name}.pb").read_bytes())


def test_kubectl_create_namespace() -> None:
    # gogo writes every non-pointer string (empty) and the zero creationTimestamp (an empty
    # message): none of them appears in the JSON form.
    obj = _kubectl("create-namespace")
    assert obj["apiVersion"] == "v1" and obj["kind"] == "Namespace"
    assert obj["metadata"]["name"] == "foo"
    assert "creationTimestamp" not in obj["metadata"]
    assert "uid" not in obj["metadata"] and "namespace" not in obj["metadata"]
    assert obj["spec"] == {} and obj["status"] == {}


def test_kubectl_create_configmap_keeps_empty_values() -> None:
    obj = _kubectl("create-configmap")
    assert obj["metadata"]["namespace"] == "foo"
    assert obj["data"] == {"a": "b", "c": ""}


def test_kubectl_create_secret_data_is_base64() -> None:
    obj = _kubectl("create-secret")
    assert obj["data"] == {"pw": "aHVudGVyMg=="}
    assert obj["type"] == "Opaque"


def test_kubectl_create_deployment_keeps_explicit_zero_replicas() -> None:
    obj = _kubectl("create-deployment")
    assert obj["apiVersion"] == "apps/v1"
    assert obj["spec"]["replicas"] == 0  # a pointer: --replicas=0 must not become the default
    container = obj["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "nginx"
    assert container["ports"][0]["containerPort"] == 80


def test_kubectl_create_service_int_or_string() -> None:
    obj = _kubectl("create-service")
    port = obj["spec"]["ports"][0]
    assert port["port"] == 80 and port["targetPort"] == 8080 and port["protocol"] == "TCP"


KUBECTL_BODIES = ["create-namespace", "create-configmap", "create-secret", "create-deployment",
                  "create-service"]


def _without_null_times(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_null_times(v) for k, v in value.items()
                if not (k == "creationTimestamp" and v is None)}
    if isinstance(value, list):
        return [_without_null_times(v) for v in value]
    return value


@pytest.mark.parametrize("name", KUBECTL_BODIES)
def test_kubectl_bodies_decode_as_kubectl_writes_json(name: str) -> None:
    # The .json is the same command with --dry-run=client -o json; the JSON form writes the
    # zero creationTimestamp as null, the decoder leaves it out.
    expected = json.loads((GOLDEN / "kubectl" / f"{name}.json").read_text(encoding="utf-8"))
    assert _kubectl(name) == _without_null_times(expected)


@pytest.mark.parametrize("name", KUBECTL_BODIES)
def test_kubectl_bodies_round_trip(name: str) -> None:
    obj = _kubectl(name)
    assert protobuf.decode(protobuf.encode(obj)) == obj


# --- type names ---------------------------------------------------------------------------

@pytest.mark.parametrize(("api_version", "kind", "expected"), [
    ("v1", "Namespace", "plat.io.api.core.v1.Namespace"),
    ("v1", "ConfigMapList", "plat.io.api.core.v1.ConfigMapList"),
    ("apps/v1", "StatefulSet", "plat.io.api.apps.v1.StatefulSet"),
    ("coordination.plat.io/v1", "Lease", "plat.io.api.coordination.v1.Lease"),
    ("rbac.authorization.plat.io/v1", "Role", "plat.io.api.rbac.v1.Role"),
    ("flowcontrol.apiserver.plat.io/v1", "FlowSchema", "plat.io.api.flowcontrol.v1.FlowSchema"),
    ("internal.apiserver.plat.io/v1alpha1", "StorageVersion",
     "plat.io.api.apiserverinternal.v1alpha1.StorageVersion"),
    ("v1", "Status", "plat.io.apimachinery.pkg.apis.meta.v1.Status"),
    ("apps/v1", "DeleteOptions", "plat.io.apimachinery.pkg.apis.meta.v1.DeleteOptions"),
    ("meta.plat.io/v1", "PartialObjectMetadataList",
     "plat.io.apimachinery.pkg.apis.meta.v1.PartialObjectMetadataList"),
    ("meta.plat.io/v1beta1", "PartialObjectMetadataList",
     "plat.io.apimachinery.pkg.apis.meta.v1beta1.PartialObjectMetadataList"),
])
def test_type_name_for(api_version: str, kind: str, expected: str) -> None:
    assert protobuf.type_name_for(api_version, kind) == expected


@pytest.mark.parametrize(("api_version", "kind"), [
    ("v1", "NoSuchKind"), ("apiextensions.plat.io/v1", "CustomResourceDefinition"),
    ("example.com/v1", "Widget"), ("", "Pod"), ("v1", ""), ("v1", "ObjectMeta"),
])
def test_type_name_for_unknown(api_version: str, kind: str) -> None:
    with pytest.raises(protobuf.UnknownKind):
        protobuf.type_name_for(api_version, kind)


def test_unknown_kind_envelope_is_unknown_kind_not_garbage() -> None:
    with pytest.raises(protobuf.UnknownKind):
        protobuf.decode(_envelope("example.com/v1", "Widget", b""))
    with pytest.raises(protobuf.UnknownKind):
        protobuf.encode({"apiVersion": "example.com/v1", "kind": "Widget"})


# --- wire details ------------------------------------------------------------------------

def test_unknown_fields_are_skipped() -> None:
    extra = (_varint(99 << 3 | 0) + _varint(5) + _len(98, b"xx") + _varint(97 << 3 | 5)
             + b"\x00" * 4 + _varint(96 << 3 | 1) + b"\x00" * 8)
    raw = _len(1, _len(1, b"cm")) + extra + _len(2, _len(1, b"k") + _len(2, b"v"))
    assert protobuf.decode(_envelope("v1", "ConfigMap", raw)) == {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"},
        "data": {"k": "v"}}


def test_null_list_items_encode_as_zero_values() -> None:
    # an object stored before the decoder wrote nulls in lists as zero values
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "s"},
          "secrets": [None, {"name": "x"}]}
    assert protobuf.decode(protobuf.encode(sa))["secrets"] == [{}, {"name": "x"}]
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c",
                                                              "finalizers": [None, "f"]}}
    assert protobuf.decode(protobuf.encode(cm))["metadata"]["finalizers"] == ["", "f"]


def test_negative_ints_use_ten_byte_varints() -> None:
    obj = {"metadata": {"deletionGracePeriodSeconds": -5}}
    raw = protobuf.encode_message(f"{CORE}.Pod", obj)
    assert _varint(-5) in raw and len(_varint(-5)) == 10
    assert protobuf.decode_message(f"{CORE}.Pod", raw) == obj
    status = {"code": -1}
    meta_status = "plat.io.apimachinery.pkg.apis.meta.v1.Status"
    assert protobuf.decode_message(meta_status,
                                   protobuf.encode_message(meta_status, status)) == status


def test_repeated_int32_packed_or_not() -> None:
    name = "plat.io.api.batch.v1.PodFailurePolicyOnExitCodesRequirement"
    unpacked = protobuf.encode_message(name, {"operator": "In", "values": [1, 2, 300]})
    assert protobuf.decode_message(name, unpacked) == {"operator": "In", "values": [1, 2, 300]}
    field = next(f for f in schema.message(name).ordered if f.name == "values")
    packed = _len(field.number, b"\x01\x02" + _varint(300))
    assert protobuf.decode_message(name, packed)["values"] == [1, 2, 300]


def test_inline_struct_is_flattened() -> None:
    obj = {"name": "data", "configMap": {"name": "cm", "optional": True}}
    raw = protobuf.encode_message(f"{CORE}.Volume", obj)
    assert protobuf.decode_message(f"{CORE}.Volume", raw) == obj


def test_special_json_forms() -> None:
    lease = "plat.io.api.coordination.v1.LeaseSpec"
    obj = {"holderIdentity": "a", "acquireTime": "2024-05-06T07:08:09.123456Z",
           "renewTime": "2024-05-06T07:08:10.000001Z", "leaseDurationSeconds": 15}
    assert protobuf.decode_message(lease, protobuf.encode_message(lease, obj)) == obj
    ref = "plat.io.apimachinery.pkg.apis.meta.v1.Status"
    assert protobuf.decode_message(ref, b"") == {}


def test_time_keeps_whole_seconds_only() -> None:
    meta = "plat.io.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    raw = protobuf.encode_message(meta, {"creationTimestamp": "2020-01-02T03:04:05.9+01:00"})
    assert protobuf.decode_message(meta, raw) == {"creationTimestamp": "2020-01-02T02:04:05Z"}


@pytest.mark.parametrize(("nanos", "text"), [
    (0, "0s"), (1, "1ns"), (1500, "1.5µs"), (2_000_000, "2ms"), (1_500_000_000, "1.5s"),
    (90 * 10**9, "1m30s"), (3600 * 10**9, "1h0m0s"), (-(5 * 60 + 1) * 10**9, "-5m1s"),
    (26 * 3600 * 10**9 + 1, "26h0m0.000000001s"),
])
def test_duration_format_and_parse(nanos: int, text: str) -> None:
    assert wellknown.format_duration(nanos) == text
    assert wellknown.parse_duration(text) == nanos


@pytest.mark.parametrize("text", ["", "1", "1x", "h", "1.s5", "--1s", "9999999999h"])
def test_bad_duration(text: str) -> None:
    with pytest.raises(protobuf.ProtobufError):
        wellknown.parse_duration(text)


# --- bad input ----------------------------------------------------------------------------

@pytest.mark.parametrize("body", [
    b"", b"k8s", b"{}", b"k8s\x01" + b"\x0a\x00",
    b"k8s\x00\x0a", b"k8s\x00\x0a\x05\x0a\x02v1", b"k8s\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
    b"k8s\x00\x08\x01",  # typeMeta as a varint
    b"k8s\x00\x0b",  # wire type 3 (groups)
])
def test_garbage_envelope(body: bytes) -> None:
    with pytest.raises(protobuf.ProtobufError):
        protobuf.decode(body)


@pytest.mark.parametrize("raw", [
    _len(1, b"\x0a\x05ab"),  # length past the end of metadata
    _len(1, _len(1, b"\xff\xfe")),  # invalid UTF-8 name
    b"\x08\x01",  # metadata (a message) as a varint
    _len(4, b"\x01"),  # immutable (a bool) as length-delimited
    _len(1, _len(8, b"\x08" + _varint(1 << 62))),  # creationTimestamp out of range
    b"\x00\x00",  # field number 0
])
def test_garbage_message(raw: bytes) -> None:
    with pytest.raises(protobuf.ProtobufError):
        protobuf.decode(_envelope("v1", "ConfigMap", raw))


def test_bad_embedded_json() -> None:
    revision = _len(1, b"") + _len(2, _len(1, b"{not json"))
    with pytest.raises(protobuf.ProtobufError, match="embedded JSON"):
        protobuf.decode(_envelope("apps/v1", "ControllerRevision", revision))


def test_mutated_golden_bytes_never_crash() -> None:
    rng = random.Random(1234)
    bodies = [p.read_bytes() for p in sorted(GOLDEN.glob("*.pb"))]
    for _ in range(3000):
        body = bytearray(rng.choice(bodies))
        if rng.random() < 0.5:
            body = body[: rng.randrange(5, len(body))]
        for _ in range(rng.randrange(1, 4)):
            body[rng.randrange(4, len(body))] = rng.randrange(256)
        try:
            protobuf.decode(bytes(body), api_version="v1", kind="WatchEvent")
        except (protobuf.ProtobufError, protobuf.UnknownKind):
            pass


@pytest.mark.parametrize("obj", [
    {"apiVersion": "v1", "kind": "ConfigMap", "data": ["a"]},
    {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": 1}},
    {"apiVersion": "v1", "kind": "ConfigMap", "immutable": "yes"},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": "x"},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generation": 1.5}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generation": 1 << 70}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"finalizers": "a"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"creationTimestamp": "yesterday"}},
    {"apiVersion": "v1", "kind": "Secret", "data": {"a": "not base64!"}},
    {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"ports": [
        {"containerPort": True}]}]}},
    {"apiVersion": 1, "kind": "ConfigMap"},
])
def test_encode_rejects_objects_that_do_not_fit(obj: dict[str, Any]) -> None:
    with pytest.raises(protobuf.ProtobufError):
        protobuf.encode(obj)


def test_storage_class_name_keeps_empty_string() -> None:
    spec = "plat.io.api.core.v1.PersistentVolumeClaimSpec"
    raw = protobuf.encode_message(spec, {"storageClassName": "", "volumeName": ""})
    assert protobuf.decode_message(spec, raw) == {"storageClassName": ""}


def test_watch_frames() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},
          "data": {"k": "v"}}
    frame = protobuf.encode_watch_event("ADDED", cm)
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    assert frame[4:6] == b"\x0a\x05"  # WatchEvent written raw: no magic
    assert protobuf.decode_watch_event(frame) == {"type": "ADDED", "object": cm}
    status = {"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": 410,
              "reason": "Expired", "message": "too old resource version: 1 (5)"}
    decoded = protobuf.decode_watch_event(protobuf.encode_watch_event("ERROR", status))
    assert decoded == {"type": "ERROR", "object": status}
    with pytest.raises(protobuf.ProtobufError):
        protobuf.decode_watch_event(frame[:-1])
    with pytest.raises(protobuf.ProtobufError):
        protobuf.decode_watch_event(b"\x00")


def test_envelope_without_kind_is_a_decode_error() -> None:
    with pytest.raises(protobuf.ProtobufError, match="'Kind' is missing"):
        protobuf.decode(_envelope("v1", "", b""))

"""Protobuf request bodies (the envelope of SPEC 4.3) as stock kubectl's create sends them."""

from __future__ import annotations

import pytest

from apiserver.endpoints import protobuf
from tests.apiserver.endpoints.conftest import CM


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _ld(num: int, payload: bytes) -> bytes:
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def _s(num: int, text: str) -> bytes:
    return _ld(num, text.encode())


def _envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    return protobuf.MAGIC + _ld(1, _s(1, api_version) + _s(2, kind)) + _ld(2, raw)


def _configmap(name: str) -> bytes:
    meta = (_s(1, name) + _s(2, "") + _ld(8, b"") + _varint(7 << 3) + _varint(0)
            + _ld(11, _s(1, "app") + _s(2, "web")) + _s(14, "f/x"))
    raw = _ld(1, meta) + _ld(2, _s(1, "k") + _s(2, "v")) + _ld(3, _s(1, "b") + _ld(2, b"\x00\x01"))
    return _envelope("v1", "ConfigMap", raw)


def test_decode_configmap() -> None:
    obj = protobuf.decode(_configmap("a"))
    assert obj == {"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "a", "labels": {"app": "web"}, "finalizers": ["f/x"]},
                   "data": {"k": "v"}, "binaryData": {"b": "AAE="}}


def test_decode_errors() -> None:
    with pytest.raises(protobuf.ProtobufError):
        protobuf.decode(b"{}")
    with pytest.raises(protobuf.ProtobufError):
        protobuf.decode(protobuf.MAGIC + b"\x0a\x7f")  # length past the end
    with pytest.raises(protobuf.UnknownKind):
        protobuf.decode(_envelope("apps/v1", "Deployment", b""))


async def test_create_with_protobuf_body(client) -> None:
    for ctype in ("application/vnd.kubernetes.protobuf", "application/vnd.platform.protobuf"):
        name = ctype.split(".")[1]
        r = await client.post(CM, data=_configmap(name), headers={
            "Content-Type": ctype, "Accept": "application/vnd.kubernetes.protobuf,application/json"})
        body = await r.json()
        assert r.status == 201, body
        assert body["metadata"]["name"] == name and body["data"] == {"k": "v"}
    r = await client.post(CM, data=protobuf.MAGIC + b"\xff", headers={
        "Content-Type": "application/vnd.kubernetes.protobuf"})
    assert r.status == 400
    r = await client.post("/apis/apps/v1/namespaces/ns1/statefulsets",
                          data=_envelope("apps/v1", "StatefulSet", b""),
                          headers={"Content-Type": "application/vnd.kubernetes.protobuf"})
    assert r.status == 415

"""Every message of the schema: a sample object with every field set survives encode ->
decode, so the JSON names, inline structs and special types hold beyond the golden kinds."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver import protobuf
from apiserver.protobuf import schema
from apiserver.protobuf.schema import Kind, Message, Special

SPECIAL_SAMPLES: dict[Special, Any] = {
    Special.TIME: "2020-01-02T03:04:05Z", Special.MICROTIME: "2020-01-02T03:04:05.123456Z",
    Special.DURATION: "1m30s", Special.INT_OR_STRING: "25%", Special.QUANTITY: "1Gi",
    Special.RAW_EXTENSION: {"a": 1}, Special.FIELDS_V1: {"f:a": {}},
    Special.STRING_LIST: ["x", "y"],
}
SCALAR_SAMPLES: dict[Kind, Any] = {
    Kind.STRING: "s", Kind.BYTES: "AQI=", Kind.INT32: -7, Kind.INT64: 1 << 40, Kind.BOOL: True,
}
MAX_DEPTH = 6


def _value(kind: Kind, message: str | None, special: Special, depth: int) -> Any:
    if special != Special.NONE:
        return SPECIAL_SAMPLES[special]
    if kind == Kind.MESSAGE:
        assert message is not None
        return _sample(schema.message(message), depth + 1)
    return SCALAR_SAMPLES[kind]


def _sample(msg: Message, depth: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if depth > MAX_DEPTH:
        return out
    for f in msg.ordered:
        if f.map is not None:
            mt = f.map
            out[f.name] = {"k": _value(mt.value, mt.value_message, mt.value_special, depth)}
            continue
        value = _value(f.kind, f.message, f.special, depth)
        if f.inline:
            assert not set(value) & set(out), f"{msg.name}.{f.name} clashes with its parent"
            out.update(value)
        else:
            out[f.name] = [value] if f.repeated else value
    return out


NAMES = sorted(name for name, msg in schema.messages().items()
               if msg.special == Special.NONE and not name.endswith("runtime.Unknown"))


def test_schema_is_complete() -> None:
    assert len(schema.messages()) == 1133
    assert len(NAMES) > 1100


@pytest.mark.parametrize("prefix", sorted({name.rsplit(".", 2)[0] for name in NAMES}))
def test_every_message_round_trips(prefix: str) -> None:
    for name in NAMES:
        if name.rsplit(".", 2)[0] != prefix:
            continue
        obj = _sample(schema.message(name))
        raw = protobuf.encode_message(name, obj)
        assert protobuf.decode_message(name, raw) == obj, name


def test_json_names_that_differ_from_protobuf_names() -> None:
    def names(message: str) -> set[str]:
        return {f.name for f in schema.message(message).ordered}

    assert "webhooks" in names("plat.io.api.admissionregistration.v1."
                               "ValidatingWebhookConfiguration")
    assert "uid" in names("plat.io.api.authentication.v1.BoundObjectReference")
    assert "apiGroup" in names("plat.io.api.networking.v1.IngressClassParametersReference")
    assert "Port" in names("plat.io.api.core.v1.DaemonEndpoint")  # really "Port" in JSON
    volume = {f.name: f for f in schema.message("plat.io.api.core.v1.Volume").ordered}
    assert volume["volumeSource"].inline
    runtime_class = {f.name: f for f in schema.message("plat.io.api.node.v1.RuntimeClass").ordered}
    assert not runtime_class["handler"].inline  # a string, not the Probe's embedded struct


def test_omitted_zero_table_names_real_scalar_fields() -> None:
    for message, fields in schema.OMITTED_ZEROS.items():
        by_name = {f.name: f for f in schema.message(message).ordered}
        for name in fields:
            assert by_name[name].omit_zero, f"{message}.{name}"

"""Upstream's v1.33 round-trip vectors: decode(.pb) == .json and encode(.json) == .pb."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from apiserver import protobuf

GOLDEN = Path(__file__).resolve().parents[2] / "data" / "protobuf-golden"
NAMES = sorted(p.stem for p in GOLDEN.glob("*.pb"))


def _type_hint(name: str) -> dict[str, str]:
    # <group>.<version>.<Kind>; core is the "v1" group version. Only used when the
    # envelope's typeMeta is empty (WatchEvent).
    group, version, kind = name.split(".")
    return {"api_version": version if group == "core" else f"{group}/{version}", "kind": kind}


def _load(name: str) -> tuple[bytes, dict[str, Any]]:
    body = (GOLDEN / f"{name}.pb").read_bytes()
    obj = json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8"))
    return body, obj


def test_all_vectors_present() -> None:
    assert len(NAMES) == 49


@pytest.mark.parametrize("name", NAMES)
def test_decode_matches_json(name: str) -> None:
    body, obj = _load(name)
    assert protobuf.decode(body, **_type_hint(name)) == obj


@pytest.mark.parametrize("name", NAMES)
def test_encode_matches_bytes(name: str) -> None:
    body, obj = _load(name)
    assert protobuf.encode(obj, **_type_hint(name)) == body


@pytest.mark.parametrize("name", NAMES)
def test_typed_message_round_trip(name: str) -> None:
    _, obj = _load(name)
    hint = _type_hint(name)
    type_name = protobuf.type_name_for(obj.get("apiVersion") or hint["api_version"],
                                       obj.get("kind") or hint["kind"])
    raw = protobuf.encode_message(type_name, obj)
    decoded = protobuf.decode_message(type_name, raw)
    assert decoded == {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}

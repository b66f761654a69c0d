"""The OpenAPI v3 documents say, for every kind's PATCH operation, that the server does field
validation (what stock kubectl looks for before it sends fieldValidation=Strict)."""

from __future__ import annotations

import orjson

from apiserver.openapi import OpenAPIV3
from apiserver.registry.catalog import builtin_resources


def patch_params(doc: dict, group: str, version: str, kind: str) -> list[list[str]]:  # type: ignore[type-arg]
    found = []
    for ops in doc["paths"].values():
        op = ops.get("patch")
        if op and op["x-kubernetes-group-version-kind"] == {
                "group": group, "version": version, "kind": kind}:
            found.append([p["name"] for p in op["parameters"] if p["in"] == "query"])
    return found


def test_every_kind_advertises_field_validation() -> None:
    api = OpenAPIV3(builtin_resources())
    index = orjson.loads(api.index)["paths"]
    assert {"api/v1", "apis/apps/v1", "apis/coordination.plat.io/v1"} <= set(index)
    for key, entry in index.items():
        assert entry["serverRelativeURL"].startswith(f"/openapi/v3/{key}?hash=")
    for info in builtin_resources():
        if info.subresource or "patch" not in info.verbs:
            continue
        key = f"api/{info.version}" if not info.group else f"apis/{info.group}/{info.version}"
        doc = orjson.loads(api.documents[key])
        assert doc["openapi"].startswith("3.")
        params = patch_params(doc, info.group, info.version, info.kind)
        assert params and all("fieldValidation" in p for p in params), info.resource


def test_hash_changes_with_the_document() -> None:
    a = OpenAPIV3(builtin_resources())
    b = OpenAPIV3([r for r in builtin_resources() if r.resource != "leases"])
    assert a.hashes["api/v1"] == b.hashes["api/v1"]
    assert "apis/coordination.plat.io/v1" not in b.hashes

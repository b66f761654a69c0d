"""PATCH: JSON Patch (with test), merge patch, routed-but-unsupported types, limits."""

from __future__ import annotations

import orjson

from apiserver.endpoints.patch import merge_patch
from tests.apiserver.endpoints.conftest import CM, create_cm

JP = {"Content-Type": "application/json-patch+json"}
MP = {"Content-Type": "application/merge-patch+json"}


def test_merge_patch_rfc7386_examples() -> None:
    assert merge_patch({"a": "b"}, {"a": "c"}) == {"a": "c"}
    assert merge_patch({"a": "b"}, {"b": "c"}) == {"a": "b", "b": "c"}
    assert merge_patch({"a": "b"}, {"a": None}) == {}
    assert merge_patch({"a": "b", "b": "c"}, {"a": None}) == {"b": "c"}
    assert merge_patch({"a": ["b"]}, {"a": "c"}) == {"a": "c"}
    assert merge_patch({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}) == {"a": {"b": "d"}}
    assert merge_patch({"a": [{"b": "c"}]}, {"a": [1]}) == {"a": [1]}
    assert merge_patch({"e": None}, {"a": 1}) == {"e": None, "a": 1}
    assert merge_patch([1, 2], {"a": "b", "c": None}) == {"a": "b"}
    assert merge_patch({}, {"a": {"bb": {"ccc": None}}}) == {"a": {"bb": {}}}


async def test_json_patch(client) -> None:
    await create_cm(client, "a")
    ops = [{"op": "test", "path": "/data/k", "value": "v"},
           {"op": "add", "path": "/data/n", "value": "1"},
           {"op": "remove", "path": "/data/k"}]
    r = await client.patch(f"{CM}/a", data=orjson.dumps(ops), headers=JP)
    assert r.status == 200, await r.text()
    assert (await r.json())["data"] == {"n": "1"}


async def test_json_patch_failed_test_is_422(client, stores) -> None:
    await create_cm(client, "a")
    ops = [{"op": "test", "path": "/data/k", "value": "other"},
           {"op": "add", "path": "/data/n", "value": "1"}]
    r = await client.patch(f"{CM}/a", data=orjson.dumps(ops), headers=JP)
    body = await r.json()
    assert r.status == 422 and body["reason"] == "Invalid"
    assert body["message"] == "the server rejected our request due to an error in our request"
    assert body["details"] == {}
    assert stores[("", "v1", "configmaps")].objects[("ns1", "a")]["data"] == {"k": "v"}
    r = await client.patch(f"{CM}/a", headers=JP,
                           data=orjson.dumps([{"op": "remove", "path": "/nope/x"}]))
    assert r.status == 422


async def test_json_patch_malformed_400(client) -> None:
    await create_cm(client, "a")
    for bad in (b"{", b'{"op":"add"}', b'[{"op":"frobnicate","path":"/a"}]', b'["x"]'):
        r = await client.patch(f"{CM}/a", data=bad, headers=JP)
        assert r.status == 400, bad
        assert (await r.json())["reason"] == "BadRequest"


async def test_json_patch_too_many_ops(client) -> None:
    await create_cm(client, "a")
    ops = [{"op": "add", "path": "/data/x", "value": "1"}] * 10001
    r = await client.patch(f"{CM}/a", data=orjson.dumps(ops), headers=JP)
    assert r.status == 413
    assert (await r.json())["message"] == ("Request entity too large: The allowed maximum "
                                           "operations in a JSON patch is 10000, got 10001")


async def test_merge_patch(client) -> None:
    await create_cm(client, "a", metadata={"name": "a", "labels": {"x": "1", "y": "2"}})
    r = await client.patch(f"{CM}/a", data=b'{"metadata":{"labels":{"x":null,"z":"3"}}}',
                           headers=MP)
    body = await r.json()
    assert r.status == 200
    assert body["metadata"]["labels"] == {"y": "2", "z": "3"}
    r = await client.patch(f"{CM}/a", data=b"[1]", headers=MP)
    assert r.status == 400


async def test_patch_missing_object_404(client) -> None:
    r = await client.patch(f"{CM}/nope", data=b"{}", headers=MP)
    body = await r.json()
    assert r.status == 404 and body["message"] == 'configmaps "nope" not found'


async def test_patch_cannot_rename(client) -> None:
    await create_cm(client, "a")
    r = await client.patch(f"{CM}/a", data=b'{"metadata":{"name":"b"}}', headers=MP)
    assert r.status == 400
    assert (await r.json())["message"] == ("the name of the object (b) does not match the name "
                                           "on the URL (a)")
    r = await client.patch(f"{CM}/a", data=b'{"metadata":{"namespace":"ns9"}}', headers=MP)
    assert r.status == 400


async def test_patch_stale_resource_version_409(client) -> None:
    await create_cm(client, "a")
    r = await client.patch(f"{CM}/a", data=b'{"metadata":{"resourceVersion":"1"}}', headers=MP)
    assert r.status == 409


async def test_patch_field_validation(client) -> None:
    await create_cm(client, "a")
    r = await client.patch(f"{CM}/a", data=b'{"metadata":{"foo":"x"}}', headers=MP)
    assert r.status == 200
    assert r.headers.getall("Warning") == ['299 - "unknown field \\"metadata.foo\\""']
    assert "foo" not in (await r.json())["metadata"]
    r = await client.patch(f"{CM}/a?fieldValidation=Strict", data=b'{"spec":{}}', headers=MP)
    assert r.status == 400
    assert (await r.json())["message"] == 'strict decoding error: unknown field "spec"'


async def test_unsupported_patch_types_415(client) -> None:
    await create_cm(client, "a")
    for ctype in ("application/strategic-merge-patch+json", "application/apply-patch+yaml",
                  "application/apply-patch+cbor", "application/json", "text/plain", ""):
        r = await client.patch(f"{CM}/a", data=b"{}", headers={"Content-Type": ctype})
        assert r.status == 415, ctype
        body = await r.json()
        assert body["message"] == ("the body of the request was in an unknown format - accepted "
                                   "media types include: application/json-patch+json, "
                                   "application/merge-patch+json")


async def test_patch_force_forbidden(client) -> None:
    await create_cm(client, "a")
    r = await client.patch(f"{CM}/a?force=true", data=b"{}", headers=MP)
    assert r.status == 422
    assert (await r.json())["message"] == ('PatchOptions.meta.plat.io "" is invalid: force: '
                                           "Forbidden: may not be specified for non-apply patch")


async def test_patch_dry_run(client, stores) -> None:
    await create_cm(client, "a")
    r = await client.patch(f"{CM}/a?dryRun=All", data=b'{"data":{"k":"z"}}', headers=MP)
    assert r.status == 200 and (await r.json())["data"] == {"k": "z"}
    assert stores[("", "v1", "configmaps")].objects[("ns1", "a")]["data"] == {"k": "v"}

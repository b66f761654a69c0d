"""Response negotiation: Accept fallback, YAML, Table, PartialObjectMetadata, 406, pretty,
gzip."""

from __future__ import annotations

import gzip

import orjson
import yaml

from apiserver.endpoints.negotiation import negotiate_output
from tests.apiserver.endpoints.conftest import CM, create_cm

TABLE = "application/json;as=Table;g=meta.plat.io;v=v1"


def test_negotiate_unit() -> None:
    assert negotiate_output("").media_type == "application/json"
    assert negotiate_output("*/*").media_type == "application/json"
    assert negotiate_output("application/*").media_type == "application/json"
    assert negotiate_output("application/yaml").media_type == "application/yaml"
    out = negotiate_output("application/cbor, application/yaml")
    assert out.media_type == "application/yaml"
    out = negotiate_output("application/vnd.kubernetes.protobuf, application/yaml",
                           allow_protobuf=False)
    assert out.media_type == "application/yaml"
    out = negotiate_output("application/json;q=0.5, application/yaml;q=0.9")
    assert out.media_type == "application/yaml"
    out = negotiate_output("application/json;as=Table;g=meta.plat.io;v=v1beta1")
    assert (out.convert, out.convert_version) == ("Table", "v1beta1")
    # a transformation we cannot do falls back
    out = negotiate_output("application/json;as=Deployment;g=apps;v=v1, application/json")
    assert out.convert == ""
    assert negotiate_output("application/json;pretty=1").pretty


async def test_yaml_out(client) -> None:
    await create_cm(client, "a")
    r = await client.get(f"{CM}/a", headers={"Accept": "application/yaml"})
    assert r.status == 200 and r.headers["Content-Type"] == "application/yaml"
    doc = yaml.safe_load(await r.text())
    assert doc["metadata"]["name"] == "a" and doc["data"] == {"k": "v"}


async def test_yaml_in(client) -> None:
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\n  creationTimestamp: 2024-01-01T00:00:00Z\ndata:\n  when: 2024-01-01\n"
    r = await client.post(CM, data=body, headers={"Content-Type": "application/yaml"})
    assert r.status == 201, await r.text()
    assert (await r.json())["data"] == {"when": "2024-01-01"}  # timestamps stay strings


async def test_not_acceptable(client) -> None:
    await create_cm(client, "a")
    for accept in ("application/cbor", "text/html",
                   "application/json;as=Table;g=meta.plat.io;v=v2"):
        r = await client.get(f"{CM}/a", headers={"Accept": accept})
        assert r.status == 406, accept
        body = await r.json()
        assert body["reason"] == "NotAcceptable"
        assert body["message"] == ("only the following media types are accepted: "
                                   "application/json, application/yaml, "
                                   "application/vnd.platform.protobuf")
    r = await client.get(f"{CM}/a", headers={"Accept": "application/cbor, application/json"})
    assert r.status == 200
    r = await client.get(f"{CM}?watch=1", headers={"Accept": "application/yaml"})
    assert r.status == 406  # the Status itself is YAML, as upstream's ErrorNegotiated
    assert yaml.safe_load(await r.text())["message"] == (
        "only the following media types are accepted: application/json, "
        "application/vnd.platform.protobuf")


async def test_table_list_and_get(client) -> None:
    await create_cm(client, "a")
    await create_cm(client, "b")
    r = await client.get(CM, headers={"Accept": f"{TABLE}, application/json"})
    t = await r.json()
    assert r.status == 200
    assert t["kind"] == "Table" and t["apiVersion"] == "meta.plat.io/v1"
    assert [c["name"] for c in t["columnDefinitions"]] == ["Name", "Created At"]
    assert t["columnDefinitions"][0] == {"name": "Name", "type": "string", "format": "name",
                                         "description": "Name", "priority": 0}
    assert t["metadata"]["resourceVersion"]
    assert [row["cells"][0] for row in t["rows"]] == ["a", "b"]
    obj = t["rows"][0]["object"]
    assert obj["kind"] == "PartialObjectMetadata" and obj["apiVersion"] == "meta.plat.io/v1"
    assert obj["metadata"]["name"] == "a" and "data" not in obj
    r = await client.get(f"{CM}?includeObject=Object", headers={"Accept": TABLE})
    assert (await r.json())["rows"][0]["object"]["data"] == {"k": "v"}
    r = await client.get(f"{CM}?includeObject=None", headers={"Accept": TABLE})
    assert (await r.json())["rows"][0]["object"] is None
    r = await client.get(f"{CM}?includeObject=Some", headers={"Accept": TABLE})
    assert r.status == 422
    r = await client.get(f"{CM}/a", headers={"Accept": TABLE})
    t = await r.json()
    assert len(t["rows"]) == 1 and t["rows"][0]["cells"][0] == "a"
    # kubectl asks for meta.k8s.io and gets that group back
    r = await client.get(CM, headers={
        "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"})
    assert (await r.json())["apiVersion"] == "meta.k8s.io/v1"
    # YAML tables are allowed
    r = await client.get(CM, headers={"Accept": "application/yaml;as=Table;g=meta.plat.io;v=v1"})
    assert yaml.safe_load(await r.text())["kind"] == "Table"


async def test_partial_object_metadata(client) -> None:
    await create_cm(client, "a")
    acc = "application/json;as=PartialObjectMetadataList;g=meta.plat.io;v=v1"
    r = await client.get(CM, headers={"Accept": acc})
    body = await r.json()
    assert body["kind"] == "PartialObjectMetadataList"
    assert body["items"][0] == {"kind": "PartialObjectMetadata",
                                "apiVersion": "meta.plat.io/v1",
                                "metadata": body["items"][0]["metadata"]}
    r = await client.get(f"{CM}/a", headers={
        "Accept": "application/json;as=PartialObjectMetadata;g=meta.plat.io;v=v1"})
    assert (await r.json())["kind"] == "PartialObjectMetadata"


async def test_status_is_never_a_table(client) -> None:
    await create_cm(client, "a")
    r = await client.delete(f"{CM}/a", headers={"Accept": TABLE})
    assert (await r.json())["kind"] == "Status"
    r = await client.get(f"{CM}/zzz", headers={"Accept": TABLE})
    assert r.status == 404 and (await r.json())["kind"] == "Status"


async def test_pretty(client) -> None:
    await create_cm(client, "a")
    r = await client.get(f"{CM}/a")
    assert b"\n  " not in await r.read()
    r = await client.get(f"{CM}/a?pretty=true")
    assert b'{\n  "' in await r.read()
    r = await client.get(f"{CM}/a", headers={"User-Agent": "curl/8.0"})
    assert b'{\n  "' in await r.read()
    r = await client.get(f"{CM}/a?pretty=false", headers={"User-Agent": "curl/8.0"})
    assert b"\n  " not in await r.read()
    r = await client.get(f"{CM}/a", headers={"Accept": "application/json;pretty=1"})
    assert b'{\n  "' in await r.read()


async def test_gzip_large_list(client, stores) -> None:
    store = stores[("", "v1", "configmaps")]
    for i in range(60):
        store.objects[("ns1", f"c{i:03}")] = {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": f"c{i:03}", "namespace": "ns1", "resourceVersion": "2"},
            "data": {"blob": "x" * 4096}}
    r = await client.get(CM, headers={"Accept-Encoding": "gzip"}, auto_decompress=False)
    assert r.status == 200
    assert r.headers["Content-Encoding"] == "gzip"
    body = orjson.loads(gzip.decompress(await r.read()))
    assert len(body["items"]) == 60
    r = await client.get(CM, headers={"Accept-Encoding": "identity"}, auto_decompress=False)
    assert "Content-Encoding" not in r.headers
    # small responses are never compressed
    r = await client.get(f"{CM}/c000", headers={"Accept-Encoding": "gzip"},
                         auto_decompress=False)
    assert "Content-Encoding" not in r.headers

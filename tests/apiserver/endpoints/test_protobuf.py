"""Protobuf through the handlers (the codec itself is apiserver.protobuf's and tested there):
request bodies as stock kubectl's create sends them, negotiated responses, watch frames."""

from __future__ import annotations

import asyncio
import struct

from apiserver import protobuf
from tests.apiserver.endpoints.conftest import CM, create_cm

K8S_PB = "application/vnd.kubernetes.protobuf"
PLAT_PB = "application/vnd.platform.protobuf"


def _configmap(name: str) -> bytes:
    return protobuf.encode({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": name, "labels": {"app": "web"}},
                            "data": {"k": "v"}})


async def test_create_with_protobuf_body(client) -> None:
    for ctype in (K8S_PB, PLAT_PB):
        name = ctype.split(".")[1]
        r = await client.post(CM, data=_configmap(name), headers={
            "Content-Type": ctype, "Accept": f"{ctype},application/json"})
        assert r.status == 201, await r.text()
        assert r.headers["Content-Type"] == ctype  # answered in the type asked for
        body = protobuf.decode(await r.read())
        assert body["metadata"]["name"] == name and body["data"] == {"k": "v"}
    r = await client.post(CM, data=protobuf.MAGIC + b"\xff", headers={"Content-Type": K8S_PB})
    assert r.status == 400
    r = await client.post(CM, data=b"{}", headers={"Content-Type": K8S_PB})
    assert r.status == 400


async def test_protobuf_get_list_and_errors(client) -> None:
    await create_cm(client, "a")
    r = await client.get(f"{CM}/a", headers={"Accept": K8S_PB})
    assert r.status == 200 and r.headers["Content-Type"] == K8S_PB
    assert protobuf.decode(await r.read())["data"] == {"k": "v"}
    r = await client.get(CM, headers={"Accept": K8S_PB})
    lst = protobuf.decode(await r.read())
    assert lst["kind"] == "ConfigMapList" and lst["items"][0]["metadata"]["name"] == "a"
    r = await client.get(f"{CM}/zzz", headers={"Accept": K8S_PB})
    assert r.status == 404
    status = protobuf.decode(await r.read())
    assert status["kind"] == "Status" and status["reason"] == "NotFound"
    # Tables are JSON/YAML only: a protobuf Table request falls back
    r = await client.get(CM, headers={
        "Accept": f"{K8S_PB};as=Table;g=meta.k8s.io;v=v1, application/json"})
    assert r.headers["Content-Type"] == "application/json"
    r = await client.get(CM, headers={
        "Accept": f"{K8S_PB};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"})
    partial = protobuf.decode(await r.read())
    assert partial["kind"] == "PartialObjectMetadataList"


async def test_protobuf_watch_frames(client) -> None:
    await create_cm(client, "a")
    resp = await client.get(f"{CM}?watch=1&timeoutSeconds=1", headers={"Accept": K8S_PB})
    assert resp.status == 200
    assert resp.headers["Content-Type"] == f"{K8S_PB};stream=watch"
    data = await asyncio.wait_for(resp.read(), 10)
    (size,) = struct.unpack(">I", data[:4])
    event = protobuf.decode_watch_event(data[:4 + size])
    assert event["type"] == "ADDED"
    assert event["object"]["metadata"]["name"] == "a"


async def test_protobuf_not_offered_without_messages() -> None:
    from aiohttp import web
    from aiohttp.test_utils import TestClient, TestServer

    from apiserver.endpoints import install
    from apiserver.resources import ResourceInfo
    from tests.apiserver.endpoints.memstore import MemStore

    widgets = MemStore(ResourceInfo(group="example.io", version="v1", resource="widgets",
                                    kind="Widget", namespaced=False))
    app = web.Application()
    install(app, {("example.io", "v1", "widgets"): widgets})
    async with TestClient(TestServer(app)) as c:
        r = await c.get("/apis/example.io/v1/widgets", headers={"Accept": K8S_PB})
        assert r.status == 406
        assert (await r.json())["message"] == ("only the following media types are accepted: "
                                               "application/json, application/yaml")
        r = await c.get("/apis/example.io/v1/widgets",
                        headers={"Accept": f"{K8S_PB}, application/json"})
        assert r.status == 200 and r.headers["Content-Type"] == "application/json"

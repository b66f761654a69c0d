"""Lists built from the watch cache's per-object encodings (endpoints/list.py and the generic
store's ``list_encoded``) are byte for byte what encoding the list object gives."""

from __future__ import annotations

import gzip
from typing import Any

import orjson
import pytest

from apiserver.registry.generic import GenericStore

CM = "/api/v1/namespaces/default/configmaps"
JSON = {"Accept": "application/json", "Accept-Encoding": "identity"}
PROTOBUF = {"Accept": "application/vnd.kubernetes.protobuf", "Accept-Encoding": "identity"}


async def _no_encodings(*args: Any, **kwargs: Any) -> None:
    return None


async def _both(real: Any, monkeypatch: pytest.MonkeyPatch, path: str,
                headers: dict[str, str] = JSON) -> tuple[bytes, bytes]:
    """(body from the encodings, body from the list object) for the same request."""
    calls: list[int] = []
    original = GenericStore.list_encoded

    async def counting(*args: Any, **kwargs: Any) -> Any:
        out = await original(*args, **kwargs)
        calls.append(1 if out is not None else 0)
        return out

    with monkeypatch.context() as m:
        m.setattr(GenericStore, "list_encoded", counting)
        r = await real.get(path, headers=headers)
        fast = await r.read()
        assert r.status == 200, fast
    assert calls == [1], "the list did not take the encoded path"
    with monkeypatch.context() as m:
        m.setattr(GenericStore, "list_encoded", _no_encodings)
        r = await real.get(path, headers=headers)
        slow = await r.read()
        assert r.status == 200, slow
    return fast, slow


async def test_encoded_list_equals_encoded_list_object(real, monkeypatch) -> None:
    for i in range(12):
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": f"c{i:02}", "labels": {"n": str(i % 3)}},
                "data": {"k": "v" * i}}
        r = await real.post(CM, json=body)
        assert r.status == 201, await r.text()
    r = await real.post("/api/v1/namespaces", json={"metadata": {"name": "other"}})
    assert r.status == 201
    r = await real.post("/api/v1/namespaces/other/configmaps",
                        json={"metadata": {"name": "o"}, "data": {"x": "y"}})
    assert r.status == 201
    r = await real.patch(f"{CM}/c03", data=b'{"data":{"k":"changed"}}',
                         headers={"Content-Type": "application/merge-patch+json"})
    assert r.status == 200
    r = await real.delete(f"{CM}/c04")
    assert r.status == 200
    for query in ("", "?labelSelector=n%3D1", "?limit=5", "?resourceVersion=0",
                  "?fieldSelector=metadata.name%3Dc05", "?labelSelector=n%3D2&limit=2",
                  "?labelSelector=n%3D9"):
        fast, slow = await _both(real, monkeypatch, CM + query)
        assert fast == slow, query
        # twice: the second comes from the cached encodings
        again, _ = await _both(real, monkeypatch, CM + query)
        assert again == slow, query
        fast, slow = await _both(real, monkeypatch, CM + query, PROTOBUF)
        assert fast == slow and fast.startswith(b"k8s\x00"), query
        again, _ = await _both(real, monkeypatch, CM + query, PROTOBUF)
        assert again == slow, query
    fast, slow = await _both(real, monkeypatch, "/api/v1/configmaps")
    assert fast == slow
    names = [i["metadata"]["name"] for i in orjson.loads(fast)["items"]]
    assert "o" in names and "c04" not in names
    token = orjson.loads((await _both(real, monkeypatch, CM + "?limit=5"))[0])
    cont = token["metadata"]["continue"]
    fast, slow = await _both(real, monkeypatch, f"{CM}?limit=5&continue={cont}")
    assert fast == slow
    # a changed object is listed in its new state (its cached encoding was dropped)
    r = await real.patch(f"{CM}/c03", data=b'{"data":{"k":"again"}}',
                         headers={"Content-Type": "application/merge-patch+json"})
    rv = (await r.json())["metadata"]["resourceVersion"]
    fast, slow = await _both(real, monkeypatch, CM)
    assert fast == slow
    item = next(i for i in orjson.loads(fast)["items"] if i["metadata"]["name"] == "c03")
    assert item["data"] == {"k": "again"} and item["metadata"]["resourceVersion"] == rv


async def test_other_outputs_take_the_list_object(real) -> None:
    r = await real.post(CM, json={"metadata": {"name": "a"}, "data": {"k": "v"}})
    assert r.status == 201
    r = await real.get(CM, headers={"Accept": "application/yaml"})
    assert r.status == 200 and b"kind: ConfigMapList" in await r.read()
    r = await real.get(CM + "?pretty=true", headers=JSON)
    assert (await r.read()).startswith(b'{\n  "kind": "ConfigMapList"')
    r = await real.get(CM, headers={"Accept": "application/json;as=Table;g=meta.plat.io;v=v1"})
    assert (await r.json())["kind"] == "Table"


async def test_large_encoded_list_is_gzipped(real) -> None:
    for i in range(300):
        r = await real.post(CM, json={"metadata": {"name": f"g{i:03}"}, "data": {"k": "v" * 500}})
        assert r.status == 201
    r = await real.get(CM, headers={"Accept": "application/json", "Accept-Encoding": "gzip"},
                       auto_decompress=False)
    raw = await r.read()
    assert r.headers["Content-Encoding"] == "gzip"
    body = orjson.loads(gzip.decompress(raw))
    assert len(body["items"]) == 300


async def test_protobuf_list_of_a_named_group(real, monkeypatch) -> None:
    sts = "/apis/apps/v1/namespaces/default/statefulsets"
    for i in range(3):
        body = {"apiVersion": "apps/v1", "kind": "StatefulSet",
                "metadata": {"name": f"s{i}"},
                "spec": {"selector": {"matchLabels": {"a": "b"}},
                         "template": {"metadata": {"labels": {"a": "b"}},
                                      "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
        r = await real.post(sts, json=body)
        assert r.status == 201, await r.text()
    for headers in (PROTOBUF, JSON):
        fast, slow = await _both(real, monkeypatch, sts, headers)
        assert fast == slow
        fast, slow = await _both(real, monkeypatch, sts + "?limit=2", headers)
        assert fast == slow

"""The handlers over the real registry (generic store, strategies) on the embedded storage
backend behind the watch cache: the path every request takes in plat-server."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson

CM = "/api/v1/namespaces/default/configmaps"
MP = {"Content-Type": "application/merge-patch+json"}
N = 1000


async def test_crud_round_trip(real) -> None:
    r = await real.post(CM, json={"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "a", "labels": {"t": "1"}},
                                  "data": {"k": "v"}})
    assert r.status == 201, await r.text()
    cm = await r.json()
    assert cm["metadata"]["uid"] and cm["metadata"]["resourceVersion"]
    r = await real.post(CM, json={"metadata": {"name": "a"}})
    assert r.status == 409 and (await r.json())["reason"] == "AlreadyExists"
    r = await real.get(f"{CM}/a")
    assert (await r.json())["data"] == {"k": "v"}
    r = await real.get(f"{CM}?labelSelector=t%3D1")
    assert [i["metadata"]["name"] for i in (await r.json())["items"]] == ["a"]
    stale = dict(cm, data={"k": "old"})
    cm["data"] = {"k": "w"}
    r = await real.put(f"{CM}/a", json=cm)
    assert r.status == 200, await r.text()
    r = await real.put(f"{CM}/a", json=stale)
    assert r.status == 409 and (await r.json())["reason"] == "Conflict"
    r = await real.patch(f"{CM}/a", data=b'{"data":{"x":"y"}}', headers=MP)
    assert r.status == 200 and (await r.json())["data"] == {"k": "w", "x": "y"}
    ops = orjson.dumps([{"op": "test", "path": "/data/k", "value": "nope"}])
    r = await real.patch(f"{CM}/a", data=ops,
                         headers={"Content-Type": "application/json-patch+json"})
    assert r.status == 422
    r = await real.patch(f"{CM}/a?dryRun=All", data=b'{"data":{"k":"dry"}}', headers=MP)
    assert r.status == 200 and (await r.json())["data"]["k"] == "dry"
    r = await real.get(f"{CM}/a")
    assert (await r.json())["data"]["k"] == "w"
    r = await real.get(f"{CM}/a", headers={
        "Accept": "application/json;as=Table;g=meta.plat.io;v=v1"})
    table = await r.json()
    assert table["kind"] == "Table" and table["rows"][0]["cells"][0] == "a"
    r = await real.delete(f"{CM}/a")
    body = await r.json()
    assert r.status == 200 and body["status"] == "Success", body
    r = await real.get(f"{CM}/a")
    assert r.status == 404


async def test_finalizer_delete_and_paging(real) -> None:
    r = await real.post(CM, json={"metadata": {"name": "f", "finalizers": ["x.io/y"]}})
    assert r.status == 201, await r.text()
    r = await real.delete(f"{CM}/f?orphanDependents=false")
    body = await r.json()
    assert r.status == 202 and body["metadata"]["deletionTimestamp"], body
    for i in range(5):
        r = await real.post(CM, json={"metadata": {"name": f"p{i}"}})
        assert r.status == 201
    r = await real.get(f"{CM}?limit=2")
    page = await r.json()
    assert len(page["items"]) == 2 and page["metadata"]["continue"]
    r = await real.get(f"{CM}?limit=2&continue={page['metadata']['continue']}"
                       "&resourceVersion=5")
    assert r.status == 400
    r = await real.get(f"{CM}?limit=10&continue={page['metadata']['continue']}")
    assert r.status == 200 and len((await r.json())["items"]) == 4


async def test_watch_over_registry(real) -> None:
    # An object first: the watch cache of a resource that has never had an event cannot yet
    # confirm a newer global revision (storage/cacher, reported).
    r = await real.post(CM, json={"metadata": {"name": "first"}})
    assert r.status == 201
    r = await real.get(CM)
    rv = (await r.json())["metadata"]["resourceVersion"]
    resp = await real.get(f"{CM}?watch=1&resourceVersion={rv}")
    assert resp.status == 200
    r = await real.post(CM, json={"metadata": {"name": "w"}})
    assert r.status == 201
    line = await asyncio.wait_for(resp.content.readline(), 10)
    event = orjson.loads(line)
    assert event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "w"
    resp.close()


async def test_large_list_from_watch_cache(real, capsys) -> None:
    """Prints the end-to-end time of a 1,000-item list (never asserted: timings vary; the
    10,000-item figure is bench/'s)."""
    items = [{"metadata": {"name": f"c{i:05}"}, "data": {"key": "value" * 4}}
             for i in range(N)]
    sem = asyncio.Semaphore(64)

    async def one(obj: dict[str, Any]) -> None:
        async with sem:
            r = await real.post(CM, json=obj)
            assert r.status == 201

    await asyncio.gather(*(one(o) for o in items))
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        r = await real.get(f"{CM}?resourceVersion=0")
        body = await r.read()
        best = min(best, time.perf_counter() - t0)
    assert len(orjson.loads(body)["items"]) == N
    with capsys.disabled():
        print(f"\n{N}-item list (watch cache, rv=0): {best * 1000:.0f} ms end to end")


async def test_statefulset_strict_and_subresources(real) -> None:
    sts = {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
        "spec": {
            "serviceName": "web", "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{
                "name": "nginx", "image": "nginx:1.27",
                "ports": [{"containerPort": 80, "name": "http"}]}]}},
            "volumeClaimTemplates": [{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                      "metadata": {"name": "data"}, "spec": {
                                          "accessModes": ["ReadWriteOnce"],
                                          "resources": {"requests": {"storage": "1Gi"}}}}],
        },
    }
    base = "/apis/apps/v1/namespaces/default/statefulsets"
    r = await real.post(f"{base}?fieldValidation=Strict", json=sts)
    assert r.status == 201, await r.text()
    assert "Warning" not in r.headers
    r = await real.get(f"{base}/web/scale")
    scale = await r.json()
    assert r.status == 200 and scale["kind"] == "Scale", scale
    r = await real.patch(f"{base}/web/scale", data=b'{"spec":{"replicas":3}}', headers=MP)
    assert r.status == 200, await r.text()
    r = await real.get(f"{base}/web")
    assert (await r.json())["spec"]["replicas"] == 3
    r = await real.get(base, headers={"Accept": "application/vnd.kubernetes.protobuf"})
    assert r.status == 200
    assert r.headers["Content-Type"] == "application/vnd.kubernetes.protobuf"


async def test_base64_data_is_kept_as_the_bytes_it_encodes(real) -> None:
    """Go's base64 decoder skips line breaks and upstream stores bytes, so a Secret's data or
    a ConfigMap's binaryData reads back in canonical base64. Kept as sent, "YQ==\\n" also
    made every protobuf read of a list holding the object fail."""
    ns = "/api/v1/namespaces/default"
    r = await real.post(f"{ns}/secrets", json={
        "metadata": {"name": "wrapped"}, "data": {"a": "Y\r\nQ==", "b": "YWJj\n", "c": "YR=="}})
    assert r.status == 201, await r.text()
    assert (await r.json())["data"] == {"a": "YQ==", "b": "YWJj", "c": "YQ=="}
    r = await real.post(f"{ns}/configmaps", json={
        "metadata": {"name": "wrapped"}, "binaryData": {"b": "Yg==\n"}})
    assert r.status == 201, await r.text()
    assert (await r.json())["binaryData"] == {"b": "Yg=="}
    r = await real.patch(f"{ns}/secrets/wrapped", data=b'{"data":{"d":"ZA==\\r\\n"}}',
                         headers={"Content-Type": "application/merge-patch+json"})
    assert r.status == 200, await r.text()
    assert (await r.json())["data"]["d"] == "ZA=="
    r = await real.get(f"{ns}/secrets", headers={"Accept": "application/vnd.kubernetes.protobuf"})
    assert r.status == 200, await r.text()
    r = await real.post(f"{ns}/secrets", json={"metadata": {"name": "bad"}, "data": {"a": "YQ"}})
    assert r.status == 400  # unpadded: Go's decoder refuses it


async def test_empty_optional_maps_and_lists_are_not_kept(real) -> None:
    """Go's typed objects write these with omitempty: sent empty, they read back absent and
    no manager owns them."""
    ns = "/api/v1/namespaces/default"
    r = await real.post(f"{ns}/configmaps?fieldManager=m", json={"metadata": {
        "name": "empty", "labels": {}, "annotations": {}, "finalizers": [],
        "ownerReferences": []}, "data": {}, "binaryData": {}})
    assert r.status == 201, await r.text()
    obj = await r.json()
    assert set(obj) == {"kind", "apiVersion", "metadata"}
    meta = obj["metadata"]
    assert not {"labels", "annotations", "finalizers", "ownerReferences"} & set(meta)
    owned = orjson.dumps([e.get("fieldsV1") for e in meta.get("managedFields", [])])
    assert b"f:labels" not in owned and b"f:data" not in owned
    r = await real.patch(f"{ns}/configmaps/empty", data=b'{"metadata":{"labels":{"a":"b"}}}',
                         headers={"Content-Type": "application/merge-patch+json"})
    assert (await r.json())["metadata"]["labels"] == {"a": "b"}
    r = await real.patch(f"{ns}/configmaps/empty", data=b'{"metadata":{"labels":{"a":null}}}',
                         headers={"Content-Type": "application/merge-patch+json"})
    assert "labels" not in (await r.json())["metadata"]
    r = await real.post(f"{ns}/secrets", json={"metadata": {"name": "empty"}, "data": {},
                                               "stringData": {}})
    assert r.status == 201, await r.text()
    assert "data" not in await r.json()


async def test_an_update_cannot_start_a_deletion(real) -> None:
    """ValidateObjectMetaUpdate: deletionTimestamp and deletionGracePeriodSeconds are
    immutable on update (only the delete verb sets them); they were dropped or stored."""
    ns = "/api/v1/namespaces/default"
    r = await real.post(f"{ns}/configmaps", json={"metadata": {"name": "dg"}})
    cm = await r.json()
    cm["metadata"]["deletionGracePeriodSeconds"] = 7
    r = await real.put(f"{ns}/configmaps/dg", json=cm)
    assert r.status == 422, await r.text()
    assert (await r.json())["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "metadata.deletionGracePeriodSeconds",
        "message": "Invalid value: 7: field is immutable"}]
    del cm["metadata"]["deletionGracePeriodSeconds"]
    cm["metadata"]["deletionTimestamp"] = "2026-11-23T01:02:03Z"
    r = await real.put(f"{ns}/configmaps/dg", json=cm)
    assert r.status == 422, await r.text()
    assert (await r.json())["details"]["causes"][0]["message"] == (
        "Invalid value: 2026-11-23 01:02:03 +0000 UTC: field is immutable")
    r = await real.get(f"{ns}/configmaps/dg")
    assert "deletionTimestamp" not in (await r.json())["metadata"]


async def test_pod_status_writes_keep_owner_references(real) -> None:
    """podStatusStrategy keeps the owner references (old kubelets corrupted them)."""
    ns = "/api/v1/namespaces/default"
    pod = {"metadata": {"name": "own"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    assert (await real.post(f"{ns}/pods", json=pod)).status == 201
    r = await real.patch(f"{ns}/pods/own/status", data=orjson.dumps({"metadata": {
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "x",
                             "uid": "u1"}]}, "status": {"message": "hi"}}),
        headers={"Content-Type": "application/merge-patch+json"})
    assert r.status == 200, await r.text()
    body = await r.json()
    assert "ownerReferences" not in body["metadata"] and body["status"]["message"] == "hi"


async def test_events_carry_the_fields_go_always_writes(real) -> None:
    """Go writes struct-typed fields even when empty (times as null, EventSource as {}) and
    strings without omitempty: core v1 shows eventTime, source, first/lastTimestamp,
    reportingComponent and reportingInstance; events/v1 its deprecated* counterparts."""
    ev = {"metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "name": "p"},
          "reason": "R", "message": "m"}
    r = await real.post("/api/v1/namespaces/default/events", json=ev)
    assert r.status == 201, await r.text()
    core = await r.json()
    assert {k: core[k] for k in ("eventTime", "source", "firstTimestamp", "lastTimestamp",
                                 "reportingComponent", "reportingInstance")} == {
        "eventTime": None, "source": {}, "firstTimestamp": None, "lastTimestamp": None,
        "reportingComponent": "", "reportingInstance": ""}
    r = await real.get("/apis/events.plat.io/v1/namespaces/default/events/e1")
    v1 = await r.json()
    assert {k: v1[k] for k in ("eventTime", "deprecatedSource", "deprecatedFirstTimestamp",
                               "deprecatedLastTimestamp")} == {
        "eventTime": None, "deprecatedSource": {}, "deprecatedFirstTimestamp": None,
        "deprecatedLastTimestamp": None}
    assert "reportingController" not in v1 and "reportingInstance" not in v1


async def test_changing_a_services_cluster_ip_alone(real) -> None:
    """normalizeClusterIPs: clusterIPs follows a changed clusterIP, so the error names the
    change itself (it named a mismatch between the two fields)."""
    svc = {"metadata": {"name": "s1"}, "spec": {"ports": [{"port": 80}]}}
    r = await real.post("/api/v1/namespaces/default/services", json=svc)
    assert r.status == 201, await r.text()
    r = await real.patch("/api/v1/namespaces/default/services/s1",
                         data=b'{"spec":{"clusterIP":"10.0.0.200"}}',
                         headers={"Content-Type": "application/merge-patch+json"})
    assert r.status == 422, await r.text()
    assert (await r.json())["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "spec.clusterIPs[0]",
        "message": 'Invalid value: []string{"10.0.0.200"}: may not change once set'}]

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from apiserver.registry.interface import DeleteOptions, GetOptions, ListOptions, WriteOptions
from apiserver.status import APIError
from tests.apiserver.registry.conftest import ctx
from tests.apiserver.registry.kindstores import patch

CM = ("", "v1", "configmaps")
LEASE = ("coordination.plat.io", "v1", "leases")
W = WriteOptions()


def put(body: dict[str, Any]):
    async def transform(current: dict[str, Any] | None) -> dict[str, Any]:
        return copy.deepcopy(body)
    return transform


async def test_create_get_list(stores: Any) -> None:
    cm = stores[CM]
    out = await cm.create(ctx("ns1"), {"metadata": {"name": "a", "labels": {"x": "1"}},
                                        "data": {"k": "v"}}, W)
    assert out["kind"] == "ConfigMap" and out["apiVersion"] == "v1"
    meta = out["metadata"]
    assert meta["namespace"] == "ns1" and meta["uid"] and meta["resourceVersion"]
    assert meta["creationTimestamp"].endswith("Z") and len(meta["creationTimestamp"]) == 20
    assert "generation" not in meta
    got = await cm.get(ctx("ns1"), "a", GetOptions())
    assert got == out
    await cm.create(ctx("ns1"), {"metadata": {"name": "b"}}, W)
    lst = await cm.list(ctx("ns1"), ListOptions())
    assert lst["kind"] == "ConfigMapList" and [i["metadata"]["name"] for i in lst["items"]] == ["a", "b"]
    assert all(i["kind"] == "ConfigMap" for i in lst["items"])
    lst = await cm.list(ctx("ns1"), ListOptions(label_selector="x=1"))
    assert [i["metadata"]["name"] for i in lst["items"]] == ["a"]
    lst = await cm.list(ctx(""), ListOptions(field_selector="metadata.name=b"))
    assert [i["metadata"]["name"] for i in lst["items"]] == ["b"]
    with pytest.raises(APIError) as e:
        await cm.list(ctx("ns1"), ListOptions(label_selector="x in"))
    assert e.value.code == 400
    with pytest.raises(APIError) as e:
        await cm.list(ctx("ns1"), ListOptions(field_selector="data.k=v"))
    assert e.value.code == 400
    assert e.value.message == '"data.k" is not a known field selector: only "metadata.name", "metadata.namespace"'
    with pytest.raises(APIError) as e:
        await cm.get(ctx("ns1"), "zz", GetOptions())
    assert e.value.code == 404 and e.value.message == 'configmaps "zz" not found'


async def test_create_errors(stores: Any) -> None:
    cm = stores[CM]
    await cm.create(ctx("ns1"), {"metadata": {"name": "a"}}, W)
    with pytest.raises(APIError) as e:
        await cm.create(ctx("ns1"), {"metadata": {"name": "a"}}, W)
    assert e.value.code == 409 and e.value.reason == "AlreadyExists"
    assert e.value.message == 'configmaps "a" already exists'
    with pytest.raises(APIError) as e:
        await cm.create(ctx("ns1"), {"metadata": {"name": "b", "namespace": "other"}}, W)
    assert e.value.code == 400
    assert e.value.message == "the namespace of the provided object does not match the namespace sent on the request"
    with pytest.raises(APIError) as e:
        await cm.create(ctx("ns1"), {"metadata": {"name": "Bad_Name"}}, W)
    assert e.value.code == 422
    assert e.value.message.startswith('ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain')
    with pytest.raises(APIError) as e:
        await cm.create(ctx("ns1"), {"metadata": {}}, W)
    assert e.value.message == 'ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required'
    with pytest.raises(APIError) as e:
        await cm.create(ctx("ns1"), {"metadata": {"name": "c", "labels": {"a": "b c"}, "finalizers": ["nope"]}}, W)
    causes = e.value.details["causes"]
    assert [c["field"] for c in causes] == ["metadata.labels", "metadata.finalizers"]
    assert causes[1]["message"] == 'Invalid value: "nope": name is neither a standard finalizer name nor is it fully qualified'
    with pytest.raises(APIError) as e:
        await cm.create(ctx("ns1"), {"metadata": {"name": "d", "resourceVersion": "5"}}, W)
    assert e.value.message == "resourceVersion should not be set on objects to be created"
    assert (e.value.code, e.value.reason) == (400, "BadRequest")
    with pytest.raises(APIError) as e:
        await cm.create(ctx("ns1"), {"metadata": {"name": "e"}, "data": {"a b": "x"}}, W)
    assert e.value.details["causes"][0]["field"] == "data[a b]"


async def test_generate_name_and_collisions(stores: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    cm = stores[CM]
    out = await cm.create(ctx("ns1"), {"metadata": {"generateName": "web-"}}, W)
    name = out["metadata"]["name"]
    assert name.startswith("web-") and len(name) == 9
    assert set(name[4:]) <= set("bcdfghjklmnpqrstvwxz2456789")
    from apiserver.registry import generic
    names = iter(["web-aaaaa", "web-aaaaa", "web-bbbbb"])
    monkeypatch.setattr(generic, "generate_name", lambda base: next(names))
    await cm.create(ctx("ns1"), {"metadata": {"generateName": "web-"}}, W)
    out = await cm.create(ctx("ns1"), {"metadata": {"generateName": "web-"}}, W)
    assert out["metadata"]["name"] == "web-bbbbb"  # one collision, retried
    monkeypatch.setattr(generic, "generate_name", lambda base: "web-aaaaa")
    with pytest.raises(APIError) as e:
        await cm.create(ctx("ns1"), {"metadata": {"generateName": "web-"}}, W)
    assert e.value.code == 409 and e.value.reason == "AlreadyExists"
    assert e.value.message == ('configmaps "web-aaaaa" already exists, the server was not able to '
                               "generate a unique name for the object")


async def test_update_rules(stores: Any, storage: Any) -> None:
    cm = stores[CM]
    a = await cm.create(ctx("ns1"), {"metadata": {"name": "a"}, "data": {"k": "1"}}, W)
    rv = a["metadata"]["resourceVersion"]
    # no-op update writes nothing
    same, created = await cm.update(ctx("ns1"), "a", patch(lambda o: None), W)
    assert not created and same["metadata"]["resourceVersion"] == rv
    b = dict(a, data={"k": "2"})
    out, _ = await cm.update(ctx("ns1"), "a", put(b), W)
    assert out["data"] == {"k": "2"} and out["metadata"]["resourceVersion"] != rv
    assert out["metadata"]["uid"] == a["metadata"]["uid"]
    with pytest.raises(APIError) as e:  # stale
        await cm.update(ctx("ns1"), "a", put(b), W)
    assert e.value.code == 409
    assert e.value.message == ('Operation cannot be fulfilled on configmaps "a": the object has been '
                               "modified; please apply your changes to the latest version and try again")
    # unconditional update (no resourceVersion) is allowed for configmaps
    body = {"metadata": {"name": "a"}, "data": {"k": "3"}}
    out, _ = await cm.update(ctx("ns1"), "a", put(body), W)
    assert out["data"] == {"k": "3"} and out["metadata"]["creationTimestamp"] == a["metadata"]["creationTimestamp"]
    # uid is immutable
    with pytest.raises(APIError) as e:
        await cm.update(ctx("ns1"), "a", patch(lambda o: o["metadata"].update(uid="x")), W)
    assert e.value.code == 422 and 'metadata.uid: Invalid value: "x": field is immutable' in e.value.message
    # no create on update for configmaps
    with pytest.raises(APIError) as e:
        await cm.update(ctx("ns1"), "zz", put({"metadata": {"name": "zz"}}), W)
    assert e.value.code == 404
    out, created = await cm.update(ctx("ns1"), "zz", put({"metadata": {"name": "zz"}}), W,
                                   force_allow_create=True)
    assert created and out["metadata"]["uid"]
    # name mismatch
    with pytest.raises(APIError) as e:
        await cm.update(ctx("ns1"), "zz", put({"metadata": {"name": "other"}}), W)
    assert e.value.code == 400


async def test_lease_create_on_update_and_conditional(stores: Any) -> None:
    le = stores[LEASE]
    out, created = await le.update(ctx("ns1"), "l", put({"metadata": {"name": "l"},
                                                         "spec": {"holderIdentity": "me"}}), W)
    assert created and out["apiVersion"] == "coordination.plat.io/v1"
    with pytest.raises(APIError) as e:
        await le.update(ctx("ns1"), "l", put({"metadata": {"name": "l"}, "spec": {}}), W)
    assert e.value.code == 422
    assert e.value.message == ('leases.coordination.plat.io "l" is invalid: metadata.resourceVersion: '
                               "Invalid value: 0x0: must be specified for an update")
    with pytest.raises(APIError) as e:
        await le.create(ctx("ns1"), {"metadata": {"name": "m"}, "spec": {"leaseDurationSeconds": 0}}, W)
    assert e.value.message == 'Lease.coordination.plat.io "m" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0'


async def test_configmap_immutable(stores: Any) -> None:
    cm = stores[CM]
    await cm.create(ctx("ns1"), {"metadata": {"name": "i"}, "data": {"a": "1"}, "immutable": True}, W)
    with pytest.raises(APIError) as e:
        await cm.update(ctx("ns1"), "i", patch(lambda o: o.update(data={"a": "2"})), W)
    assert e.value.details["causes"] == [{"reason": "FieldValueForbidden", "field": "data",
                                          "message": "Forbidden: field is immutable when `immutable` is set"}]


async def test_delete_plain_and_preconditions(stores: Any) -> None:
    cm = stores[CM]
    a = await cm.create(ctx("ns1"), {"metadata": {"name": "a"}}, W)
    with pytest.raises(APIError) as e:
        await cm.delete(ctx("ns1"), "a", DeleteOptions(precondition_uid="wrong"))
    assert e.value.code == 409
    assert e.value.message == (f'Operation cannot be fulfilled on ConfigMap "a": the UID in the precondition '
                               f'(wrong) does not match the UID in record ({a["metadata"]["uid"]}). '
                               "The object might have been deleted and then recreated")
    with pytest.raises(APIError) as e:
        await cm.delete(ctx("ns1"), "a", DeleteOptions(precondition_resource_version="1"))
    assert "the ResourceVersion in the precondition (1) does not match" in e.value.message
    res, now = await cm.delete(ctx("ns1"), "a", DeleteOptions(
        precondition_uid=a["metadata"]["uid"], precondition_resource_version=a["metadata"]["resourceVersion"]))
    assert now
    assert res == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                   "details": {"name": "a", "kind": "configmaps", "uid": a["metadata"]["uid"]}}
    with pytest.raises(APIError) as e:
        await cm.delete(ctx("ns1"), "a", DeleteOptions())
    assert e.value.code == 404


async def test_finalizer_state_machine(stores: Any) -> None:
    cm = stores[CM]
    await cm.create(ctx("ns1"), {"metadata": {"name": "f", "finalizers": ["example.com/a", "example.com/b"]}}, W)
    obj, now = await cm.delete(ctx("ns1"), "f", DeleteOptions())
    assert not now
    meta = obj["metadata"]
    assert meta["deletionTimestamp"] and meta["deletionGracePeriodSeconds"] == 0
    # a second delete changes nothing
    obj2, now = await cm.delete(ctx("ns1"), "f", DeleteOptions())
    assert not now and obj2["metadata"]["resourceVersion"] == meta["resourceVersion"]
    # no new finalizers while deleting
    with pytest.raises(APIError) as e:
        await cm.update(ctx("ns1"), "f", patch(lambda o: o["metadata"]["finalizers"].append("example.com/c")), W)
    assert e.value.code == 422 and "no new finalizers can be added" in e.value.message
    # the deletionTimestamp cannot be removed by an update
    out, _ = await cm.update(ctx("ns1"), "f", patch(lambda o: o["metadata"].pop("deletionTimestamp")), W)
    assert out["metadata"]["deletionTimestamp"] == meta["deletionTimestamp"]
    out, _ = await cm.update(ctx("ns1"), "f", patch(lambda o: o["metadata"].update(finalizers=["example.com/b"])), W)
    assert out["metadata"]["finalizers"] == ["example.com/b"]
    await cm.get(ctx("ns1"), "f", GetOptions())
    with pytest.raises(APIError) as e:
        await cm.create(ctx("ns1"), {"metadata": {"name": "f"}}, W)
    assert e.value.message == 'object is being deleted: configmaps "f" already exists'

    await cm.update(ctx("ns1"), "f", patch(lambda o: o["metadata"].pop("finalizers")), W)
    with pytest.raises(APIError) as e:
        await cm.get(ctx("ns1"), "f", GetOptions())
    assert e.value.code == 404


async def test_propagation_policies(stores: Any) -> None:
    cm = stores[CM]
    await cm.create(ctx("ns1"), {"metadata": {"name": "o"}}, W)
    obj, now = await cm.delete(ctx("ns1"), "o", DeleteOptions(propagation_policy="Orphan"))
    assert not now and obj["metadata"]["finalizers"] == ["orphan"]
    await cm.create(ctx("ns1"), {"metadata": {"name": "fg"}}, W)
    obj, now = await cm.delete(ctx("ns1"), "fg", DeleteOptions(propagation_policy="Foreground"))
    assert not now and obj["metadata"]["finalizers"] == ["foregroundDeletion"]
    await cm.create(ctx("ns1"), {"metadata": {"name": "od"}}, W)
    obj, now = await cm.delete(ctx("ns1"), "od", DeleteOptions(orphan_dependents=True))
    assert not now and obj["metadata"]["finalizers"] == ["orphan"]
    await cm.create(ctx("ns1"), {"metadata": {"name": "bg"}}, W)
    _, now = await cm.delete(ctx("ns1"), "bg", DeleteOptions(propagation_policy="Background"))
    assert now


async def test_dry_run(stores: Any, storage: Any) -> None:
    cm = stores[CM]
    dry = WriteOptions(dry_run=True)
    rev = await storage.current_revision()
    out = await cm.create(ctx("ns1"), {"metadata": {"generateName": "d-"}}, dry)
    assert out["metadata"]["name"].startswith("d-") and "resourceVersion" not in out["metadata"]
    assert await storage.current_revision() == rev
    a = await cm.create(ctx("ns1"), {"metadata": {"name": "a", "finalizers": ["example.com/x"]}}, W)
    rev = await storage.current_revision()
    with pytest.raises(APIError):
        await cm.create(ctx("ns1"), {"metadata": {"name": "a"}}, dry)
    out, _ = await cm.update(ctx("ns1"), "a", patch(lambda o: o.update(data={"x": "y"})), dry)
    assert out["data"] == {"x": "y"}
    obj, now = await cm.delete(ctx("ns1"), "a", DeleteOptions(dry_run=True))
    assert not now and obj["metadata"]["deletionTimestamp"]
    assert await storage.current_revision() == rev
    got = await cm.get(ctx("ns1"), "a", GetOptions())
    assert got == a
    await cm.create(ctx("ns1"), {"metadata": {"name": "b"}}, W)
    _, now = await cm.delete(ctx("ns1"), "b", DeleteOptions(dry_run=True))
    assert now
    await cm.get(ctx("ns1"), "b", GetOptions())


async def test_delete_collection(stores: Any) -> None:
    cm = stores[CM]
    for n, lbl in (("a", "x"), ("b", "x"), ("c", "y")):
        await cm.create(ctx("ns1"), {"metadata": {"name": n, "labels": {"l": lbl}}}, W)
    await cm.create(ctx("ns1"), {"metadata": {"name": "d", "labels": {"l": "x"}, "finalizers": ["example.com/f"]}}, W)
    out = await cm.delete_collection(ctx("ns1"), DeleteOptions(), ListOptions(label_selector="l=x"))
    assert out["kind"] == "ConfigMapList"
    # the list as listed, as upstream: "d" (left terminating by its finalizer) included
    assert [i["metadata"]["name"] for i in out["items"]] == ["a", "b", "d"]
    left = await cm.list(ctx("ns1"), ListOptions())
    assert [i["metadata"]["name"] for i in left["items"]] == ["c", "d"]
    assert left["items"][1]["metadata"]["deletionTimestamp"]


async def test_unsafe_delete(memstores: Any, memstore: Any) -> None:
    cm, storage = memstores[CM], memstore
    await cm.create(ctx("ns1"), {"metadata": {"name": "bad"}}, W)
    storage.corrupt.add("/registry/configmaps/ns1/bad")
    with pytest.raises(APIError) as e:
        await cm.delete(ctx("ns1"), "bad", DeleteOptions())
    assert e.value.code == 409
    res, now = await cm.delete(ctx("ns1"), "bad", DeleteOptions(ignore_store_read_error=True))
    assert now and res["status"] == "Success"
    assert "/registry/configmaps/ns1/bad" not in storage.data


async def test_unsafe_delete_gate_off(memstore: Any) -> None:
    from apiserver.registry.catalog import build_stores, ensure_system_namespaces
    st = build_stores(lambda info: memstore)
    await ensure_system_namespaces(st)
    await st[CM].create(ctx("default"), {"metadata": {"name": "bad"}}, W)
    memstore.corrupt.add("/registry/configmaps/default/bad")
    # the option is dropped while the gate is off (upstream's handler does so)
    with pytest.raises(APIError) as e:
        await st[CM].delete(ctx("default"), "bad", DeleteOptions(ignore_store_read_error=True))
    assert e.value.code == 409
    assert "/registry/configmaps/default/bad" in memstore.data


async def test_watch(stores: Any) -> None:
    cm = stores[CM]
    await cm.create(ctx("ns1"), {"metadata": {"name": "pre", "labels": {"a": "1"}}}, W)
    stream = await cm.watch(ctx("ns1"), ListOptions(label_selector="a=1"))
    it = stream.__aiter__()
    ev = await it.__anext__()
    assert ev.type == "ADDED" and ev.object["kind"] == "ConfigMap" and ev.object["metadata"]["name"] == "pre"
    await cm.update(ctx("ns1"), "pre", patch(lambda o: o["metadata"]["labels"].update(a="2")), W)
    ev = await it.__anext__()
    assert ev.type == "DELETED"
    stream.stop()
    with pytest.raises(StopAsyncIteration):
        await it.__anext__()
    # a timeout ends the stream
    rv = (await cm.list(ctx("ns1"), ListOptions()))["metadata"]["resourceVersion"]
    stream = await cm.watch(ctx("ns1"), ListOptions(resource_version=rv, timeout_seconds=1))
    items = [ev async for ev in stream]
    assert items == []


async def test_watch_error_and_bookmark(memstores: Any, memstore: Any) -> None:
    from storage import interface as si
    from storage.errors import Code, StorageError
    cm, storage = memstores[CM], memstore
    stream = await cm.watch(ctx("ns1"), ListOptions(resource_version="1000"))
    w = storage.watchers[-1]
    w.q.put_nowait(si.WatchEvent(type="BOOKMARK", object={"metadata": {
        "resourceVersion": "7", "annotations": {"plat.io/initial-events-end": "true"}}}))
    w.q.put_nowait(si.WatchEvent(type="ERROR", object={}, error=StorageError(
        Code.RESOURCE_EXPIRED, "too old resource version: 1 (5)")))
    items = [ev async for ev in stream]
    assert items[0].type == "BOOKMARK"
    assert items[0].object == {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {
        "resourceVersion": "7", "annotations": {"plat.io/initial-events-end": "true"}}}
    assert items[1].type == "ERROR"
    assert items[1].object["code"] == 410 and items[1].object["reason"] == "Expired"
    assert items[1].object["message"] == "too old resource version: 1 (5)"
    assert len(items) == 2


async def test_secret_defaults_and_rules(stores: Any) -> None:
    sec = stores[("", "v1", "secrets")]
    out = await sec.create(ctx("ns1"), {"metadata": {"name": "s"}, "stringData": {"a": "hi"}}, W)
    assert out["type"] == "Opaque" and out["data"] == {"a": "aGk="} and "stringData" not in out
    with pytest.raises(APIError) as e:
        await sec.create(ctx("ns1"), {"metadata": {"name": "t"}, "type": "platform.io/service-account-token"}, W)
    assert e.value.details["causes"] == [{"reason": "FieldValueRequired", "message": "Required value",
                                          "field": "metadata.annotations[platform.io/service-account.name]"}]
    with pytest.raises(APIError) as e:
        await sec.update(ctx("ns1"), "s", patch(lambda o: o.update(type="other")), W)
    assert 'type: Invalid value: "other": field is immutable' in e.value.message
    lst = await sec.list(ctx("ns1"), ListOptions(field_selector="type=Opaque"))
    assert len(lst["items"]) == 1
    with pytest.raises(APIError) as e:
        await sec.list(ctx("ns1"), ListOptions(field_selector="data=x"))
    assert e.value.message == "field label not supported: data"


async def test_events(stores: Any) -> None:
    ev = stores[("", "v1", "events")]
    out, created = await ev.update(ctx("ns1"), "e1", put({
        "metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "namespace": "ns1", "name": "p"},
        "reason": "Started", "type": "Normal", "source": {"component": "kubelet"}}), W)
    assert created
    lst = await ev.list(ctx("ns1"), ListOptions(field_selector="involvedObject.name=p,source=kubelet,type=Normal"))
    assert len(lst["items"]) == 1
    with pytest.raises(APIError) as e:
        await ev.create(ctx("ns1"), {"metadata": {"name": "e2"}, "involvedObject": {"namespace": "other"}, "type": "Bad"}, W)
    assert [c["field"] for c in e.value.details["causes"]] == ["involvedObject.namespace"]
    # an event about a cluster-scoped object lives in "" or "default" (old clients)
    with pytest.raises(APIError) as e:
        await ev.create(ctx("ns1"), {"metadata": {"name": "e3"}, "involvedObject": {"kind": "Node", "name": "n"}}, W)
    assert e.value.details["causes"][0]["message"] == 'Invalid value: "": does not match event.namespace'
    await ev.create(ctx("default"), {"metadata": {"name": "e3"}, "involvedObject": {"kind": "Node", "name": "n"}}, W)
    # core events only need URL-safe names
    await ev.create(ctx("default"), {"metadata": {"name": "Node.Upper_case"}, "involvedObject": {"kind": "Node"}}, W)
    with pytest.raises(APIError) as e:
        await ev.create(ctx("default"), {"metadata": {"name": "a%b"}}, W)
    assert e.value.message == 'Event "a%b" is invalid: metadata.name: Invalid value: "a%b": may not contain \'%\''


async def test_events_v1_api(stores: Any) -> None:
    v1 = stores[("events.plat.io", "v1", "events")]
    core = stores[("", "v1", "events")]
    body = {"metadata": {"name": "n1"}, "eventTime": "2025-01-02T03:04:05.000000Z",
            "reportingController": "example.com/ctl", "reportingInstance": "i-1", "action": "Act",
            "reason": "Because", "type": "Normal", "note": "hello",
            "regarding": {"kind": "Pod", "namespace": "ns1", "name": "p"}}
    out = await v1.create(ctx("ns1"), body, W)
    assert out["apiVersion"] == "events.plat.io/v1" and out["kind"] == "Event"
    assert out["note"] == "hello" and out["regarding"]["name"] == "p"
    assert "message" not in out and "involvedObject" not in out
    c = await core.get(ctx("ns1"), "n1", GetOptions())
    assert c["apiVersion"] == "v1" and c["message"] == "hello" and c["reportingComponent"] == "example.com/ctl"
    assert c["involvedObject"]["name"] == "p"
    lst = await v1.list(ctx("ns1"), ListOptions(field_selector="regarding.name=p,reportingController=example.com/ctl"))
    assert lst["kind"] == "EventList" and lst["apiVersion"] == "events.plat.io/v1"
    assert lst["items"][0]["note"] == "hello"
    with pytest.raises(APIError) as e:
        await v1.create(ctx("ns1"), {"metadata": {"name": "n2"}, "type": "Other", "deprecatedCount": 3,
                                     "regarding": {"namespace": "ns1"}}, W)
    assert e.value.message == ('Event.events.plat.io "n2" is invalid: [eventTime: Required value, type: '
                               'Invalid value: "": has invalid value: Other, deprecatedCount: Invalid value: "": '
                               "needs to be unset]")
    with pytest.raises(APIError) as e:
        await v1.create(ctx("ns1"), dict(body, metadata={"name": "n3"}, reportingController=""), W)
    assert {"reason": "FieldValueRequired", "message": "Required value", "field": "reportingController"} in e.value.details["causes"]
    # series may change, the note may not
    out, _ = await v1.update(ctx("ns1"), "n1", patch(lambda o: o.update(series={"count": 2, "lastObservedTime": "2025-01-02T03:05:05.000000Z"})), W)
    assert out["series"]["count"] == 2
    with pytest.raises(APIError) as e:
        await v1.update(ctx("ns1"), "n1", patch(lambda o: o.update(note="changed")), W)
    assert e.value.details["causes"][0]["field"] == "note"
    res, now = await v1.delete(ctx("ns1"), "n1", DeleteOptions())
    assert now and res["details"] == {"name": "n1", "group": "events.plat.io", "kind": "events", "uid": c["metadata"]["uid"]}
    with pytest.raises(APIError) as e:
        await v1.get(ctx("ns1"), "n1", GetOptions())
    assert e.value.message == 'events.events.plat.io "n1" not found'


async def test_concurrent_updates_conflict_free(stores: Any) -> None:
    cm = stores[CM]
    await cm.create(ctx("ns1"), {"metadata": {"name": "c"}, "data": {}}, W)

    async def bump(i: int) -> None:
        await cm.update(ctx("ns1"), "c", patch(lambda o: o.setdefault("data", {}).update({f"k{i}": "v"})), W)
    await asyncio.gather(*(bump(i) for i in range(5)))
    out = await cm.get(ctx("ns1"), "c", GetOptions())
    assert len(out["data"]) == 5


async def test_non_object_bodies_are_bad_requests(stores: Any) -> None:
    cm = stores[CM]
    with pytest.raises(APIError) as e:
        await cm.create(ctx("ns1"), [], W)  # type: ignore[arg-type]
    assert e.value.code == 400
    await cm.create(ctx("ns1"), {"metadata": {"name": "a"}}, W)

    async def to_list(current: Any) -> Any:
        return ["x"]
    with pytest.raises(APIError) as e:
        await cm.update(ctx("ns1"), "a", to_list, W)
    assert e.value.code == 400
    # wrong JSON types are the typed decoder's 400, as upstream
    with pytest.raises(APIError) as e:
        await cm.create(ctx("ns1"), {"metadata": {"name": 5, "labels": "x"}}, W)
    assert e.value.code == 400
    assert e.value.message == ('ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot '
                               "unmarshal number into Go struct field ObjectMeta.metadata.name of type string")
    with pytest.raises(APIError) as e:
        await cm.create(ctx("ns1"), {"metadata": {"name": "z"}, "data": {"a": 1}}, W)
    assert e.value.message.endswith("cannot unmarshal number into Go struct field ConfigMap.data of type string")
    with pytest.raises(APIError) as e:
        await stores[("apps", "v1", "statefulsets")].create(ctx("ns1"), {"metadata": {"name": "z"}, "spec": []}, W)
    assert e.value.message.endswith("cannot unmarshal array into Go struct field StatefulSet.spec of type v1.StatefulSetSpec")
    with pytest.raises(APIError) as e:
        await cm.update(ctx("ns1"), "a", patch(lambda o: o["metadata"].update(finalizers=[1])), W)
    assert e.value.code == 400


def test_go_base64_offsets() -> None:
    from apiserver.api.decode import base64_error_offset as off
    assert off("aGk=") is None and off("") is None and off("aGVsbG8=\n") is None
    assert off("abc") == 0
    assert off("ab$d") == 2
    assert off("abcd=") == 4
    assert off("ab=c") == 2
    assert off("ab==x") == 4


async def test_base64_data_is_a_decode_error(stores: Any) -> None:
    with pytest.raises(APIError) as e:
        await stores[("", "v1", "secrets")].create(ctx("ns1"), {"metadata": {"name": "s"}, "data": {"a": "no!"}}, W)
    assert e.value.code == 400
    assert e.value.message == 'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 2'
    with pytest.raises(APIError) as e:
        await stores[CM].create(ctx("ns1"), {"metadata": {"name": "c"}, "binaryData": {"a": "aGk$"}}, W)
    assert e.value.message == 'ConfigMap in version "v1" cannot be handled as a ConfigMap: illegal base64 data at input byte 3'


async def test_owner_references_validation(stores: Any) -> None:
    cm = stores[CM]
    ok = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "w", "uid": "u1", "controller": True}
    await cm.create(ctx("ns1"), {"metadata": {"name": "a", "ownerReferences": [ok]}}, W)
    with pytest.raises(APIError) as e:
        await cm.create(ctx("ns1"), {"metadata": {"name": "b", "ownerReferences": [
            ok, dict(ok, name="x", uid="u2"), {"apiVersion": "", "kind": "K", "name": "n"}]}}, W)
    msgs = [(c["field"], c["message"]) for c in e.value.details["causes"]]
    assert ("metadata.ownerReferences", 'Invalid value: []v1.OwnerReference{...}: Only one reference can have '
            'Controller set to true. Found "true" in references for StatefulSet/w and StatefulSet/x') in msgs
    assert ("metadata.ownerReferences.apiVersion", 'Invalid value: "": version must not be empty') in msgs
    assert ("metadata.ownerReferences.uid", 'Invalid value: "": uid must not be empty') in msgs


async def test_size_limits(stores: Any) -> None:
    with pytest.raises(APIError) as e:
        await stores[CM].create(ctx("ns1"), {"metadata": {"name": "big", "annotations": {"a": "x" * 262144}}}, W)
    assert e.value.message == 'ConfigMap "big" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes'
    with pytest.raises(APIError) as e:
        await stores[CM].create(ctx("ns1"), {"metadata": {"name": "big"}, "data": {"a": "x" * (1024 * 1024 + 1)}}, W)
    assert e.value.details["causes"] == [{"reason": "FieldValueTooLong", "field": "",
                                          "message": "Too long: may not be more than 1048576 bytes"}]


async def test_single_name_field_selector_reads_one_key(stores: Any) -> None:
    cm = stores[CM]
    for n in ("a", "ab", "b"):
        await cm.create(ctx("ns1"), {"metadata": {"name": n, "labels": {"x": "1"}}}, W)
    lst = await cm.list(ctx("ns1"), ListOptions(field_selector="metadata.name=a"))
    assert [i["metadata"]["name"] for i in lst["items"]] == ["a"]
    lst = await cm.list(ctx("ns1"), ListOptions(field_selector="metadata.name=a", label_selector="x=2"))
    assert lst["items"] == []
    lst = await cm.list(ctx("ns1"), ListOptions(field_selector="metadata.name=zz"))
    assert lst["items"] == []
    stream = await cm.watch(ctx("ns1"), ListOptions(field_selector="metadata.name=a"))
    it = stream.__aiter__()
    ev = await it.__anext__()
    assert ev.type == "ADDED" and ev.object["metadata"]["name"] == "a"
    await cm.update(ctx("ns1"), "ab", patch(lambda o: o.update(data={"k": "v"})), W)
    await cm.update(ctx("ns1"), "a", patch(lambda o: o.update(data={"k": "v"})), W)
    ev = await it.__anext__()
    assert ev.type == "MODIFIED" and ev.object["metadata"]["name"] == "a"
    stream.stop()


async def test_put_with_another_uid_is_a_precondition_conflict(stores: Any) -> None:
    from apiserver.registry.interface import Context
    from apiserver.request import RequestInfo
    from tests.apiserver.registry.conftest import USER
    cm = stores[CM]
    a = await cm.create(ctx("ns1"), {"metadata": {"name": "a"}}, W)
    put_ctx = Context(namespace="ns1", user=USER, info=RequestInfo(
        is_resource_request=True, path="/api/v1/namespaces/ns1/configmaps/a", verb="update",
        namespace="ns1", resource="configmaps", name="a"))
    body = {"metadata": {"name": "a", "uid": "other"}}
    with pytest.raises(APIError) as e:
        await cm.update(put_ctx, "a", put(body), W)
    assert e.value.code == 409
    assert e.value.message == ('Operation cannot be fulfilled on configmaps "a": Precondition failed: UID in '
                               f'precondition: other, UID in object meta: {a["metadata"]["uid"]}')

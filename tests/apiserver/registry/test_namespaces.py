from __future__ import annotations

import asyncio
from typing import Any

import pytest

from apiserver.registry.interface import DeleteOptions, GetOptions, ListOptions, WriteOptions
from apiserver.registry.namespace_controller import NamespaceController
from apiserver.status import APIError
from tests.apiserver.registry.conftest import ctx
from tests.apiserver.registry.test_generic import patch

NS = ("", "v1", "namespaces")
CM = ("", "v1", "configmaps")
W = WriteOptions()


async def wait_for(cond: Any, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await cond():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.02)


async def gone(stores: Any, name: str) -> bool:
    try:
        await stores[NS].get(ctx(), name, GetOptions())
    except APIError as e:
        return e.code == 404
    return False


async def test_namespace_create_defaults(stores: Any) -> None:
    ns = await stores[NS].get(ctx(), "ns1", GetOptions())
    assert ns["status"] == {"phase": "Active"}
    assert ns["spec"] == {"finalizers": ["platform"]}
    assert ns["metadata"]["labels"] == {"platform.io/metadata.name": "ns1"}
    names = [i["metadata"]["name"] for i in (await stores[NS].list(ctx(), ListOptions()))["items"]]
    assert set(names) == {"default", "platform-system", "platform-public", "platform-node-lease", "ns1"}
    with pytest.raises(APIError) as e:
        await stores[NS].create(ctx(), {"metadata": {"name": "a.b"}}, W)
    assert "a lowercase RFC 1123 label" in e.value.message
    # the main resource cannot change status or spec.finalizers
    out, _ = await stores[NS].update(ctx(), "ns1", patch(lambda o: (o.update(status={"phase": "Terminating"}),
                                                                    o["spec"].update(finalizers=[]))), W)
    assert out["status"] == {"phase": "Active"} and out["spec"]["finalizers"] == ["platform"]
    lst = await stores[NS].list(ctx(), ListOptions(field_selector="status.phase=Active,metadata.name=ns1"))
    assert len(lst["items"]) == 1
    with pytest.raises(APIError) as e:
        await stores[NS].list(ctx(), ListOptions(field_selector="metadata.namespace=x"))
    assert e.value.message == "field label not supported: metadata.namespace"


async def test_lifecycle_admission(stores: Any) -> None:
    cm = stores[CM]
    with pytest.raises(APIError) as e:
        await cm.create(ctx("missing"), {"metadata": {"name": "a"}}, W)
    assert e.value.code == 404 and e.value.message == 'namespaces "missing" not found'
    for name in ("default", "platform-system", "platform-public"):
        with pytest.raises(APIError) as e:
            await stores[NS].delete(ctx(), name, DeleteOptions())
        assert e.value.code == 403
        assert e.value.message == f'namespaces "{name}" is forbidden: this namespace may not be deleted'
    await cm.create(ctx("ns1"), {"metadata": {"name": "keep"}}, W)
    ns, now = await stores[NS].delete(ctx(), "ns1", DeleteOptions())
    assert not now and ns["status"]["phase"] == "Terminating" and ns["metadata"]["deletionTimestamp"]
    with pytest.raises(APIError) as e:
        await cm.create(ctx("ns1"), {"metadata": {"generateName": "x-"}}, W)
    assert e.value.code == 403
    assert e.value.message == ('configmaps "x-" is forbidden: unable to create new content in namespace ns1 '
                               "because it is being terminated")
    # updates in a terminating namespace are allowed
    await cm.update(ctx("ns1"), "keep", patch(lambda o: o.update(data={"a": "b"})), W)
    # a second delete returns the namespace while spec.finalizers remain
    ns2, now = await stores[NS].delete(ctx(), "ns1", DeleteOptions())
    assert not now and ns2["metadata"]["deletionTimestamp"] == ns["metadata"]["deletionTimestamp"]


async def test_namespace_controller_end_to_end(stores: Any) -> None:
    nsst = stores[NS]
    await nsst.create(ctx(), {"metadata": {"name": "doomed"}}, W)
    await nsst.create(ctx(), {"metadata": {"name": "doomed2"}}, W)
    cm = stores[CM]
    await cm.create(ctx("doomed"), {"metadata": {"name": "plain"}}, W)
    await cm.create(ctx("doomed"), {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}, W)
    await stores[("", "v1", "secrets")].create(ctx("doomed"), {"metadata": {"name": "s"}}, W)
    await cm.create(ctx("doomed2"), {"metadata": {"name": "other"}}, W)
    ctl = NamespaceController(stores, retry_interval=0.05, max_retry_interval=0.2)
    await ctl.start()
    try:
        await nsst.delete(ctx(), "doomed", DeleteOptions())

        async def held_remaining() -> bool:
            ns = await nsst.get(ctx(), "doomed", GetOptions())
            conds = {c["type"]: c for c in ns["status"].get("conditions", [])}
            c = conds.get("NamespaceFinalizersRemaining")
            return c is not None and c["status"] == "True"
        await wait_for(held_remaining)
        ns = await nsst.get(ctx(), "doomed", GetOptions())
        conds = {c["type"]: c for c in ns["status"]["conditions"]}
        assert conds["NamespaceContentRemaining"]["reason"] == "SomeResourcesRemain"
        assert conds["NamespaceContentRemaining"]["message"] == "Some resources are remaining: configmaps. has 1 resource instances"
        assert conds["NamespaceFinalizersRemaining"]["message"] == (
            "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances")
        assert conds["NamespaceDeletionContentFailure"]["status"] == "False"
        assert ns["spec"]["finalizers"] == ["platform"]
        left = await cm.list(ctx("doomed"), ListOptions())
        assert [i["metadata"]["name"] for i in left["items"]] == ["held"]
        assert (await stores[("", "v1", "secrets")].list(ctx("doomed"), ListOptions()))["items"] == []
        # release the finalizer: the namespace goes away
        await cm.update(ctx("doomed"), "held", patch(lambda o: o["metadata"].pop("finalizers")), W)
        await wait_for(lambda: gone(stores, "doomed"))
        # other namespaces untouched
        assert len((await cm.list(ctx("doomed2"), ListOptions()))["items"]) == 1
        # a namespace deleted while the controller runs goes too
        await nsst.delete(ctx(), "doomed2", DeleteOptions())
        await wait_for(lambda: gone(stores, "doomed2"))
        # the name can be reused
        await nsst.create(ctx(), {"metadata": {"name": "doomed"}}, W)
    finally:
        await ctl.stop()


async def test_finalize_and_status_subresources(stores: Any) -> None:
    fin = stores[("", "v1", "namespaces/finalize")]
    st = stores[("", "v1", "namespaces/status")]
    with pytest.raises(APIError) as e:
        await st.update(ctx(), "ns1", patch(lambda o: o["status"].update(phase="Terminating")), W)
    assert "status.Phase: Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty" in e.value.message
    out, _ = await fin.update(ctx(), "ns1", patch(lambda o: o["spec"].update(finalizers=["example.com/x"])), W)
    assert out["spec"]["finalizers"] == ["example.com/x"]
    with pytest.raises(APIError) as e:
        await fin.update(ctx(), "ns1", patch(lambda o: o["spec"].update(finalizers=["bad"])), W)
    assert e.value.code == 422
    await stores[NS].delete(ctx(), "ns1", DeleteOptions())
    # emptying spec.finalizers of a terminating namespace deletes it (upstream
    # ShouldDeleteNamespaceDuringUpdate)
    out, _ = await fin.update(ctx(), "ns1", patch(lambda o: o["spec"].update(finalizers=[])), W)
    assert out["spec"]["finalizers"] == []
    assert await gone(stores, "ns1")
    await stores[NS].create(ctx(), {"metadata": {"name": "ns2", "finalizers": ["example.com/m"]}}, W)
    await stores[NS].delete(ctx(), "ns2", DeleteOptions())
    await fin.update(ctx(), "ns2", patch(lambda o: o["spec"].update(finalizers=[])), W)
    # metadata finalizers still hold it; a delete now marks it and returns it
    res, now = await stores[NS].delete(ctx(), "ns2", DeleteOptions())
    assert not now and res["kind"] == "Namespace"
    await stores[NS].update(ctx(), "ns2", patch(lambda o: o["metadata"].pop("finalizers")), W)
    assert await gone(stores, "ns2")


async def test_controller_start_creates_system_namespaces(memstore: Any) -> None:
    from apiserver.registry.catalog import build_stores
    st = build_stores(lambda info: memstore)
    ctl = NamespaceController(st)
    await ctl.start()
    try:
        names = [i["metadata"]["name"] for i in (await st[NS].list(ctx(), ListOptions()))["items"]]
        assert sorted(names) == ["default", "platform-node-lease", "platform-public", "platform-system"]
    finally:
        await ctl.stop()

from __future__ import annotations

from typing import Any

from apiserver.registry.catalog import build_stores, builtin_resources, ensure_system_namespaces
from apiserver.registry.interface import DeleteOptions, GetOptions, ListOptions, WriteOptions
from tests.apiserver.registry.conftest import ctx
from tests.apiserver.registry.memstore import MemStore


def test_builtin_resources() -> None:
    infos = {(i.group, i.version, i.path_name): i for i in builtin_resources()}
    assert set(infos) == {
        ("", "v1", "namespaces"), ("", "v1", "namespaces/status"), ("", "v1", "namespaces/finalize"),
        ("", "v1", "configmaps"), ("", "v1", "secrets"), ("", "v1", "serviceaccounts"),
        ("", "v1", "events"), ("coordination.plat.io", "v1", "leases"),
        ("apps", "v1", "statefulsets"), ("apps", "v1", "statefulsets/status"),
        ("apps", "v1", "statefulsets/scale"), ("events.plat.io", "v1", "events"),
    }
    ns = infos[("", "v1", "namespaces")]
    assert not ns.namespaced and ns.short_names == ("ns",) and "deletecollection" not in ns.verbs
    assert infos[("", "v1", "namespaces/finalize")].verbs == ("update",)
    sts = infos[("apps", "v1", "statefulsets")]
    assert sts.short_names == ("sts",) and sts.categories == ("all",) and sts.kind == "StatefulSet"
    scale = infos[("apps", "v1", "statefulsets/scale")]
    assert (scale.sub_kind_group, scale.sub_kind_version, scale.sub_kind) == ("autoscaling", "v1", "Scale")
    assert scale.verbs == ("get", "patch", "update")
    assert infos[("", "v1", "configmaps")].short_names == ("cm",)
    assert infos[("", "v1", "serviceaccounts")].short_names == ("sa",)
    assert infos[("", "v1", "events")].short_names == ("ev",)
    assert all(i.storage_version_hash for i in builtin_resources() if not i.subresource)


def test_storage_for_called_once_per_stored_resource() -> None:
    calls: list[str] = []
    mem = MemStore()

    def storage_for(info: Any) -> MemStore:
        calls.append(f"{info.group}/{info.resource}")
        return mem
    stores = build_stores(storage_for)
    assert sorted(calls) == sorted(["/namespaces", "/configmaps", "/secrets", "/serviceaccounts",
                                    "/events", "coordination.plat.io/leases", "apps/statefulsets"])
    assert len(stores) == len(builtin_resources())
    assert stores[("apps", "v1", "statefulsets")].new_list_kind() == "StatefulSetList"
    cols = stores[("", "v1", "configmaps")].table_columns()
    assert [(c.name, c.type, c.format) for c in cols] == [("Name", "string", "name"), ("Created At", "date", "")]
    assert stores[("", "v1", "configmaps")].table_cells({"metadata": {"name": "a", "creationTimestamp": "t"}}) == ["a", "t"]


async def test_ensure_system_namespaces_is_idempotent() -> None:
    mem = MemStore()
    stores = build_stores(lambda info: mem)
    await ensure_system_namespaces(stores)
    await ensure_system_namespaces(stores)
    names = [i["metadata"]["name"] for i in (await stores[("", "v1", "namespaces")].list(ctx(), ListOptions()))["items"]]
    assert sorted(names) == ["default", "platform-node-lease", "platform-public", "platform-system"]


async def test_lifecycle_reads_live_after_delete(stores: Any, storage: Any) -> None:
    """A create right after the namespace delete sees Terminating even if the cached read
    is stale: the plug-in reads live for a while after a namespace delete."""
    ns = stores[("", "v1", "namespaces")]
    await ns.create(ctx(), {"metadata": {"name": "gone"}}, WriteOptions())
    await ns.delete(ctx(), "gone", DeleteOptions())
    got = await ns.get(ctx(), "gone", GetOptions())
    assert got["status"]["phase"] == "Terminating"
    import pytest

    from apiserver.status import APIError
    with pytest.raises(APIError) as e:
        await stores[("", "v1", "configmaps")].create(ctx("gone"), {"metadata": {"name": "x"}}, WriteOptions())
    assert e.value.code == 403
    assert e.value.details["causes"] == [{"reason": "NamespaceTerminating", "message": "namespace gone is being terminated",
                                          "field": "metadata.namespace"}]

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from apiserver.registry.catalog import build_stores, ensure_system_namespaces
from apiserver.registry.interface import Context, WriteOptions
from apiserver.request import UserInfo
from tests.apiserver.registry.memstore import MemStore

USER = UserInfo(name="admin", groups=("system:masters",))


def ctx(ns: str = "") -> Context:
    return Context(namespace=ns, user=USER)


@pytest.fixture
def memstore() -> MemStore:
    return MemStore()


@pytest.fixture(params=["embedded", "cached", "memory"])
def storage_mode(request: pytest.FixtureRequest) -> str:
    """embedded: the real embedded backend; cached: the same behind one watch cache per
    resource (as plat-server runs); memory: the in-memory stand-in."""
    return str(request.param)


@pytest.fixture
async def storage(storage_mode: str, tmp_path: Path) -> AsyncIterator[Any]:
    if storage_mode == "memory":
        yield MemStore()
        return
    from storage.factory import StorageConfig, open_storage
    store = await open_storage(StorageConfig(backend="embedded", data_dir=str(tmp_path / "db"),
                                             compaction_interval=0, fsync=False))
    try:
        yield store
    finally:
        await store.close()


async def make_stores(storage: Any, storage_for: Any = None) -> Any:
    st = build_stores(storage_for or (lambda info: storage),
                      gates={"AllowUnsafeMalformedObjectDeletion": True})
    await ensure_system_namespaces(st)
    await st[("", "v1", "namespaces")].create(ctx(), {"metadata": {"name": "ns1"}}, WriteOptions())
    return st


@pytest.fixture
async def stores(storage: Any, storage_mode: str) -> AsyncIterator[Any]:
    if storage_mode != "cached":
        yield await make_stores(storage)
        return
    from storage.cacher import Cacher
    from storage.keys import resource_prefix
    caches: list[Any] = []

    def storage_for(info: Any) -> Any:
        c = Cacher(storage, resource_prefix(info.group, info.resource),
                   resource=f"{info.resource}.{info.group}")
        caches.append(c)
        return c
    st = build_stores(storage_for, gates={"AllowUnsafeMalformedObjectDeletion": True})
    for c in caches:
        await c.start()
    for c in caches:
        assert await c.wait_ready(10)
    await ensure_system_namespaces(st)
    await st[("", "v1", "namespaces")].create(ctx(), {"metadata": {"name": "ns1"}}, WriteOptions())
    try:
        yield st
    finally:
        for c in caches:
            await c.close()


@pytest.fixture
async def memstores(memstore: MemStore) -> Any:
    return await make_stores(memstore)

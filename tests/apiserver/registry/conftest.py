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


@pytest.fixture(params=["embedded", "memory"])
async def storage(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    """The real embedded backend, and the in-memory stand-in (for corrupt-object tests)."""
    if request.param == "memory":
        yield MemStore()
        return
    from storage.factory import StorageConfig, open_storage
    store = await open_storage(StorageConfig(backend="embedded", data_dir=str(tmp_path / "db"),
                                             compaction_interval=0, fsync=False))
    try:
        yield store
    finally:
        await store.close()


async def make_stores(storage: Any) -> Any:
    st = build_stores(lambda info: storage, gates={"AllowUnsafeMalformedObjectDeletion": True})
    await ensure_system_namespaces(st)
    await st[("", "v1", "namespaces")].create(ctx(), {"metadata": {"name": "ns1"}}, WriteOptions())
    return st


@pytest.fixture
async def stores(storage: Any) -> Any:
    return await make_stores(storage)


@pytest.fixture
async def memstores(memstore: MemStore) -> Any:
    return await make_stores(memstore)

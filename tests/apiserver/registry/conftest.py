from __future__ import annotations

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
def storage() -> MemStore:
    return MemStore()


@pytest.fixture
async def stores(storage: MemStore) -> Any:
    st = build_stores(lambda info: storage, gates={"AllowUnsafeMalformedObjectDeletion": True})
    await ensure_system_namespaces(st)
    await st[("", "v1", "namespaces")].create(ctx(), {"metadata": {"name": "ns1"}}, WriteOptions())
    return st

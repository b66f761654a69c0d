"""The storage conformance suite (storage.testing.conformance) against a Cacher over the
embedded store, a three-member raftstore and a three-member etcd (session clusters shared
with other tests): one Cacher per case, for the case's own prefix, as the apiserver runs one
per resource."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from raftstore.launcher import Cluster
from storage.cacher import Cacher
from storage.interface import Interface
from storage.testing.conformance import ALL_CASES
from storage.testing.harness import Harness

Case = Callable[[Harness], Awaitable[None]]


@pytest.fixture
async def backend(tmp_path: Path) -> AsyncIterator[Interface]:
    from storage.embedded import open_embedded

    store = await open_embedded(str(tmp_path / "data"), fsync=False, too_large_wait=0.3)
    yield store
    await store.close()


async def _run(backend: Interface, case: Case) -> None:
    prefix = f"/registry/conf{uuid.uuid4().hex[:12]}"
    cacher = Cacher(backend, prefix, resource="conformance", wait_timeout=0.3,
                    bookmark_interval=0.5)
    await cacher.start()
    assert await cacher.wait_ready(10)
    h = Harness(store=cacher, compact=backend.compact, prefix=prefix)
    try:
        await case(h)
    finally:
        h.close()
        await cacher.close()


@pytest.mark.parametrize("case", list(ALL_CASES.values()), ids=list(ALL_CASES))
async def test_cacher_conformance(backend: Interface, case: Case) -> None:
    await _run(backend, case)


def _grpc_backend(cluster: Cluster) -> Interface:
    from storage.etcd3.grpcclient import GrpcKVClient
    from storage.etcd3.store import Etcd3Store

    client = GrpcKVClient([f"http://{e}" for e in cluster.endpoints])
    return Etcd3Store(client, too_large_wait=0.3, bookmark_interval=0.5)


@pytest.mark.parametrize("case", list(ALL_CASES.values()), ids=list(ALL_CASES))
async def test_cacher_conformance_raftstore(raftstore_cluster: Cluster, case: Case) -> None:
    backend = _grpc_backend(raftstore_cluster)
    try:
        await _run(backend, case)
    finally:
        await backend.close()


@pytest.mark.etcd
@pytest.mark.parametrize("case", list(ALL_CASES.values()), ids=list(ALL_CASES))
async def test_cacher_conformance_etcd(etcd_cluster: Cluster, case: Case) -> None:
    backend = _grpc_backend(etcd_cluster)
    try:
        await _run(backend, case)
    finally:
        await backend.close()

"""The conformance suite (storage.testing.conformance) against every backend: embedded (a
temporary data directory), a three-member raftstore cluster and a three-member etcd cluster
(both over gRPC, session-scoped clusters shared with other tests; every case has its own
key prefix)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from raftstore.launcher import Cluster
from storage.embedded import open_embedded
from storage.etcd3.grpcclient import GrpcKVClient
from storage.etcd3.store import Etcd3Store
from storage.testing.conformance import ALL_CASES
from storage.testing.harness import Harness

Case = Callable[[Harness], Awaitable[None]]
CASES = pytest.mark.parametrize("case", list(ALL_CASES.values()), ids=list(ALL_CASES))


async def _run(store: Etcd3Store, case: Case) -> None:
    h = Harness(store=store, compact=store.compact)
    try:
        await case(h)
    finally:
        h.close()


@pytest.fixture
async def embedded(tmp_path: Path) -> AsyncIterator[Etcd3Store]:
    store = await open_embedded(str(tmp_path / "data"), too_large_wait=0.3)
    yield store
    await store.close()


def _grpc_store(cluster: Cluster) -> Etcd3Store:
    client = GrpcKVClient([f"http://{e}" for e in cluster.endpoints])
    return Etcd3Store(client, too_large_wait=0.3, bookmark_interval=0.5)


@CASES
async def test_embedded(embedded: Etcd3Store, case: Case) -> None:
    await _run(embedded, case)


@CASES
async def test_raftstore(raftstore_cluster: Cluster, case: Case) -> None:
    store = _grpc_store(raftstore_cluster)
    try:
        await _run(store, case)
    finally:
        await store.close()


@pytest.mark.etcd
@CASES
async def test_etcd(etcd_cluster: Cluster, case: Case) -> None:
    store = _grpc_store(etcd_cluster)
    try:
        await _run(store, case)
    finally:
        await store.close()

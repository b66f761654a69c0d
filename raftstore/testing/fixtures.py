"""pytest fixtures that start real clusters; imported by ``tests/conftest.py`` and
``e2e/conftest.py`` (``from raftstore.testing.fixtures import *``).

``etcd_cluster`` / ``raftstore_cluster`` are session-scoped 3-member clusters shared by
every test that asks for them: tests keep to their own key prefixes and compare revisions
relative to where they started. Tests that kill members use ``cluster_factory`` for private
clusters instead.

Environment:
  RAFTSTORE_TEST_NO_FSYNC=1      start raftstore members with --unsafe-no-fsync
  RAFTSTORE_TEST_AGAINST=etcd    make ``raftstore_cluster`` a second etcd cluster (proves the
                                 differential harness itself: etcd must equal etcd)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from raftstore.launcher import Cluster, EtcdCluster, RaftstoreCluster
from raftstore.testing import etcdctl

ClusterFactory = Callable[..., Cluster]


def require_etcd() -> None:
    if not EtcdCluster.available():
        pytest.skip("etcd is not installed (/usr/bin/etcd; Debian package etcd-server)")
    if not etcdctl.available():
        pytest.skip("etcdctl is not installed (/usr/bin/etcdctl; Debian package etcd-client)")


def require_raftstore() -> None:
    if not etcdctl.available():
        pytest.skip("etcdctl is not installed (/usr/bin/etcdctl; Debian package etcd-client)")
    if os.environ.get("RAFTSTORE_TEST_AGAINST") == "etcd":
        require_etcd()


def raftstore_class() -> type[Cluster]:
    return EtcdCluster if os.environ.get("RAFTSTORE_TEST_AGAINST") == "etcd" else RaftstoreCluster


def _raftstore_kwargs(kwargs: dict[str, object]) -> dict[str, object]:
    if os.environ.get("RAFTSTORE_TEST_AGAINST") == "etcd":
        kwargs.pop("unsafe_no_fsync", None)
    elif os.environ.get("RAFTSTORE_TEST_NO_FSYNC") == "1":
        kwargs.setdefault("unsafe_no_fsync", True)
    return kwargs


@pytest.fixture(scope="session")
def etcd_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    require_etcd()
    cluster = EtcdCluster(tmp_path_factory.mktemp("etcd"), nodes=3)
    with cluster:
        yield cluster


@pytest.fixture(scope="session")
def raftstore_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    require_raftstore()
    cluster = raftstore_class()(tmp_path_factory.mktemp("raftstore"), nodes=3,
                                **_raftstore_kwargs({}))  # type: ignore[arg-type]
    with cluster:
        yield cluster


@pytest.fixture
def cluster_factory(tmp_path: Path) -> Iterator[Callable[..., Cluster]]:
    """``cluster_factory("raftstore"|"etcd", nodes=3, snapshot_count=..)`` starts a private
    cluster stopped at the end of the test."""
    started: list[Cluster] = []

    def make(kind: str = "raftstore", **kwargs: object) -> Cluster:
        if kind == "etcd":
            require_etcd()
            cls: type[Cluster] = EtcdCluster
        else:
            require_raftstore()
            cls = raftstore_class()
            kwargs = _raftstore_kwargs(kwargs)
        cluster = cls(tmp_path / f"{kind}{len(started)}", **kwargs)  # type: ignore[arg-type]
        started.append(cluster)
        cluster.start(timeout=float(os.environ.get("RAFTSTORE_TEST_START_TIMEOUT", "60")))
        return cluster

    yield make
    for cluster in started:
        cluster.stop()

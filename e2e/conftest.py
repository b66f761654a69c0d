"""Fault tests start private clusters (``cluster_factory``) since they kill members; API tests
put plat-server over each backend (``api_server``)."""

from apiserver.testing.fixtures import api_server, namespace
from raftstore.testing.fixtures import cluster_factory, etcd_cluster, raftstore_cluster

__all__ = ["api_server", "cluster_factory", "etcd_cluster", "namespace", "raftstore_cluster"]

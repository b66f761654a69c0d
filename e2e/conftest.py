"""Fault tests start private clusters (``cluster_factory``) since they kill members."""

from raftstore.testing.fixtures import cluster_factory, etcd_cluster, raftstore_cluster

__all__ = ["cluster_factory", "etcd_cluster", "raftstore_cluster"]

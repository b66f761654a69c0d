"""Cluster fixtures (real etcd and raftstore member processes): see raftstore.testing.fixtures."""

from raftstore.testing.fixtures import cluster_factory, etcd_cluster, raftstore_cluster

__all__ = ["cluster_factory", "etcd_cluster", "raftstore_cluster"]

"""Test helpers for raftstore: running etcdctl, and pytest fixtures that start real
multi-process clusters (raftstore or etcd) through :mod:`raftstore.launcher`."""

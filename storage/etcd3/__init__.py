"""The etcd3 storage backend: ``Etcd3Store`` (``storage.interface.Interface``) over a
``KVClient`` (``GrpcKVClient`` to raftstore or etcd; ``storage.embedded.LocalKVClient`` in
process)."""

"""The storage layer the apiserver uses: one async interface (``storage.interface``), two
backends (``storage.etcd3`` over gRPC to raftstore or etcd, ``storage.embedded`` in process),
the watch cache (``storage.cacher``) and the conformance suite every one of them passes
(``storage.testing``)."""

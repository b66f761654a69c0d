"""The MVCC key-value core, etcd v3.4 semantics (``KVStore()`` gives a store with its lessor
attached as ``store.lessor``).

Boundaries: ``types`` (values and errors), ``kv`` (the ``KV`` / ``TxnWrite`` Protocols),
``lease`` (the ``Lessor`` Protocol). Implementation: ``key_index`` (per-key generations),
``sorted_keys`` + ``keyrange`` (ordered keyspace, etcd's range conventions), ``kvstore``
(reads, commit, hash, snapshot), ``snapshot`` (copy-on-write snapshot views, chunked
encoder), ``kvstore_txn`` (write transaction), ``kvstore_compaction``,
``watchable_store`` (watchers and history), ``lessor``.
"""

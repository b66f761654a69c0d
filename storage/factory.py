"""``open_storage``: the one place that turns configuration into a running store."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from storage.compactor import Compactor
from storage.embedded import open_embedded
from storage.etcd3.grpcclient import GrpcKVClient
from storage.etcd3.store import Etcd3Store


@dataclass(frozen=True, slots=True, kw_only=True)
class StorageConfig:
    """``backend`` "embedded" needs ``data_dir``; "etcd3" needs ``etcd_servers`` (URLs such as
    ``http://127.0.0.1:2379``; ``https://`` or a CA file turns TLS on).
    ``compaction_interval`` (seconds; 0 disables) is ``--etcd-compaction-interval``."""

    backend: Literal["embedded", "etcd3"]
    data_dir: str = ""
    etcd_servers: tuple[str, ...] = ()
    etcd_cafile: str = ""
    etcd_certfile: str = ""
    etcd_keyfile: str = ""
    compaction_interval: float = 300.0
    fsync: bool = True  # embedded only; False is for tests
    # etcd3 only: whether watch progress requests are ordered after the events they cover
    # (None: decided from each member's version, as upstream; raftstore reports 3.4.0).
    etcd_trust_progress: bool | None = None


async def open_storage(cfg: StorageConfig) -> Etcd3Store:
    """A running store; its ``close()`` stops everything started here (compactor included).
    Raises ValueError for an incomplete configuration, RuntimeError for a data directory in
    use by another process."""
    if cfg.backend == "embedded":
        if not cfg.data_dir:
            raise ValueError("the embedded storage backend needs a data directory")
        store = await open_embedded(cfg.data_dir, fsync=cfg.fsync)
    elif cfg.backend == "etcd3":
        if not cfg.etcd_servers:
            raise ValueError("the etcd3 storage backend needs --etcd-servers")
        client = GrpcKVClient(cfg.etcd_servers, cafile=cfg.etcd_cafile,
                              certfile=cfg.etcd_certfile, keyfile=cfg.etcd_keyfile,
                              trust_progress=cfg.etcd_trust_progress)
        store = Etcd3Store(client)
    else:
        raise ValueError(f"unknown storage backend {cfg.backend!r}")
    if cfg.compaction_interval > 0:
        compactor = Compactor(store.client, cfg.compaction_interval)
        compactor.start()
        store.add_closer(compactor.stop)
    return store

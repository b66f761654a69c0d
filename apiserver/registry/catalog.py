"""The built-in resources this server serves and their stores.

``builtin_resources()`` is what discovery renders; ``build_stores(storage_for)`` gives one
``RESTStore`` per (group, version, "resource" or "resource/subresource"). A sub-resource
store shares its parent's storage Interface (``storage_for`` is called once per main
resource). ``ensure_system_namespaces(stores)`` creates the system namespaces at start.
"""

from __future__ import annotations

import base64
import hashlib
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final

from apiserver import status
from apiserver.admission.interface import Chain
from apiserver.admission.namespace_lifecycle import NamespaceLifecycle
from apiserver.registry.converting import ConvertingStore
from apiserver.registry.generic import GenericStore, StoreConfig
from apiserver.registry.interface import Context, GetOptions, Object, RESTStore, WriteOptions
from apiserver.registry.scale import ScaleStore
from apiserver.registry.strategies.configmaps import ConfigMapStrategy
from apiserver.registry.strategies.events import (
    EventStrategy,
    EventsV1Strategy,
    from_core,
    to_core,
)
from apiserver.registry.strategies.leases import LeaseStrategy
from apiserver.registry.strategies.namespaces import NamespaceStrategy
from apiserver.registry.strategies.secrets import SecretStrategy
from apiserver.registry.strategies.serviceaccounts import ServiceAccountStrategy
from apiserver.registry.strategies.statefulsets import StatefulSetStrategy
from apiserver.registry.strategy import Strategy
from apiserver.request import UserInfo
from apiserver.resources import ResourceInfo

if TYPE_CHECKING:
    from storage.interface import Interface

log = logging.getLogger(__name__)

StoreKey = tuple[str, str, str]
SYSTEM_NAMESPACES: Final = ("default", "platform-system", "platform-public",
                            "platform-node-lease")
SYSTEM_USER: Final = UserInfo(name="system:apiserver", groups=("system:masters",))
ALL_VERBS: Final = ("create", "delete", "deletecollection", "get", "list", "patch", "update",
                    "watch")
SUB_VERBS: Final = ("get", "patch", "update")


def _strategies() -> list[Strategy]:
    return [NamespaceStrategy(), ConfigMapStrategy(), SecretStrategy(),
            ServiceAccountStrategy(), EventStrategy(), LeaseStrategy(), StatefulSetStrategy(),
            EventsV1Strategy()]


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """Upstream discovery's StorageVersionHash: base64 of the first 8 bytes of
    sha256("<group>/<version>/<kind>")."""
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def _main_info(s: Strategy) -> ResourceInfo:
    verbs: tuple[str, ...] = ALL_VERBS
    if s.resource == "namespaces":
        verbs = tuple(x for x in ALL_VERBS if x != "deletecollection")
    return ResourceInfo(group=s.group, version=s.version, resource=s.resource, kind=s.kind,
                        namespaced=s.namespaced, singular=s.singular, verbs=verbs,
                        short_names=s.short_names, categories=s.categories,
                        storage_version_hash=storage_version_hash(s.group, s.version, s.kind))


def _subresources(s: Strategy) -> list[ResourceInfo]:
    subs: list[ResourceInfo] = []

    def sub(name: str, verbs: tuple[str, ...], sub_kind_group: str = "",
            sub_kind_version: str = "", sub_kind: str = "") -> ResourceInfo:
        return ResourceInfo(group=s.group, version=s.version, resource=s.resource,
                            kind=s.kind, namespaced=s.namespaced, subresource=name,
                            verbs=verbs, sub_kind_group=sub_kind_group,
                            sub_kind_version=sub_kind_version, sub_kind=sub_kind)
    if s.has_status:
        subs.append(sub("status", SUB_VERBS))
    if s.resource == "namespaces":
        subs.append(sub("finalize", ("update",)))
    if s.resource == "statefulsets":
        subs.append(sub("scale", SUB_VERBS,
                                 sub_kind_group="autoscaling", sub_kind_version="v1",
                                 sub_kind="Scale"))
    return subs


def builtin_resources() -> list[ResourceInfo]:
    """Every served resource and sub-resource, in discovery order."""
    out: list[ResourceInfo] = []
    for s in _strategies():
        out.append(_main_info(s))
        out.extend(_subresources(s))
    return out


def build_stores(storage_for: Callable[[ResourceInfo], Interface], *,
                 gates: Mapping[str, bool] | None = None,
                 admission: Chain | None = None,
                 min_request_timeout: int = 1800) -> dict[StoreKey, RESTStore]:
    """One store per served resource and sub-resource. ``admission`` defaults to a chain with
    NamespaceLifecycle; a given chain gets NamespaceLifecycle prepended to its mutating
    plug-ins. ``gates``: feature gates by name (AllowUnsafeMalformedObjectDeletion);
    ``min_request_timeout``: --min-request-timeout, the base of the default watch timeout."""
    chain = admission if admission is not None else Chain()
    config = StoreConfig(admission=chain, gates=dict(gates or {}),
                         min_request_timeout=min_request_timeout)
    stores: dict[StoreKey, RESTStore] = {}
    namespaces: GenericStore | None = None
    # storage per (key group, resource): a kind served in two groups shares one Interface
    storages: dict[tuple[str, str], Interface] = {}
    for s in _strategies():
        info = _main_info(s)
        skey = (s.group if s.storage_group is None else s.storage_group, s.resource)
        storage = storages.get(skey)
        if storage is None:
            storage = storages[skey] = storage_for(info)
        main = GenericStore(info, s, storage, config)
        if isinstance(s, EventsV1Strategy):
            stores[(s.group, s.version, s.resource)] = ConvertingStore(main, to_core,
                                                                       from_core)
        else:
            stores[(s.group, s.version, s.resource)] = main
        if s.resource == "namespaces":
            namespaces = main
        for sub in _subresources(s):
            key = (s.group, s.version, sub.path_name)
            if sub.subresource == "scale":
                stores[key] = ScaleStore(sub, main)
            else:
                stores[key] = GenericStore(sub, s.for_subresource(sub.subresource), storage,
                                           config)
    assert namespaces is not None
    ns_store = namespaces

    async def get_namespace(name: str, live: bool) -> Object | None:
        ctx = Context(namespace="", user=SYSTEM_USER)
        try:
            return await ns_store.get(ctx, name, GetOptions(resource_version="" if live
                                                            else "0"))
        except status.APIError as e:
            if e.code == 404:
                return None
            raise

    chain.mutating.insert(0, NamespaceLifecycle(get_namespace))
    return stores


async def ensure_system_namespaces(stores: Mapping[StoreKey, RESTStore]) -> None:
    """Create default, platform-system, platform-public and platform-node-lease if missing."""
    ns_store = stores[("", "v1", "namespaces")]
    ctx = Context(namespace="", user=SYSTEM_USER)
    for name in SYSTEM_NAMESPACES:
        try:
            await ns_store.create(ctx, {"metadata": {"name": name}}, WriteOptions())
            log.info("created system namespace %s", name)
        except status.APIError as e:
            if e.reason != "AlreadyExists":
                raise

"""The built-in resources this server serves and their stores.

The served set is upstream v1.33's default one (``apiserver.api.resources``). Each stored kind
is served by a strategy: the ``Strategy`` subclass defined for its (group, version, kind) in a
module of ``apiserver.registry.strategies`` (found automatically; the table fills
``resource``, ``singular``, ``short_names`` and ``categories`` when the class leaves them
empty, and always gives the scope), or else a schema-driven ``SchemaStrategy``. A subclass
whose ``subresource`` is set (e.g. "status") serves that sub-resource of its kind.

``builtin_resources()`` is what discovery renders; ``build_stores(storage_for)`` gives one
``RESTStore`` per (group, version, "resource" or "resource/subresource"). A sub-resource
store shares its parent's storage Interface (``storage_for`` is called once per stored
resource). ``ensure_system_namespaces(stores)`` creates the system namespaces at start.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import importlib
import logging
import pkgutil
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final

from apiserver import status
from apiserver.admission.interface import Chain
from apiserver.admission.namespace_lifecycle import NamespaceLifecycle
from apiserver.api import resources as table
from apiserver.registry import strategies as strategies_pkg
from apiserver.registry import virtual
from apiserver.registry.converting import Convert, ConvertingStore
from apiserver.registry.generic import GenericStore, StoreConfig
from apiserver.registry.interface import Context, GetOptions, Object, RESTStore, WriteOptions
from apiserver.registry.scale import ScaleStore
from apiserver.registry.schemastrategy import strategy_class
from apiserver.registry.strategies.events import EventsV1Strategy, from_core, to_core
from apiserver.registry.strategy import Strategy
from apiserver.request import UserInfo
from apiserver.resources import ResourceInfo

if TYPE_CHECKING:
    from apiserver.authn.interface import Authenticator
    from apiserver.authz.interface import Authorizer
    from storage.interface import Interface

log = logging.getLogger(__name__)

StoreKey = tuple[str, str, str]
StrategyKey = tuple[str, str, str, str]  # group, version, kind, subresource
SYSTEM_NAMESPACES: Final = ("default", "platform-system", "platform-public",
                            "platform-node-lease")
SYSTEM_USER: Final = UserInfo(name="system:apiserver", groups=("system:masters",))
ALL_VERBS: Final = ("create", "delete", "deletecollection", "get", "list", "patch", "update",
                    "watch")
SUB_VERBS: Final = ("get", "patch", "update")
# Sub-resources kept in the parent's storage and served by a generic store over it.
STORED_SUBRESOURCES: Final = frozenset({"status", "finalize", "approval",
                                        "ephemeralcontainers", "resize"})
# The review resources are also answered under their upstream group names (not listed in
# discovery): stock kubectl's ``auth whoami`` and ``auth can-i`` post to
# authentication.k8s.io / authorization.k8s.io with typed clients, as it asks for meta.k8s.io
# tables. The answer names the group that was asked for.
REVIEW_ALIASES: Final = {"authentication.plat.io": "authentication.k8s.io",
                         "authorization.plat.io": "authorization.k8s.io"}


def discover_strategies() -> dict[StrategyKey, type[Strategy]]:
    """Every ``Strategy`` subclass defined in a module of ``apiserver.registry.strategies``
    that names a kind, by (group, version, kind, subresource). When two classes claim one
    key, a subclass wins over its base; otherwise the first module (by name) wins."""
    found: dict[StrategyKey, type[Strategy]] = {}
    for m in sorted(pkgutil.iter_modules(strategies_pkg.__path__), key=lambda m: m.name):
        if m.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{strategies_pkg.__name__}.{m.name}")
        for obj in vars(mod).values():
            if not (isinstance(obj, type) and issubclass(obj, Strategy)
                    and obj.__module__ == mod.__name__ and obj.kind):
                continue
            key = (obj.group, obj.version, obj.kind, obj.subresource)
            have = found.get(key)
            if have is None or issubclass(obj, have):
                found[key] = obj
            elif not issubclass(have, obj):
                log.warning("two strategies for %s: %s.%s and %s.%s; using the first", key,
                            have.__module__, have.__qualname__, obj.__module__,
                            obj.__qualname__)
    return found


@functools.cache
def _strategy_classes() -> tuple[dict[tuple[str, str, str], type[Strategy]],
                                 dict[StrategyKey, type[Strategy]]]:
    """(main classes by (group, version, resource), sub-resource classes by key)."""
    found = discover_strategies()
    main: dict[tuple[str, str, str], type[Strategy]] = {}
    for res in table.all_resources():
        if not table.is_stored(res):
            continue
        base = found.get((res.group, res.version, res.kind, ""))
        cls = strategy_class(res, base)
        if cls.resource != res.name:
            raise ValueError(f"{cls.__module__}.{cls.__qualname__} serves {res.kind} as "
                             f"{cls.resource!r}; upstream calls it {res.name!r}")
        main[(res.group, res.version, res.name)] = cls
    subs: dict[StrategyKey, type[Strategy]] = {}
    for (g, ver, kind, sub), cls in found.items():
        served = table.for_kind(g, ver, kind)
        if served is None:
            log.warning("strategy %s.%s is for %s/%s %s, which is not served",
                        cls.__module__, cls.__qualname__, g, ver, kind)
        elif sub:
            subs[(g, ver, kind, sub)] = strategy_class(served, cls)
    return main, subs


def _strategies() -> list[Strategy]:
    """One instance per stored resource, in table order."""
    main, _ = _strategy_classes()
    return [cls() for cls in main.values()]


def _conversion(s: Strategy) -> tuple[Convert, Convert] | None:
    """(to stored form, from stored form) for a strategy serving a version whose objects are
    stored in another form: events.plat.io/v1 Events (core form), or a strategy with a
    ``storage_conversion()`` method (autoscaling/v1 HorizontalPodAutoscalers, v2 form)."""
    if isinstance(s, EventsV1Strategy):
        return to_core, from_core
    hook = getattr(s, "storage_conversion", None)
    if callable(hook):
        to_stored, from_stored = hook()
        return to_stored, from_stored
    return None


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """Upstream discovery's StorageVersionHash: base64 of the first 8 bytes of
    sha256("<group>/<version>/<kind>")."""
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


# Served versions whose objects are stored as another group/version (the storage version
# hash is that version's, as upstream: events.k8s.io/v1 Events hash as core v1 Events).
STORAGE_VERSIONS: Final = {("events.plat.io", "v1", "Event"): ("", "v1"),
                           ("autoscaling", "v1", "HorizontalPodAutoscaler"): ("autoscaling",
                                                                              "v2")}


def _main_info(res: table.Resource) -> ResourceInfo:
    sg, sv = STORAGE_VERSIONS.get((res.group, res.version, res.kind), (res.group, res.version))
    return ResourceInfo(group=res.group, version=res.version, resource=res.name,
                        kind=res.kind, namespaced=res.namespaced, singular=res.singular,
                        verbs=res.verbs, short_names=res.short_names,
                        categories=res.categories,
                        storage_version_hash=(storage_version_hash(sg, sv, res.kind)
                                              if table.is_stored(res) else ""))


def _sub_infos(res: table.Resource) -> list[ResourceInfo]:
    out: list[ResourceInfo] = []
    for s in res.subresources:
        other = bool(s.kind) or bool(s.group)
        out.append(ResourceInfo(
            group=res.group, version=res.version, resource=res.name, kind=res.kind,
            namespaced=res.namespaced, subresource=s.name, verbs=s.verbs,
            sub_kind_group=(s.group if s.group or s.version else res.group) if other else "",
            sub_kind_version=(s.version or res.version) if other else "",
            sub_kind=(s.kind or res.kind) if other else ""))
    return out


def builtin_resources() -> list[ResourceInfo]:
    """Every served resource and sub-resource, in discovery order."""
    out: list[ResourceInfo] = []
    for res in table.all_resources():
        out.append(_main_info(res))
        out.extend(_sub_infos(res))
    return out


def build_stores(storage_for: Callable[[ResourceInfo], Interface], *,
                 gates: Mapping[str, bool] | None = None,
                 admission: Chain | None = None,
                 min_request_timeout: int = 1800,
                 event_ttl: int = 3600,
                 authorizer: Authorizer | None = None,
                 authenticator: Authenticator | None = None) -> dict[StoreKey, RESTStore]:
    """One store per served resource and sub-resource. ``admission`` defaults to a chain with
    NamespaceLifecycle; a given chain gets NamespaceLifecycle prepended to its mutating
    plug-ins. ``gates``: feature gates by name (AllowUnsafeMalformedObjectDeletion);
    ``min_request_timeout``: --min-request-timeout, the base of the default watch timeout.
    ``authorizer`` and ``authenticator`` answer the review resources (also settable later
    with ``bind_auth``)."""
    chain = admission if admission is not None else Chain()
    config = StoreConfig(admission=chain, gates=dict(gates or {}),
                         min_request_timeout=min_request_timeout, event_ttl=event_ttl)
    auth = virtual.AuthDelegates(authorizer=authorizer, authenticator=authenticator)
    stores: dict[StoreKey, RESTStore] = {}
    # storage per (key group, resource): a kind served in two groups shares one Interface
    storages: dict[tuple[str, str], Interface] = {}
    main_classes, sub_classes = _strategy_classes()
    for res in table.all_resources():
        info = _main_info(res)
        key = (res.group, res.version, res.name)
        cls = main_classes.get(key)
        if cls is None:
            stores[key] = virtual.main_store(info, stores, auth)
            alias = REVIEW_ALIASES.get(res.group)
            if alias is not None:
                ainfo = dataclasses.replace(info, group=alias)
                stores[(alias, res.version, res.name)] = virtual.main_store(ainfo, stores, auth)
            for sub in _sub_infos(res):
                stores[(res.group, res.version, sub.path_name)] = virtual.sub_store(
                    sub, stores, auth)
            continue
        s = cls()
        s.configure(config.gates)
        skey = (s.group if s.storage_group is None else s.storage_group, s.resource)
        storage = storages.get(skey)
        if storage is None:
            storage = storages[skey] = storage_for(info)
        main = GenericStore(info, s, storage, config)
        # a version served over objects stored in another version's form
        conversion = _conversion(s)
        stores[key] = main if conversion is None else ConvertingStore(main, *conversion)
        for sub in _sub_infos(res):
            skey2 = (res.group, res.version, sub.path_name)
            if sub.subresource == "scale":
                stores[skey2] = ScaleStore(sub, main)
            elif sub.subresource in STORED_SUBRESOURCES:
                sub_cls = sub_classes.get((res.group, res.version, res.kind, sub.subresource))
                if sub_cls is not None:
                    sub_s = sub_cls()
                    sub_s.configure(config.gates)
                else:
                    sub_s = s.for_subresource(sub.subresource)
                sub_store = GenericStore(sub, sub_s, storage, config)
                stores[skey2] = sub_store if conversion is None else ConvertingStore(
                    sub_store, *conversion)
            else:
                stores[skey2] = virtual.sub_store(sub, stores, auth)
    ns_store = stores[("", "v1", "namespaces")]

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


def bind_auth(stores: Mapping[StoreKey, RESTStore], *, authorizer: Authorizer | None = None,
              authenticator: Authenticator | None = None) -> None:
    """Give the review resources the server's authorizer and authenticator (they are built
    with the HTTP chain, after the stores)."""
    for st in stores.values():
        if isinstance(st, virtual.VirtualStore):
            if authorizer is not None:
                st.auth.authorizer = authorizer
            if authenticator is not None:
                st.auth.authenticator = authenticator


# Upstream's scheduling bootstrap (SystemPriorityClasses), created by every apiserver.
SYSTEM_PRIORITY_CLASSES: Final = (
    ("system-node-critical", 2000001000,
     "Used for system critical pods that must not be moved from their current node."),
    ("system-cluster-critical", 2000000000,
     "Used for system critical pods that must run in the cluster, but can be moved to "
     "another node if necessary."),
)


async def ensure_system_priority_classes(stores: Mapping[StoreKey, RESTStore]) -> None:
    """Create system-node-critical and system-cluster-critical if missing."""
    store = stores.get(("scheduling.plat.io", "v1", "priorityclasses"))
    if store is None:
        return
    ctx = Context(namespace="", user=SYSTEM_USER)
    for name, value, description in SYSTEM_PRIORITY_CLASSES:
        obj = {"metadata": {"name": name}, "value": value, "description": description}
        try:
            await store.create(ctx, obj, WriteOptions())
            log.info("created system priority class %s", name)
        except status.APIError as e:
            if e.reason != "AlreadyExists":
                raise


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

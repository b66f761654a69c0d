"""The generic store (upstream ``registry/generic/registry/store.go``): one ``RESTStore`` for
any kind, parameterised by a ``Strategy``. Reads and creates live here; updates in
``generic_update.py``, deletes in ``generic_delete.py``.

Objects from storage may be shared with a cache, and callers may keep theirs: every path
works on a copy, unless the caller handed its object over (``treecopy.give``).
"""

from __future__ import annotations

import asyncio
import builtins
import dataclasses
import datetime as dt
import logging
import random
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from apiserver import selectors, status
from apiserver.admission.interface import CREATE, EMPTY_CHAIN, Attributes, Chain
from apiserver.api import required
from apiserver.registry import generic_delete, generic_update, shape
from apiserver.registry import validation as v
from apiserver.registry.interface import (
    Column,
    Context,
    DeleteOptions,
    GetOptions,
    ItemSink,
    ListOptions,
    Object,
    TransformFunc,
    WatchItem,
    WriteOptions,
)
from apiserver.registry.treecopy import deep_copy, take
from storage import interface as si
from storage import keys
from storage.cacher.cacher import Cacher, EncodedList
from storage.cacher.watch_cache import ItemEncoder
from storage.errors import Code, StorageError

if TYPE_CHECKING:
    from apiserver.registry.strategy import Strategy
    from apiserver.resources import ResourceInfo

log = logging.getLogger(__name__)

# upstream names.SimpleNameGenerator
NAME_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
RANDOM_LENGTH: Final = 5
MAX_GENERATED_NAME_LENGTH: Final = 63 - RANDOM_LENGTH
MAX_NAME_GENERATION_ATTEMPTS: Final = 8
INITIAL_EVENTS_ANNOTATION: Final = "plat.io/initial-events-end"


def now_rfc3339() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def generate_name(base: str) -> str:
    if len(base) > MAX_GENERATED_NAME_LENGTH:
        base = base[:MAX_GENERATED_NAME_LENGTH]
    return base + "".join(random.choice(NAME_ALPHABET) for _ in range(RANDOM_LENGTH))


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreConfig:
    """Server-wide knobs the stores share."""

    admission: Chain = EMPTY_CHAIN
    gates: Mapping[str, bool] = field(default_factory=dict)
    # watch timeout when the client gives none: a random value in [min, 2*min) (upstream
    # --min-request-timeout 1800 s)
    min_request_timeout: int = 1800
    # --event-ttl: how long the store keeps an event after its last write (seconds)
    event_ttl: int = 3600


class GenericStore:
    """``RESTStore`` for one resource or sub-resource (status, finalize)."""

    def __init__(self, info: ResourceInfo, strategy: Strategy, storage: si.Interface,
                 config: StoreConfig | None = None) -> None:
        self._info = info
        self.strategy = strategy
        self.storage = storage
        self.config = config or StoreConfig()
        self._last_decorated: tuple[Object, Object] | None = None
        # One bound method for every direct watch of this store, so the watch cache runs it
        # once per event for all of them (storage.interface.SinkTransform).
        self.watch_transform: si.SinkTransform = self._watch_object

    def ttl(self) -> int:
        """Seconds the store keeps an object after a write (upstream's TTLFunc): the
        event TTL for events, else 0 (for ever)."""
        return self.config.event_ttl if self.strategy.uses_event_ttl else 0

    # -- identity -----------------------------------------------------------------------------

    @property
    def info(self) -> ResourceInfo:
        return self._info

    @property
    def resource(self) -> str:
        return self.strategy.resource

    @property
    def group(self) -> str:
        return self.strategy.group

    @property
    def key_group(self) -> str:
        sg = self.strategy.storage_group
        return self.strategy.group if sg is None else sg

    def new_list_kind(self) -> str:
        return self.strategy.kind + "List"

    def key(self, ctx: Context, name: str) -> str:
        ns = self.namespace_of(ctx)
        return keys.object_key(self.key_group, self.resource, ns, name)

    def namespace_of(self, ctx: Context) -> str:
        if not self.strategy.namespaced:
            return ""
        if not ctx.namespace:
            raise status.bad_request("Namespace parameter required.")
        return ctx.namespace

    def prefix(self, ctx: Context) -> str:
        if self.strategy.namespaced and ctx.namespace:
            return keys.namespace_prefix(self.key_group, self.resource, ctx.namespace)
        return keys.resource_prefix(self.key_group, self.resource) + "/"

    def decorate(self, obj: Object) -> Object:
        """A copy with kind and apiVersion set (the stored form may lack them)."""
        kind, av = self.strategy.kind, self.strategy.group_version
        out: Object = {"kind": kind, "apiVersion": av}
        out.update(obj)
        out["kind"] = kind
        out["apiVersion"] = av
        return out

    def decorated_shared(self, obj: Object) -> Object:
        """``decorate`` for watch events: the watch cache hands the same (read-only) object to
        every watcher of an event, so one decorated copy serves them all (and, being one
        object, lets the handler encode it once: see endpoints/watch.py)."""
        last = self._last_decorated
        if last is not None and last[0] is obj:
            return last[1]
        out = self.decorate(obj)
        self._last_decorated = (obj, out)
        return out

    def _watch_object(self, type_: str, obj: Object) -> Object:
        """What a watch shows of a store event's object: decorated, or for a bookmark only
        its kind, apiVersion, resourceVersion and annotations."""
        if type_ == "BOOKMARK":
            return bookmark_object(self.strategy, obj)
        return self.decorated_shared(obj)

    def storage_error(self, err: StorageError, name: str = "") -> status.APIError:
        return status.from_storage_error(err, resource=self.resource, group=self.group,
                                         name=name, kind=self.strategy.kind)

    def invalid(self, name: str, causes: list[v.Cause]) -> status.APIError:
        return status.invalid(self.strategy.kind, self.group, name, causes)

    def attrs(self, ctx: Context, op: str, obj: Object | None, old: Object | None, name: str,
              dry_run: bool) -> Attributes:
        ns = ctx.namespace if self.strategy.namespaced else ""
        return Attributes(operation=op, object=obj, old_object=old, resource=self._info,
                          namespace=ns, name=name, user=ctx.user, dry_run=dry_run)

    # -- reads --------------------------------------------------------------------------------

    async def get(self, ctx: Context, name: str, opts: GetOptions) -> Object:
        key = self.key(ctx, name)
        try:
            obj = await self.storage.get(key, si.GetOptions(resource_version=opts.resource_version))
        except StorageError as e:
            raise self.storage_error(e, name) from None
        if obj is None:
            raise status.not_found(self.resource, self.group, name)
        return self.decorate(obj)

    def predicate(self, opts: ListOptions) -> si.Predicate:
        try:
            match = selectors.compile_matcher(opts.label_selector, opts.field_selector,
                                              self.strategy.field_getters,
                                              self.strategy.field_label_error,
                                              self.strategy.common_fields)
        except selectors.SelectorError as e:
            raise status.bad_request(str(e)) from None
        if match is None:
            return si.EVERYTHING
        return si.Predicate(matches=match, everything=False,
                            label_selector=opts.label_selector,
                            field_selector=opts.field_selector)

    def storage_list_options(self, opts: ListOptions, recursive: bool = True) -> si.ListOptions:
        return si.ListOptions(
            resource_version=opts.resource_version,
            resource_version_match=opts.resource_version_match,
            limit=opts.limit, continue_token=opts.continue_token,
            predicate=self.predicate(opts), recursive=recursive,
            allow_watch_bookmarks=opts.allow_watch_bookmarks,
            send_initial_events=opts.send_initial_events)

    def list_key(self, ctx: Context, opts: ListOptions) -> tuple[str, bool]:
        """(key, recursive): a field selector pinning metadata.name reads or watches that one
        key (upstream SelectionPredicate.MatchesSingle), else the collection's prefix."""
        if opts.field_selector and (ctx.namespace or not self.strategy.namespaced):
            try:
                reqs = selectors.parse_field_requirements(opts.field_selector)
            except selectors.SelectorError:
                reqs = []  # predicate() reports it
            for r in reqs:
                if r.field == "metadata.name" and r.op == "=" and r.value:
                    return self.key(ctx, r.value), False
        return self.prefix(ctx), True

    async def list(self, ctx: Context, opts: ListOptions) -> Object:
        key, recursive = self.list_key(ctx, opts)
        sopts = self.storage_list_options(opts, recursive)
        try:
            res = await self.storage.get_list(key, sopts)
        except StorageError as e:
            raise self.storage_error(e) from None
        head = self._list_head(res)
        head["items"] = [self.decorate(o) for o in res.items]
        return head

    async def list_encoded(self, ctx: Context, opts: ListOptions, encoding: str,
                           encode: Callable[[Object], bytes]
                           ) -> tuple[Object, builtins.list[bytes]] | None:
        """``list`` with each item as ``encode`` encodes it (``encoding`` names it: equal names
        must encode alike), for storage that keeps encodings (the watch cache): the list
        without ``items``, and the items' encodings. None when storage keeps none."""
        storage = self.storage
        if not isinstance(storage, Cacher):
            return None
        key, recursive = self.list_key(ctx, opts)
        sopts = self.storage_list_options(opts, recursive)
        decorate = self.decorate
        encoder = ItemEncoder(ident=(encoding, self.strategy.kind, self.strategy.group_version),
                              encode=lambda obj: encode(decorate(obj)))
        try:
            res = await storage.get_list_encoded(key, sopts, encoder)
        except StorageError as e:
            raise self.storage_error(e) from None
        return self._list_head(res), res.items

    def _list_head(self, res: si.ListResult | EncodedList) -> Object:
        meta: dict[str, Any] = {"resourceVersion": str(res.resource_version)}
        if res.continue_token:
            meta["continue"] = res.continue_token
        if res.remaining_item_count is not None and res.remaining_item_count > 0:
            meta["remainingItemCount"] = res.remaining_item_count
        return {"kind": self.new_list_kind(), "apiVersion": self.strategy.group_version,
                "metadata": meta}

    async def watch(self, ctx: Context, opts: ListOptions) -> _WatchStream:
        key, recursive = self.list_key(ctx, opts)
        timeout = opts.timeout_seconds
        if timeout <= 0:
            base = self.config.min_request_timeout
            timeout = int(base * (1 + random.random()))
        sopts = dataclasses.replace(self.storage_list_options(opts, recursive),
                                    timeout_seconds=float(timeout))
        try:
            watcher = await self.storage.watch(key, sopts)
        except StorageError as e:
            raise self.storage_error(e) from None
        return _WatchStream(self, watcher, float(timeout))

    # -- create -------------------------------------------------------------------------------

    async def create(self, ctx: Context, obj: Object, opts: WriteOptions) -> Object:
        if not isinstance(obj, dict):
            raise status.bad_request(f"the body of the request must be a {self.strategy.kind} "
                                     "object")
        shape.check(obj, self.strategy.kind, self.strategy.typed_fields,
                    self.strategy.group_version)
        obj = take(obj)  # the caller's object is left alone unless handed over
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, dict):
            raise status.bad_request("metadata must be an object")
        self.fill_namespace(ctx, meta)
        obj["kind"] = self.strategy.kind
        obj["apiVersion"] = self.strategy.group_version
        await self.config.admission.admit(
            self.attrs(ctx, CREATE, obj, None, str(meta.get("name") or ""), opts.dry_run))
        meta = obj["metadata"]
        if meta.get("generateName") and not meta.get("name"):
            last: status.APIError | None = None
            for _ in range(MAX_NAME_GENERATION_ATTEMPTS):
                attempt = deep_copy(obj)
                try:
                    return await self._create_once(ctx, attempt, opts)
                except status.APIError as e:
                    if e.reason != "AlreadyExists":
                        raise
                    last = e
            assert last is not None
            raise generate_name_conflict(self.resource, self.group,
                                         str((last.details or {}).get("name", "")))
        return await self._create_once(ctx, obj, opts)

    def fill_namespace(self, ctx: Context, meta: dict[str, Any]) -> None:
        """Upstream rest.ValidNamespace: the body's namespace must match the request's."""
        if self.strategy.namespaced:
            ns = meta.get("namespace") or ""
            if not ns:
                meta["namespace"] = ctx.namespace
            elif ctx.namespace and ns != ctx.namespace:
                raise status.bad_request("the namespace of the provided object does not match "
                                         "the namespace sent on the request")
        else:
            meta.pop("namespace", None)

    def before_create(self, obj: Object) -> None:
        """Upstream rest.BeforeCreate: system fields, defaults, validation. Raises 422."""
        meta = obj["metadata"]
        meta.pop("deletionTimestamp", None)
        meta.pop("deletionGracePeriodSeconds", None)
        self.strategy.default(obj)
        self.strategy.drop_empty_fields(obj)
        self.strategy.prepare_for_create(obj)
        if meta.get("generateName") and not meta.get("name"):
            meta["name"] = generate_name(str(meta["generateName"]))
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        causes = v.validate_object_meta(meta, namespaced=self.strategy.namespaced,
                                        name_validator=self.strategy.name_errors)
        causes += self.strategy.validate(obj)
        causes += required.causes(self.strategy.group_version, self.strategy.kind, obj, causes)
        if causes:
            raise self.invalid(str(meta.get("name") or ""), causes)
        self.strategy.canonicalize(obj)

    async def _create_once(self, ctx: Context, obj: Object, opts: WriteOptions) -> Object:
        self.before_create(obj)
        meta = obj["metadata"]
        name = str(meta["name"])
        await self.config.admission.validate(self.attrs(ctx, CREATE, obj, None, name,
                                                        opts.dry_run))
        if meta.get("resourceVersion"):
            # upstream's storage refuses this with a plain error that becomes a 500; it is bad
            # input, so here it is a 400 with upstream's words (never a 500 for bad input)
            raise status.bad_request("resourceVersion should not be set on objects to be "
                                     "created")
        meta.pop("resourceVersion", None)
        obj["apiVersion"] = self.strategy.storage_group_version
        key = keys.object_key(self.key_group, self.resource,
                              str(meta.get("namespace") or ""), name)
        if opts.dry_run:
            try:
                existing = await self.storage.get(key, si.GetOptions(ignore_not_found=True))
            except StorageError as e:
                raise self.storage_error(e, name) from None
            if existing is not None:
                raise status.already_exists(self.resource, self.group, name)
            await self.strategy.allocate(self.storage, obj, None, True)
            return self.decorate(obj)
        alloc = await self.strategy.allocate(self.storage, obj, None, False)
        ttl = self.ttl()
        try:
            out = await (self.storage.create(key, obj, ttl=ttl) if ttl
                         else self.storage.create(key, obj))
        except StorageError as e:
            if alloc is not None:
                await alloc.rollback()
            err = self.storage_error(e, name)
            if e.code is Code.KEY_EXISTS:
                await self._note_being_deleted(key, err)
            raise err from None
        except BaseException:
            if alloc is not None:
                await alloc.rollback()
            raise
        return self.decorate(out)

    async def _note_being_deleted(self, key: str, err: status.APIError) -> None:
        """Upstream prefixes AlreadyExists with "object is being deleted: " when the existing
        object has a deletionTimestamp."""
        try:
            existing = await self.storage.get(key, si.GetOptions(ignore_not_found=True))
        except StorageError:
            return
        if existing is not None and (existing.get("metadata") or {}).get("deletionTimestamp"):
            err.message = f"object is being deleted: {err.message}"
            err.args = (err.message,)

    # -- writes in other modules ----------------------------------------------------------------

    async def update(
        self, ctx: Context, name: str, transform: TransformFunc, opts: WriteOptions,
        *, force_allow_create: bool = False,
    ) -> tuple[Object, bool]:
        return await generic_update.update(self, ctx, name, transform, opts,
                                           force_allow_create=force_allow_create)

    async def delete(self, ctx: Context, name: str, opts: DeleteOptions) -> tuple[Object, bool]:
        return await generic_delete.delete(self, ctx, name, opts)

    async def delete_collection(self, ctx: Context, opts: DeleteOptions,
                                list_opts: ListOptions) -> Object:
        return await generic_delete.delete_collection(self, ctx, opts, list_opts)

    # -- tables -------------------------------------------------------------------------------

    def table_columns(self) -> builtins.list[Column]:
        return self.strategy.table_columns()

    def table_cells(self, obj: Object) -> builtins.list[Any]:
        return self.strategy.table_cells(obj)


def generate_name_conflict(resource: str, group: str, name: str) -> status.APIError:
    """Upstream NewGenerateNameConflict: every generated name collided."""
    qr = status.qualified_resource(resource, group)
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = resource
    details["retryAfterSeconds"] = 1
    return status.APIError(409, "AlreadyExists",
                           f'{qr} "{name}" already exists, the server was not able to generate '
                           "a unique name for the object", details=details)


def bookmark_object(strategy: Strategy, obj: Object) -> Object:
    """A BOOKMARK event's object: kind, apiVersion, and of the store's metadata only the
    resourceVersion and annotations (the initial-events-end marker)."""
    src = obj.get("metadata") or {}
    meta: dict[str, Any] = {"resourceVersion": src.get("resourceVersion", "")}
    if src.get("annotations"):
        meta["annotations"] = dict(src["annotations"])
    return {"kind": strategy.kind, "apiVersion": strategy.group_version, "metadata": meta}


class _WatchStream:
    """Storage events -> WatchItems with kind/apiVersion; ends at the timeout."""

    def __init__(self, store: GenericStore, watcher: si.Watcher, timeout: float) -> None:
        self._store = store
        self._watcher = watcher
        self._stopped = False
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(timeout, self.stop)

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._timer.cancel()
        self._watcher.stop()

    def __aiter__(self) -> AsyncIterator[WatchItem]:
        return self._iterate()

    def attach_sink(self, sink: ItemSink) -> bool:
        """``DirectWatchStream``: the store's events reach ``sink`` as the iterator would
        yield them (decorated; bookmarks with kind and apiVersion). The sink is handed to
        the storage watcher as it is, with the store's transform, so that the watch cache
        calls nothing between its dispatcher and the sink per watcher and event."""
        watcher = self._watcher
        if not isinstance(watcher, si.DirectWatcher):
            return False
        watcher.attach_sink(sink, self._store.watch_transform)
        return True

    async def _iterate(self) -> AsyncIterator[WatchItem]:
        st = self._store
        try:
            async for ev in self._watcher:
                if ev.type == "ERROR":
                    err = ev.error or StorageError(Code.INTERNAL, "watch failed")
                    yield WatchItem(type="ERROR", object=st.storage_error(err).body())
                    break
                if ev.type == "BOOKMARK":
                    yield WatchItem(type="BOOKMARK",
                                    object=bookmark_object(st.strategy, ev.object))
                    continue
                yield WatchItem(type=ev.type, object=st.decorated_shared(ev.object))
        finally:
            self.stop()

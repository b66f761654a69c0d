"""A small in-memory RESTStore for handler tests (a fake of the registry layer: the real
generic store is exercised by the registry's own tests and the integration tests)."""

from __future__ import annotations

import asyncio
import builtins
import copy
import uuid
from collections.abc import AsyncIterator
from typing import Any

from apiserver.registry.interface import (
    Column,
    Context,
    DeleteOptions,
    GetOptions,
    ListOptions,
    Object,
    TransformFunc,
    WatchItem,
    WriteOptions,
)
from apiserver.resources import ResourceInfo
from apiserver.status import already_exists, conflict, gone, not_found


def _matches(obj: Object, opts: ListOptions) -> bool:
    meta = obj["metadata"]
    for term in filter(None, opts.label_selector.split(",")):
        k, _, v = term.partition("=")
        if (meta.get("labels") or {}).get(k) != v:
            return False
    for term in filter(None, opts.field_selector.split(",")):
        k, _, v = term.partition("=")
        if k == "metadata.name" and meta.get("name") != v:
            return False
    return True


class MemWatch:
    def __init__(self, store: MemStore, ctx: Context, opts: ListOptions) -> None:
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.store, self.ctx, self.opts = store, ctx, opts
        self.stopped = False

    def offer(self, item: WatchItem) -> None:
        if item.type in ("BOOKMARK", "ERROR"):
            self.queue.put_nowait(item)
        elif not self.stopped and _matches(item.object, self.opts) and (
                not self.ctx.namespace
                or item.object["metadata"].get("namespace") == self.ctx.namespace):
            self.queue.put_nowait(item)

    async def _iter(self) -> AsyncIterator[WatchItem]:
        while True:
            item = await self.queue.get()
            if item is None:
                return
            if isinstance(item, Exception):
                raise item
            yield item

    def __aiter__(self) -> AsyncIterator[WatchItem]:
        return self._iter()

    def stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            self.queue.put_nowait(None)
            self.store.watchers.discard(self)


class MemStore:
    def __init__(self, info: ResourceInfo, *, parent: MemStore | None = None) -> None:
        self._info = info
        self.objects: dict[tuple[str, str], Object] = parent.objects if parent else {}
        self.rv = parent.rv if parent else [1]
        self.watchers: set[MemWatch] = parent.watchers if parent else set()
        self.calls: list[tuple[str, Any]] = []

    @property
    def info(self) -> ResourceInfo:
        return self._info

    def new_list_kind(self) -> str:
        return self._info.kind + "List"

    def _next_rv(self) -> str:
        self.rv[0] += 1
        return str(self.rv[0])

    def _notify(self, typ: str, obj: Object) -> None:
        for w in list(self.watchers):
            w.offer(WatchItem(type=typ, object=copy.deepcopy(obj)))

    async def get(self, ctx: Context, name: str, opts: GetOptions) -> Object:
        self.calls.append(("get", opts))
        obj = self.objects.get((ctx.namespace, name))
        if obj is None:
            raise not_found(self._info.resource, self._info.group, name)
        return copy.deepcopy(obj)

    async def list(self, ctx: Context, opts: ListOptions) -> Object:
        self.calls.append(("list", opts))
        items = [copy.deepcopy(o) for (ns, _), o in sorted(self.objects.items())
                 if (not ctx.namespace or ns == ctx.namespace) and _matches(o, opts)]
        return {"kind": self.new_list_kind(), "apiVersion": self._info.group_version,
                "metadata": {"resourceVersion": str(self.rv[0])}, "items": items}

    async def watch(self, ctx: Context, opts: ListOptions) -> MemWatch:
        self.calls.append(("watch", opts))
        w = MemWatch(self, ctx, opts)
        if opts.resource_version == "1":
            w.offer(WatchItem(type="ERROR", object=gone("too old resource version: 1 (5)").body()))
            w.queue.put_nowait(None)
            return w
        if opts.resource_version == "99":  # fails after the stream started
            w.queue.put_nowait(gone("the watch cache was reset"))
            return w
        if opts.resource_version in ("", "0"):
            for (ns, _), o in sorted(self.objects.items()):
                if not ctx.namespace or ns == ctx.namespace:
                    w.offer(WatchItem(type="ADDED", object=copy.deepcopy(o)))
        if opts.allow_watch_bookmarks:
            w.offer(WatchItem(type="BOOKMARK", object={
                "kind": self._info.kind, "apiVersion": self._info.group_version,
                "metadata": {"resourceVersion": str(self.rv[0])}}))
        self.watchers.add(w)
        return w

    async def create(self, ctx: Context, obj: Object, opts: WriteOptions) -> Object:
        self.calls.append(("create", opts))
        meta = obj["metadata"]
        name = meta.get("name") or (meta.get("generateName", "x") + uuid.uuid4().hex[:5])
        if (ctx.namespace, name) in self.objects:
            raise already_exists(self._info.resource, self._info.group, name)
        meta.update(name=name, uid=str(uuid.uuid4()), creationTimestamp="2026-01-01T00:00:00Z")
        if self._info.namespaced:
            meta["namespace"] = ctx.namespace
        if opts.dry_run:
            meta["resourceVersion"] = ""
            return obj
        meta["resourceVersion"] = self._next_rv()
        self.objects[(ctx.namespace, name)] = copy.deepcopy(obj)
        self._notify("ADDED", obj)
        return obj

    async def update(self, ctx: Context, name: str, transform: TransformFunc,
                     opts: WriteOptions, *, force_allow_create: bool = False,
                     ) -> tuple[Object, bool]:
        self.calls.append(("update", opts))
        cur = self.objects.get((ctx.namespace, name))
        new = await transform(copy.deepcopy(cur) if cur is not None else None)
        if cur is None:
            return await self.create(ctx, new, opts), True
        rv = new["metadata"].get("resourceVersion")
        if rv and rv != cur["metadata"]["resourceVersion"]:
            raise conflict(self._info.resource, self._info.group, name,
                           "the object has been modified; please apply your changes to the "
                           "latest version and try again")
        if opts.dry_run:
            return new, False
        new["metadata"]["resourceVersion"] = self._next_rv()
        self.objects[(ctx.namespace, name)] = copy.deepcopy(new)
        self._notify("MODIFIED", new)
        return new, False

    async def delete(self, ctx: Context, name: str, opts: DeleteOptions) -> tuple[Object, bool]:
        self.calls.append(("delete", opts))
        cur = self.objects.get((ctx.namespace, name))
        if cur is None:
            raise not_found(self._info.resource, self._info.group, name)
        if cur["metadata"].get("finalizers"):
            cur["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:01Z"
            return copy.deepcopy(cur), False
        if not opts.dry_run:
            del self.objects[(ctx.namespace, name)]
            self._notify("DELETED", cur)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": {"name": name, "kind": self._info.resource,
                            "uid": cur["metadata"]["uid"]}}, True

    async def delete_collection(self, ctx: Context, opts: DeleteOptions,
                                list_opts: ListOptions) -> Object:
        self.calls.append(("deletecollection", (opts, list_opts)))
        out = await self.list(ctx, list_opts)
        if not opts.dry_run:
            for item in out["items"]:
                m = item["metadata"]
                del self.objects[(m.get("namespace", ""), m["name"])]
                self._notify("DELETED", item)
        return out

    def table_columns(self) -> builtins.list[Column]:
        return [Column(name="Name", type="string", format="name", description="Name"),
                Column(name="Created At", type="date", description="Creation time")]

    def table_cells(self, obj: Object) -> builtins.list[Any]:
        return [obj["metadata"]["name"], obj["metadata"].get("creationTimestamp")]

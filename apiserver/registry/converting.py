"""A store serving a second API version of a kind stored in another form
(events.plat.io/v1 Events over the core v1 store). Bodies are converted to the stored form on
the way in and back on the way out; everything else is the inner generic store's."""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from apiserver.registry.generic import GenericStore
    from apiserver.resources import ResourceInfo

Convert = Callable[[Object], Object]


class _ConvertingWatch:
    def __init__(self, inner: Any, out: Convert) -> None:
        self._inner = inner
        self._out = out

    def stop(self) -> None:
        self._inner.stop()

    def __aiter__(self) -> AsyncIterator[WatchItem]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[WatchItem]:
        async for ev in self._inner:
            if ev.type in ("ADDED", "MODIFIED", "DELETED"):
                yield WatchItem(type=ev.type, object=self._out(ev.object))
            else:
                yield ev


class ConvertingStore:
    def __init__(self, inner: GenericStore, to_stored: Convert, from_stored: Convert) -> None:
        self.inner = inner
        self._in = to_stored
        self._from = from_stored

    def _out(self, obj: Object) -> Object:
        if obj.get("kind") == "Status":
            return obj
        return self._from(obj)

    @property
    def info(self) -> ResourceInfo:
        return self.inner.info

    def new_list_kind(self) -> str:
        return self.inner.new_list_kind()

    def _list_out(self, lst: Object) -> Object:
        return dict(lst, items=[self._out(i) for i in lst["items"]])

    async def get(self, ctx: Context, name: str, opts: GetOptions) -> Object:
        return self._out(await self.inner.get(ctx, name, opts))

    async def list(self, ctx: Context, opts: ListOptions) -> Object:
        return self._list_out(await self.inner.list(ctx, opts))

    async def watch(self, ctx: Context, opts: ListOptions) -> _ConvertingWatch:
        return _ConvertingWatch(await self.inner.watch(ctx, opts), self._out)

    async def create(self, ctx: Context, obj: Object, opts: WriteOptions) -> Object:
        if isinstance(obj, dict):
            obj = self._in(obj)
        return self._out(await self.inner.create(ctx, obj, opts))

    async def update(self, ctx: Context, name: str, transform: TransformFunc,
                     opts: WriteOptions, *, force_allow_create: bool = False,
                     ) -> tuple[Object, bool]:
        async def converted(current: Object | None) -> Object:
            served = self._out(self.inner.decorate(current)) if current is not None else None
            out = await transform(served)
            return self._in(out) if isinstance(out, dict) else out

        obj, created = await self.inner.update(ctx, name, converted, opts,
                                               force_allow_create=force_allow_create)
        return self._out(obj), created

    async def delete(self, ctx: Context, name: str, opts: DeleteOptions) -> tuple[Object, bool]:
        obj, now = await self.inner.delete(ctx, name, opts)
        return self._out(obj), now

    async def delete_collection(self, ctx: Context, opts: DeleteOptions,
                                list_opts: ListOptions) -> Object:
        return self._list_out(await self.inner.delete_collection(ctx, opts, list_opts))

    def table_columns(self) -> builtins.list[Column]:
        return self.inner.table_columns()

    def table_cells(self, obj: Object) -> builtins.list[Any]:
        return self.inner.table_cells(self._in(obj))

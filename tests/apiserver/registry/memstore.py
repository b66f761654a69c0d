"""A tiny in-memory storage.Interface for the registry's unit tests (stand-in until the
embedded backend lands): one revision counter, CAS updates, watch from now with predicate
transitions. No paging tokens or compaction."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator
from typing import Any

from storage import interface as si
from storage.errors import Code, StorageError


class _Watcher:
    def __init__(self, store: MemStore, prefix: str, pred: si.Predicate,
                 exact: bool = False) -> None:
        self.exact = exact
        self.q: asyncio.Queue[si.WatchEvent | None] = asyncio.Queue()
        self.prefix = prefix
        self.pred = pred
        self.store = store
        self.stopped = False

    def stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            self.q.put_nowait(None)
            if self in self.store.watchers:
                self.store.watchers.remove(self)

    def __aiter__(self) -> AsyncIterator[si.WatchEvent]:
        return self._it()

    async def _it(self) -> AsyncIterator[si.WatchEvent]:
        while True:
            ev = await self.q.get()
            if ev is None:
                return
            yield ev
            if ev.type == "ERROR":
                return


class MemStore:
    def __init__(self) -> None:
        self.data: dict[str, tuple[bytes, int]] = {}
        self.ttls: dict[str, int] = {}  # the ttl each key was last written with
        self.rev = 1
        self.watchers: list[_Watcher] = []
        self.corrupt: set[str] = set()

    def _out(self, key: str) -> dict[str, Any]:
        if key in self.corrupt:
            raise StorageError(Code.INVALID_OBJ, "cannot decode", key=key)
        raw, rev = self.data[key]
        obj: dict[str, Any] = json.loads(raw)
        obj.setdefault("metadata", {})["resourceVersion"] = str(rev)
        return obj

    def _put(self, key: str, obj: dict[str, Any]) -> dict[str, Any]:
        prev = self._out(key) if key in self.data else None
        o = copy.deepcopy(obj)
        o.get("metadata", {}).pop("resourceVersion", None)
        self.rev += 1
        self.data[key] = (json.dumps(o).encode(), self.rev)
        out = self._out(key)
        self._notify(key, prev, out)
        return out

    def _notify(self, key: str, prev: dict[str, Any] | None, cur: dict[str, Any] | None) -> None:
        for w in list(self.watchers):
            if not (key == w.prefix if w.exact else key.startswith(w.prefix)):
                continue
            was = prev is not None and w.pred.matches(prev)
            now = cur is not None and w.pred.matches(cur)
            if cur is not None and now:
                w.q.put_nowait(si.WatchEvent(type="MODIFIED" if was else "ADDED", object=cur))
            elif was:
                last = copy.deepcopy(prev if cur is None else cur)
                assert last is not None
                last["metadata"]["resourceVersion"] = str(self.rev)
                w.q.put_nowait(si.WatchEvent(type="DELETED", object=last))

    async def create(self, key: str, obj: dict[str, Any], *, ttl: int = 0) -> dict[str, Any]:
        self.ttls[key] = ttl  # recorded, not enforced
        if key in self.data:
            raise StorageError(Code.KEY_EXISTS, f"key exists: {key}", key=key)
        return self._put(key, obj)

    async def get(self, key: str, opts: si.GetOptions) -> dict[str, Any] | None:
        if key not in self.data:
            if opts.ignore_not_found:
                return None
            raise StorageError(Code.KEY_NOT_FOUND, f"not found: {key}", key=key)
        return self._out(key)

    async def get_list(self, key: str, opts: si.ListOptions) -> si.ListResult:
        prefix = key if key.endswith("/") else key + "/"
        items = [self._out(k) for k in sorted(self.data)
                 if (k.startswith(prefix) if opts.recursive else k == key)
                 and k not in self.corrupt]
        items = [o for o in items if opts.predicate.matches(o)]
        return si.ListResult(items=items, resource_version=self.rev)

    def _check(self, cur: dict[str, Any], pre: si.Preconditions | None) -> None:
        if pre is None:
            return
        m = cur["metadata"]
        if pre.uid is not None and pre.uid != m.get("uid"):
            raise StorageError(Code.CONFLICT, f"Precondition failed: UID in precondition: "
                               f"{pre.uid}, UID in object meta: {m.get('uid')}")
        if pre.resource_version is not None and pre.resource_version != m["resourceVersion"]:
            raise StorageError(Code.CONFLICT, "Precondition failed: ResourceVersion in "
                               f"precondition: {pre.resource_version}, ResourceVersion in "
                               f"object meta: {m['resourceVersion']}")

    async def guaranteed_update(self, key: str, update: si.UpdateFunc, *,
                                ignore_not_found: bool = False,
                                preconditions: si.Preconditions | None = None,
                                cached_existing: dict[str, Any] | None = None,
                                ttl: int = 0) -> dict[str, Any]:
        if ttl:
            self.ttls[key] = ttl
        while True:
            cur = self._out(key) if key in self.data else None
            if cur is None and not ignore_not_found:
                raise StorageError(Code.KEY_NOT_FOUND, f"not found: {key}", key=key)
            if cur is not None:
                self._check(cur, preconditions)
            start = self.data.get(key)
            new = await update(copy.deepcopy(cur) if cur is not None else None)
            if self.data.get(key) != start:
                continue  # lost a race on this key (as etcd's mod_revision compare): retry
            if cur is not None:
                a = copy.deepcopy(new)
                b = copy.deepcopy(cur)
                a["metadata"].pop("resourceVersion", None)
                b["metadata"].pop("resourceVersion", None)
                if a == b:
                    return cur
            return self._put(key, new)

    async def delete(self, key: str, *, preconditions: si.Preconditions | None = None,
                     validate_deletion: si.ValidateDeletion | None = None,
                     cached_existing: dict[str, Any] | None = None) -> dict[str, Any]:
        if key not in self.data:
            raise StorageError(Code.KEY_NOT_FOUND, f"not found: {key}", key=key)
        if key in self.corrupt:
            self.corrupt.discard(key)
            del self.data[key]
            self.rev += 1
            return {"metadata": {}}
        cur = self._out(key)
        self._check(cur, preconditions)
        if validate_deletion is not None:
            await validate_deletion(cur)
        del self.data[key]
        self.rev += 1
        self._notify(key, cur, None)
        cur["metadata"]["resourceVersion"] = str(self.rev)
        return cur

    async def watch(self, key: str, opts: si.ListOptions) -> _Watcher:
        prefix = key if key.endswith("/") or not opts.recursive else key + "/"
        w = _Watcher(self, prefix, opts.predicate, exact=not opts.recursive)
        if opts.resource_version in ("", "0"):
            for k in sorted(self.data):
                if (k == key if w.exact else k.startswith(prefix)) and k not in self.corrupt:
                    o = self._out(k)
                    if opts.predicate.matches(o):
                        w.q.put_nowait(si.WatchEvent(type="ADDED", object=o))
        elif int(opts.resource_version) < self.rev - 1000:
            w.q.put_nowait(si.WatchEvent(type="ERROR", object={}, error=StorageError(
                Code.RESOURCE_EXPIRED, f"too old resource version: {opts.resource_version} "
                f"({self.rev})")))
        self.watchers.append(w)
        return w

    async def current_revision(self) -> int:
        return self.rev

    async def compact(self, revision: int) -> None:
        return None

    async def compacted_revision(self) -> int:
        return 0

    async def count(self, key: str) -> int:
        prefix = key if key.endswith("/") else key + "/"
        return sum(1 for k in self.data if k.startswith(prefix))

    async def close(self) -> None:
        for w in list(self.watchers):
            w.stop()

"""A small in-memory MVCC fake of the backend ``Interface`` for the cacher's unit tests (the
real backends run the same tests in test_conformance.py). It keeps the whole history, so it
can read at any uncompacted revision, and it can drop watches and answer progress requests
on demand."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from storage import continuetoken
from storage.errors import Code, StorageError
from storage.interface import (
    GetOptions,
    ListOptions,
    ListResult,
    Object,
    Preconditions,
    UpdateFunc,
    ValidateDeletion,
    WatchEvent,
)


def _with_rv(obj: Object, rv: int) -> Object:
    out = copy.deepcopy(obj)
    out.setdefault("metadata", {})["resourceVersion"] = str(rv)
    return out


class FakeWatch:
    def __init__(self, store: FakeStore, prefix: str, bookmarks: bool) -> None:
        self.store = store
        self.prefix = prefix
        self.bookmarks = bookmarks
        self.queue: asyncio.Queue[WatchEvent | None] = asyncio.Queue()
        self.stopped = False
        self.start = store.rev  # set by FakeStore.watch; events at or below it are not sent

    def stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            self.queue.put_nowait(None)
            self.store.watches.discard(self)

    def __aiter__(self) -> FakeWatch:
        return self

    async def __anext__(self) -> WatchEvent:
        ev = await self.queue.get()
        if ev is None:
            raise StopAsyncIteration
        return ev


class ProgressWatch(FakeWatch):
    async def request_progress(self) -> None:
        self.store.progress_requests += 1
        if self.store.held is not None:
            return
        self.queue.put_nowait(
            WatchEvent(type="BOOKMARK", object={"metadata": {"resourceVersion": str(self.store.rev)}})
        )


class FakeStore:
    def __init__(self, *, progress: bool = True) -> None:
        self.rev = 1
        self.compacted = 0
        self.progress = progress
        self.progress_requests = 0
        # (rev, type, key, obj-with-rv or None for delete)
        self.history: list[tuple[int, str, str, Object]] = []
        self.data: dict[str, Object] = {}
        self.watches: set[FakeWatch] = set()
        self.list_calls = 0
        self.get_calls = 0
        self.revision_calls = 0
        self.fail_lists = 0
        # while a list: watch events (and progress answers) wait here, as from a slow store
        self.held: list[tuple[int, str, str, Object]] | None = None

    # -- helpers --
    def _emit(self, type_: str, key: str, obj: Object) -> None:
        self.history.append((self.rev, type_, key, obj))
        if self.held is not None:
            self.held.append((self.rev, type_, key, obj))
            return
        self._deliver(self.rev, type_, key, obj)

    def hold(self) -> None:
        """Stop delivering to watches (a store whose watch stream lags)."""
        self.held = []

    def release(self) -> None:
        held, self.held = self.held or [], None
        for rev, type_, key, obj in held:
            self._deliver(rev, type_, key, obj)

    def _deliver(self, rev: int, type_: str, key: str, obj: Object) -> None:
        for w in list(self.watches):
            if key.startswith(w.prefix) and rev > w.start:
                w.queue.put_nowait(WatchEvent(type=type_, object=obj))  # type: ignore[arg-type]

    def bump_other(self) -> None:
        """A write elsewhere in the store (another resource): the revision moves on."""
        self.rev += 1

    def drop_watches(self) -> None:
        for w in list(self.watches):
            w.stop()

    def expire_watches(self) -> None:
        for w in list(self.watches):
            w.queue.put_nowait(
                WatchEvent(type="ERROR", object={}, error=StorageError(Code.RESOURCE_EXPIRED, "too old"))
            )
            w.stop()

    def fail_watches(self) -> None:
        """The store answers an error other than 410 (e.g. unreachable) and ends the watch."""
        for w in list(self.watches):
            w.queue.put_nowait(
                WatchEvent(type="ERROR", object={}, error=StorageError(Code.UNREACHABLE, "down"))
            )
            w.stop()

    def state_at(self, rev: int) -> dict[str, Object]:
        out: dict[str, Object] = {}
        for r, t, k, o in self.history:
            if r > rev:
                break
            if t == "DELETED":
                out.pop(k, None)
            else:
                out[k] = o
        return out

    # -- Interface --
    async def create(self, key: str, obj: Object, *, ttl: int = 0) -> Object:
        if key in self.data:
            raise StorageError(Code.KEY_EXISTS, f"key exists: {key}", key=key)
        self.rev += 1
        stored = _with_rv(obj, self.rev)
        self.data[key] = stored
        self._emit("ADDED", key, stored)
        return stored

    async def get(self, key: str, opts: GetOptions) -> Object | None:
        self.get_calls += 1
        obj = self.data.get(key)
        if obj is None and not opts.ignore_not_found:
            raise StorageError(Code.KEY_NOT_FOUND, f"key not found: {key}", key=key)
        return obj

    async def get_list(self, key: str, opts: ListOptions) -> ListResult:
        self.list_calls += 1
        if self.fail_lists:
            self.fail_lists -= 1
            raise StorageError(Code.UNREACHABLE, "store down")
        prefix = key if key.endswith("/") else key + "/"
        rev = self.rev
        start = prefix
        if opts.continue_token:
            start, rev = continuetoken.decode_continue(opts.continue_token, prefix)
        elif opts.resource_version not in ("", "0"):
            rev = int(opts.resource_version)
        if rev <= self.compacted and rev != self.rev:
            raise StorageError(Code.RESOURCE_EXPIRED, "compacted")
        state = self.state_at(rev)
        keys = sorted(k for k in state if k.startswith(prefix) and k >= start)
        items: list[Object] = []
        more = False
        last = ""
        for k in keys:
            if opts.limit and len(items) >= opts.limit:
                more = True
                break
            if opts.predicate.matches(state[k]):
                items.append(state[k])
                last = k
        token, remaining = continuetoken.next_page(
            last, prefix, rev, more=more, remaining=(len(keys) - len(items)) if opts.predicate.everything else None
        )
        return ListResult(items=items, resource_version=rev, continue_token=token, remaining_item_count=remaining)

    async def guaranteed_update(
        self,
        key: str,
        update: UpdateFunc,
        *,
        ignore_not_found: bool = False,
        preconditions: Preconditions | None = None,
        cached_existing: Object | None = None,
        ttl: int = 0,
    ) -> Object:
        cur = self.data.get(key)
        if cur is None and not ignore_not_found:
            raise StorageError(Code.KEY_NOT_FOUND, f"key not found: {key}", key=key)
        new = await update(copy.deepcopy(cur) if cur is not None else None)
        self.rev += 1
        stored = _with_rv(new, self.rev)
        self.data[key] = stored
        self._emit("MODIFIED" if cur is not None else "ADDED", key, stored)
        return stored

    async def delete(
        self,
        key: str,
        *,
        preconditions: Preconditions | None = None,
        validate_deletion: ValidateDeletion | None = None,
        cached_existing: Object | None = None,
    ) -> Object:
        cur = self.data.pop(key, None)
        if cur is None:
            raise StorageError(Code.KEY_NOT_FOUND, f"key not found: {key}", key=key)
        self.rev += 1
        last = _with_rv(cur, self.rev)
        self._emit("DELETED", key, last)
        return last

    async def watch(self, key: str, opts: ListOptions) -> Any:
        prefix = key if key.endswith("/") else key + "/"
        start = int(opts.resource_version or self.rev)
        cls = ProgressWatch if self.progress else FakeWatch
        w = cls(self, prefix, opts.allow_watch_bookmarks)
        w.start = start
        if start < self.compacted:
            w.queue.put_nowait(
                WatchEvent(type="ERROR", object={}, error=StorageError(Code.RESOURCE_EXPIRED, "too old"))
            )
            w.queue.put_nowait(None)
            return w
        for r, t, k, o in self.history:
            if r > start and k.startswith(prefix):
                w.queue.put_nowait(WatchEvent(type=t, object=o))  # type: ignore[arg-type]
        self.watches.add(w)
        return w

    async def current_revision(self) -> int:
        self.revision_calls += 1
        rev = self.rev  # read when the request starts, answered a moment later
        await asyncio.sleep(0.001)
        return rev

    async def compact(self, revision: int) -> None:
        self.compacted = max(self.compacted, revision)

    async def compacted_revision(self) -> int:
        return self.compacted

    async def count(self, key: str) -> int:
        prefix = key if key.endswith("/") else key + "/"
        return sum(1 for k in self.data if k.startswith(prefix))

    async def close(self) -> None:
        self.drop_watches()

"""``Etcd3Store``: ``storage.interface.Interface`` over a ``KVClient`` (upstream
``k8s.io/apiserver/pkg/storage/etcd3/store.go``).

Invariants:

* Every write is one etcd transaction comparing the key's mod_revision: create compares it
  with 0, update and delete with the revision the caller's view of the object was read at.
  A lost race is re-read from the failure branch of the same transaction and retried.
* Stored values are JSON (orjson) without ``metadata.resourceVersion``; every object returned
  has it set to the key's mod_revision (for a deleted object: the deletion's revision).
* A list either reads the latest revision (a linearizable range) or one exact revision; all
  pages of a paged list, and all fetches behind one page, read the revision of the first.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import orjson

from raftstore.api.pb import rpc_pb2 as pb
from storage.errors import Code, StorageError
from storage.etcd3.common import (
    TOO_LARGE_WAIT,
    check_preconditions,
    decode,
    encode,
    metadata,
    parse_rv,
    prefix_end,
    resource_label,
    storage_error,
    too_large,
)
from storage.etcd3.kvclient import COMPACTED, FUTURE, KVError
from storage.etcd3.leases import LeaseManager
from storage.etcd3.lister import get_list
from storage.etcd3.watcher import start_watch
from storage.metrics import ETCD_REQUEST_DURATION

if TYPE_CHECKING:
    from storage.etcd3.kvclient import KVClient, RangeReply
    from storage.interface import (
        GetOptions,
        ListOptions,
        ListResult,
        Object,
        Preconditions,
        UpdateFunc,
        ValidateDeletion,
        Watcher,
    )

_Cmp = pb.Compare
_PROBE_KEY: Final = b"\x00plat-revision-probe"


def same_content(data: bytes, stored: bytes | None) -> bool:
    """Whether an update changes nothing. Bytes first (the common case); then as JSON values,
    because a dict built in another key order encodes differently but is the same object
    (upstream compares canonical encodings)."""
    if stored is None:
        return False
    if data == stored:
        return True
    if len(data) != len(stored):
        return False  # same keys and values always encode to the same length
    return bool(orjson.loads(data) == orjson.loads(stored))


@dataclass(slots=True)
class _State:
    """An object as read: ``rev`` 0 and ``obj`` None when absent; ``data`` the stored bytes."""

    obj: Object | None
    rev: int
    data: bytes | None


class Etcd3Store:
    """Implements ``storage.interface.Interface``. Owns ``client`` (closes it)."""

    def __init__(
        self,
        client: KVClient,
        *,
        too_large_wait: float = TOO_LARGE_WAIT,
        bookmark_interval: float = 5.0,
    ) -> None:
        self.client = client
        self.too_large_wait = too_large_wait
        self.bookmark_interval = bookmark_interval
        self._closed = False
        self._watchers: set[Watcher] = set()
        self._closers: list[Callable[[], Awaitable[None]]] = []
        self._leases = LeaseManager(client.lease_grant)

    async def _put(self, key: str, k: bytes, data: bytes, ttl: int) -> pb.PutRequest:
        """The Put of a write; with ``ttl``, under a (shared) lease of at least that long."""
        if not ttl:
            return pb.PutRequest(key=k, value=data)
        try:
            lease = await self._leases.lease_for(ttl)
        except KVError as exc:
            raise storage_error(exc, key) from None
        return pb.PutRequest(key=k, value=data, lease=lease)

    # -- plumbing ---------------------------------------------------------------------

    async def _range(self, op: str, key: str, req: pb.RangeRequest) -> RangeReply:
        start = time.perf_counter()
        try:
            return await self.client.range(req)
        finally:
            ETCD_REQUEST_DURATION.labels(op, resource_label(key)).observe(
                time.perf_counter() - start
            )

    async def _txn(self, op: str, key: str, req: pb.TxnRequest) -> pb.TxnResponse:
        start = time.perf_counter()
        try:
            return await self.client.txn(req)
        except KVError as exc:
            raise storage_error(exc, key) from None
        finally:
            ETCD_REQUEST_DURATION.labels(op, resource_label(key)).observe(
                time.perf_counter() - start
            )

    async def current_revision(self) -> int:
        try:
            resp = await self.client.range(pb.RangeRequest(key=_PROBE_KEY, count_only=True))
        except KVError as exc:
            raise storage_error(exc) from None
        return int(resp.header.revision)

    async def wait_for_revision(self, rv: int) -> int:
        """Return the current revision once it is >= ``rv``; after ``too_large_wait`` seconds
        raise TOO_LARGE_RESOURCE_VERSION (upstream's 504 "Too large resource version")."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.too_large_wait
        delay = 0.02
        while True:
            cur = await self.current_revision()
            if cur >= rv:
                return cur
            if loop.time() + delay > deadline:
                raise too_large(rv, cur)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)

    async def _get_state(self, key: str, ignore_not_found: bool) -> _State:
        try:
            resp = await self._range("get", key, pb.RangeRequest(key=key.encode()))
        except KVError as exc:
            raise storage_error(exc, key) from None
        return self._state(resp.kvs, key, ignore_not_found)

    @staticmethod
    def _state(kvs: Sequence[Any], key: str, ignore_not_found: bool) -> _State:
        if not kvs:
            if not ignore_not_found:
                raise StorageError(Code.KEY_NOT_FOUND, f"key not found: {key}", key=key)
            return _State(None, 0, None)
        kv = kvs[0]
        return _State(decode(kv.value, kv.mod_revision, key), int(kv.mod_revision), kv.value)

    @staticmethod
    def _state_from_object(obj: Object) -> _State:
        rv = parse_rv(str(metadata(obj).get("resourceVersion", "") or "")) or 0
        return _State(obj, rv, encode(obj))

    # -- Interface ----------------------------------------------------------------------

    async def create(self, key: str, obj: Object, *, ttl: int = 0) -> Object:
        rv = str(metadata(obj).get("resourceVersion", "") or "")
        if rv not in ("", "0"):
            raise StorageError(
                Code.INVALID, "resourceVersion should not be set on objects to be created",
                key=key,
            )
        data = encode(obj)
        k = key.encode()
        req = pb.TxnRequest(
            compare=[_Cmp(key=k, target=_Cmp.MOD, result=_Cmp.EQUAL, mod_revision=0)],
            success=[pb.RequestOp(request_put=await self._put(key, k, data, ttl))],
        )
        resp = await self._txn("create", key, req)
        if not resp.succeeded:
            raise StorageError(Code.KEY_EXISTS, f"key exists: {key}", key=key)
        return decode(data, int(resp.header.revision), key)

    async def get(self, key: str, opts: GetOptions) -> Object | None:
        min_rv = parse_rv(opts.resource_version)
        try:
            resp = await self._range("get", key, pb.RangeRequest(key=key.encode()))
            if min_rv and min_rv > resp.header.revision:
                await self.wait_for_revision(min_rv)
                resp = await self._range("get", key, pb.RangeRequest(key=key.encode()))
        except KVError as exc:
            raise storage_error(exc, key) from None
        if not resp.kvs:
            if opts.ignore_not_found:
                return None
            raise StorageError(Code.KEY_NOT_FOUND, f"key not found: {key}", key=key)
        kv = resp.kvs[0]
        return decode(kv.value, kv.mod_revision, key)

    async def get_list(self, key: str, opts: ListOptions) -> ListResult:
        return await get_list(self, key, opts)

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
        if cached_existing is not None:
            st = self._state_from_object(cached_existing)
            is_current = False
        else:
            st = await self._get_state(key, ignore_not_found)
            is_current = True
        k = key.encode()
        while True:
            try:
                check_preconditions(preconditions, key, st.obj)
            except StorageError:
                if is_current:
                    raise
                st, is_current = await self._get_state(key, ignore_not_found), True
                continue
            try:
                new = await update(st.obj)
            except Exception:
                if is_current:
                    raise
                # Maybe we worked on stale data: re-read; the same revision means it was not.
                cached_rev = st.rev
                st, is_current = await self._get_state(key, ignore_not_found), True
                if st.rev == cached_rev:
                    raise
                continue
            data = encode(new)
            if same_content(data, st.data):
                if not is_current:
                    st, is_current = await self._get_state(key, ignore_not_found), True
                    if not same_content(data, st.data):
                        continue
                assert st.obj is not None
                return st.obj  # no-op: nothing written, same resourceVersion
            req = pb.TxnRequest(
                compare=[_Cmp(key=k, target=_Cmp.MOD, result=_Cmp.EQUAL, mod_revision=st.rev)],
                success=[pb.RequestOp(request_put=await self._put(key, k, data, ttl))],
                failure=[pb.RequestOp(request_range=pb.RangeRequest(key=k))],
            )
            resp = await self._txn("update", key, req)
            if not resp.succeeded:
                kvs = resp.responses[0].response_range.kvs
                st, is_current = self._state(kvs, key, ignore_not_found), True
                continue
            return decode(data, int(resp.header.revision), key)

    async def delete(
        self,
        key: str,
        *,
        preconditions: Preconditions | None = None,
        validate_deletion: ValidateDeletion | None = None,
        cached_existing: Object | None = None,
    ) -> Object:
        if cached_existing is not None:
            st = self._state_from_object(cached_existing)
            is_current = False
        else:
            st = await self._get_state(key, False)
            is_current = True
        k = key.encode()
        while True:
            try:
                check_preconditions(preconditions, key, st.obj)
                if validate_deletion is not None:
                    assert st.obj is not None
                    await validate_deletion(st.obj)
            except Exception:
                if is_current:
                    raise
                cached_rev = st.rev
                st, is_current = await self._get_state(key, False), True
                if st.rev == cached_rev:
                    raise
                continue
            req = pb.TxnRequest(
                compare=[_Cmp(key=k, target=_Cmp.MOD, result=_Cmp.EQUAL, mod_revision=st.rev)],
                success=[pb.RequestOp(request_delete_range=pb.DeleteRangeRequest(key=k))],
                failure=[pb.RequestOp(request_range=pb.RangeRequest(key=k))],
            )
            resp = await self._txn("delete", key, req)
            if not resp.succeeded:
                kvs = resp.responses[0].response_range.kvs
                st, is_current = self._state(kvs, key, False), True
                continue
            assert st.data is not None
            return decode(st.data, int(resp.header.revision), key)

    async def watch(self, key: str, opts: ListOptions) -> Watcher:
        return await start_watch(self, key, opts)

    async def compact(self, revision: int) -> None:
        try:
            await self.client.compact(revision)
        except KVError as exc:
            if exc.kind == COMPACTED:
                return
            if exc.kind == FUTURE:
                raise StorageError(
                    Code.INVALID, f"cannot compact to {revision}: {exc.message}"
                ) from None
            raise storage_error(exc) from None

    async def compacted_revision(self) -> int:
        try:
            return await self.client.compacted_revision()
        except KVError as exc:
            raise storage_error(exc) from None

    async def count(self, key: str) -> int:
        prefix = key if key.endswith("/") else key + "/"
        p = prefix.encode()
        try:
            resp = await self._range(
                "listWithCount", key,
                pb.RangeRequest(key=p, range_end=prefix_end(p), count_only=True),
            )
        except KVError as exc:
            raise storage_error(exc, key) from None
        return int(resp.count)

    def track(self, w: Watcher) -> None:
        self._watchers.add(w)

    def untrack(self, w: Watcher) -> None:
        self._watchers.discard(w)

    def add_closer(self, fn: Callable[[], Awaitable[None]]) -> None:
        """Run ``fn`` on close, before the client closes (e.g. the compactor's stop)."""
        self._closers.append(fn)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for fn in self._closers:
            await fn()
        for w in list(self._watchers):
            w.stop()
        await self.client.close()

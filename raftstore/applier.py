"""The replicated state machine of a raftstore member: etcd's ``apply.go`` over our MVCC store.

Commands are msgpack maps (the *envelope*), never pickle::

    {"v": 1, "op": "put",             "req": <PutRequest bytes>}
    {"v": 1, "op": "delete_range",    "req": <DeleteRangeRequest bytes>}
    {"v": 1, "op": "txn",             "req": <TxnRequest bytes>}
    {"v": 1, "op": "compact",         "req": <CompactionRequest bytes>}
    {"v": 1, "op": "lease_grant",     "req": <LeaseGrantRequest bytes>}   (ID already chosen)
    {"v": 1, "op": "lease_revoke",    "req": <LeaseRevokeRequest bytes>}
    {"v": 1, "op": "lease_keepalive", "req": <LeaseKeepAliveRequest bytes>}
    {"v": 1, "op": "publish", "member_id": int, "name": str, "client_urls": [str, ...]}

``req`` is the etcd request protobuf exactly as the client sent it (after validation), so the
log holds etcd's own encoding and a future op needs no new schema. ``apply`` returns etcd's
response message with ``header.revision`` set (the API layer adds cluster_id, member_id and
raft_term), ``None`` for ``publish``, or an ``EtcdError`` *value*: it never raises, because
every member must reach the same state from the same log, including on bad commands.

Threading: ``lock`` (re-entrant) serialises every access to the store: replication's apply
thread, snapshots, and the API's local reads and watch registrations. Watch callbacks run in
the applying thread with the lock held.
"""

from __future__ import annotations

import io
import logging
import struct
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, BinaryIO, Final, Protocol, TypeVar

import msgpack

from raftstore import metrics
from raftstore.api.convert import kv_to_pb, range_end
from raftstore.api.pb import rpc_pb2 as pb
from raftstore.errors import BAD_COMMAND, KEY_NOT_FOUND, ErrorSpec, EtcdError, to_etcd_error
from raftstore.mvcc.types import (
    CompactedError,
    Event,
    FutureRevError,
    KeyValue,
    LeaseNotFoundError,
    RangeOptions,
)

if TYPE_CHECKING:
    from raftstore.mvcc.kvstore import KVStore
    from raftstore.mvcc.kvstore_txn import StoreTxnWrite

log = logging.getLogger(__name__)

ENVELOPE_VERSION: Final = 1
SNAPSHOT_VERSION: Final = 2

OP_PUT: Final = "put"
OP_DELETE_RANGE: Final = "delete_range"
OP_TXN: Final = "txn"
OP_COMPACT: Final = "compact"
OP_LEASE_GRANT: Final = "lease_grant"
OP_LEASE_REVOKE: Final = "lease_revoke"
OP_LEASE_KEEPALIVE: Final = "lease_keepalive"
OP_PUBLISH: Final = "publish"

T = TypeVar("T")

_Range = pb.RangeRequest
_Cmp = pb.Compare


# -- command encoding (the proposer's side) ---------------------------------------------


class _Message(Protocol):
    def SerializeToString(self) -> bytes: ...  # noqa: N802 - protobuf's name


def _envelope(op: str, req: _Message | None = None, **fields: Any) -> bytes:
    env: dict[str, Any] = {"v": ENVELOPE_VERSION, "op": op}
    if req is not None:
        env["req"] = req.SerializeToString()
    env.update(fields)
    data: bytes = msgpack.packb(env, use_bin_type=True)
    return data


def encode_put(req: pb.PutRequest) -> bytes:
    return _envelope(OP_PUT, req)


def encode_delete_range(req: pb.DeleteRangeRequest) -> bytes:
    return _envelope(OP_DELETE_RANGE, req)


def encode_txn(req: pb.TxnRequest) -> bytes:
    return _envelope(OP_TXN, req)


def encode_compact(req: pb.CompactionRequest) -> bytes:
    return _envelope(OP_COMPACT, req)


def encode_lease_grant(req: pb.LeaseGrantRequest) -> bytes:
    """``req.ID`` must be non-zero: the proposer picks the id so that every member agrees."""
    if req.ID == 0:
        raise ValueError("lease id must be chosen before proposing")
    return _envelope(OP_LEASE_GRANT, req)


def encode_lease_revoke(req: pb.LeaseRevokeRequest) -> bytes:
    return _envelope(OP_LEASE_REVOKE, req)


def encode_lease_keepalive(req: pb.LeaseKeepAliveRequest) -> bytes:
    return _envelope(OP_LEASE_KEEPALIVE, req)


def encode_publish(member_id: int, name: str, client_urls: list[str]) -> bytes:
    """Member attributes, replicated as etcd publishes them (shown by MemberList)."""
    return _envelope(OP_PUBLISH, member_id=member_id, name=name, client_urls=list(client_urls))


# -- etcd's range / compare semantics over a store view ---------------------------------


_SORT_KEYS: Final[dict[int, Callable[[KeyValue], Any]]] = {
    _Range.KEY: lambda kv: kv.key,
    _Range.VERSION: lambda kv: kv.version,
    _Range.CREATE: lambda kv: kv.create_revision,
    _Range.MOD: lambda kv: kv.mod_revision,
    _Range.VALUE: lambda kv: kv.value,
}


def range_view(view: Any, req: pb.RangeRequest) -> pb.RangeResponse:
    """etcd's ``applierV3backend.Range``. Raises CompactedError / FutureRevError."""
    limit = req.limit
    filtered = bool(
        req.min_mod_revision or req.max_mod_revision
        or req.min_create_revision or req.max_create_revision
    )
    # Sorting or filtering needs every key first; the limit applies afterwards.
    if req.sort_order != _Range.NONE or filtered:
        limit = 0
    if limit > 0:
        limit += 1  # one extra key tells whether there are more
    rr = view.range(
        req.key, range_end(req.range_end),
        RangeOptions(limit=max(limit, 0), rev=max(req.revision, 0), count_only=req.count_only),
    )
    kvs: list[KeyValue] = rr.kvs
    if filtered:
        kvs = [
            kv for kv in kvs
            if not (req.max_mod_revision and kv.mod_revision > req.max_mod_revision)
            and not (req.min_mod_revision and kv.mod_revision < req.min_mod_revision)
            and not (req.max_create_revision and kv.create_revision > req.max_create_revision)
            and not (req.min_create_revision and kv.create_revision < req.min_create_revision)
        ]
    order = req.sort_order
    if req.sort_target != _Range.KEY and order == _Range.NONE:
        order = _Range.ASCEND  # etcd: a sort target without an order means ascending
    sort_key = _SORT_KEYS.get(req.sort_target)
    if sort_key is not None and order in (_Range.ASCEND, _Range.DESCEND):
        if not (order == _Range.ASCEND and req.sort_target == _Range.KEY):
            kvs = sorted(kvs, key=sort_key, reverse=order == _Range.DESCEND)
    resp = pb.RangeResponse(count=rr.count)
    if req.limit > 0 and len(kvs) > req.limit:
        kvs = kvs[: req.limit]
        resp.more = True
    resp.header.revision = rr.rev
    resp.kvs.extend(kv_to_pb(kv, keys_only=req.keys_only) for kv in kvs)
    return resp


def _compare_kv(c: pb.Compare, kv: KeyValue | None) -> bool:
    """etcd's ``compareKV``; a missing key compares as the zero KeyValue."""
    which = c.WhichOneof("target_union")
    t = c.target
    result: int
    if t == _Cmp.VALUE:
        want_b = c.value if which == "value" else b""
        have_b = kv.value if kv else b""
        result = (have_b > want_b) - (have_b < want_b)
    else:
        if t == _Cmp.CREATE:
            want = c.create_revision if which == "create_revision" else 0
            have = kv.create_revision if kv else 0
        elif t == _Cmp.MOD:
            want = c.mod_revision if which == "mod_revision" else 0
            have = kv.mod_revision if kv else 0
        elif t == _Cmp.VERSION:
            want = c.version if which == "version" else 0
            have = kv.version if kv else 0
        elif t == _Cmp.LEASE:
            want = c.lease if which == "lease" else 0
            have = kv.lease if kv else 0
        else:
            return True
        result = (have > want) - (have < want)
    r = c.result
    if r == _Cmp.EQUAL:
        return result == 0
    if r == _Cmp.NOT_EQUAL:
        return result != 0
    if r == _Cmp.GREATER:
        return result > 0
    if r == _Cmp.LESS:
        return result < 0
    return True


def _compare(view: Any, c: pb.Compare) -> bool:
    """etcd's ``applyCompare``: every key of [key, range_end) must satisfy the compare; an
    empty range compares the zero KeyValue, except VALUE which then always fails."""
    try:
        rr = view.range(c.key, range_end(c.range_end), RangeOptions())
    except Exception:  # noqa: BLE001 - etcd: a failed read fails the compare
        return False
    if not rr.kvs:
        if c.target == _Cmp.VALUE:
            return False
        return _compare_kv(c, None)
    return all(_compare_kv(c, kv) for kv in rr.kvs)


def _compare_path(view: Any, req: pb.TxnRequest, path: list[bool]) -> None:
    """etcd's ``compareToPath``: decide every branch (nested txns included) against the state
    before the transaction writes anything, depth first."""
    ok = all(_compare(view, c) for c in req.compare)
    path.append(ok)
    for op in req.success if ok else req.failure:
        if op.WhichOneof("request") == "request_txn":
            _compare_path(view, op.request_txn, path)


def _check_ranges(req: pb.TxnRequest, path: Iterator[bool], rev: int, compact_rev: int) -> None:
    """etcd's ``checkRequests(checkRequestRange)``: before anything is applied, every range on
    the branches taken that names a revision must name one between the compacted revision
    and the store's revision as the transaction began. Unlike a lone Range (where a
    negative revision reads the current one), a negative revision below the compacted one
    (-1 while nothing was compacted) is compacted, and a revision the transaction's own
    writes would create is a future one."""
    for op in req.success if next(path) else req.failure:
        kind = op.WhichOneof("request")
        if kind == "request_range":
            want = op.request_range.revision
            if want > rev:
                raise FutureRevError()
            if want and want < compact_rev:
                raise CompactedError(compact_rev)
        elif kind == "request_txn":
            _check_ranges(op.request_txn, path, rev, compact_rev)


def is_txn_readonly(req: pb.TxnRequest) -> bool:
    for op in (*req.success, *req.failure):
        kind = op.WhichOneof("request")
        if kind in ("request_put", "request_delete_range"):
            return False
        if kind == "request_txn" and not is_txn_readonly(op.request_txn):
            return False
    return True


def is_txn_serializable(req: pb.TxnRequest) -> bool:
    for op in (*req.success, *req.failure):
        kind = op.WhichOneof("request")
        if kind == "request_range" and not op.request_range.serializable:
            return False
        if kind == "request_txn" and not is_txn_serializable(op.request_txn):
            return False
    return True


# -- the state machine -------------------------------------------------------------------


class EtcdStateMachine:
    """Implements ``raftstore.statemachine.StateMachine`` over a ``KVStore``."""

    def __init__(self, store: KVStore, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.lock = threading.RLock()
        self._clock = clock
        # member id -> (name, client URLs), from "publish" commands.
        self._members: dict[int, tuple[str, list[str]]] = {}
        self._ops: dict[str, Callable[[dict[str, Any]], object]] = {
            OP_PUT: self._apply_put,
            OP_DELETE_RANGE: self._apply_delete_range,
            OP_TXN: self._apply_txn,
            OP_COMPACT: self._apply_compact,
            OP_LEASE_GRANT: self._apply_lease_grant,
            OP_LEASE_REVOKE: self._apply_lease_revoke,
            OP_LEASE_KEEPALIVE: self._apply_lease_keepalive,
            OP_PUBLISH: self._apply_publish,
        }

    # StateMachine ------------------------------------------------------------------------

    def apply(self, command: bytes) -> object:
        try:
            env = msgpack.unpackb(command, raw=False)
            handler = self._ops[env["op"]]
        except Exception:  # noqa: BLE001 - a command we cannot read changes nothing
            log.error("cannot decode command (%d bytes)", len(command))
            return EtcdError(BAD_COMMAND)
        with self.lock:
            try:
                result = handler(env)
            except Exception as exc:  # noqa: BLE001 - never raise into replication
                err = to_etcd_error(exc)
                if err is None:
                    log.exception("apply %s failed", env.get("op"))
                    err = EtcdError(ErrorSpec(BAD_COMMAND.code, f"raftstore: {exc}"))
                result = err
            # The revision gauges are refreshed when /metrics is scraped (server.py), not here:
            # two locked gauge writes per command on every member cost more than they tell.
            return result

    def capture(self, mark: object = None) -> tuple[Callable[[BinaryIO], int], bool, object]:
        """Capture the state now (cheap: a copy-on-write view of the store, taken under the
        lock) and return a function that writes it later, from any thread, in chunks that let
        the raft thread keep running; whether that is a delta; and the mark of this capture.
        Given the mark of an earlier capture, the writer writes only what changed since it
        (``SnapshotView.write_delta``) when it can: when the store has not been compacted
        since. The writer returns how many of the bytes it wrote repeat what earlier frames
        hold (a delta's head and lease table; 0 for the whole state). Format: u32 length,
        msgpack head {v, members}, then the store's own snapshot (or delta) bytes."""
        with self.lock:
            view = self.store.snapshot_view()
            head: bytes = msgpack.packb(
                {
                    "v": SNAPSHOT_VERSION,
                    "members": [
                        [mid, name, urls] for mid, (name, urls) in sorted(self._members.items())
                    ],
                },
                use_bin_type=True,
            )
        base = None
        if (isinstance(mark, tuple) and mark[1] == view.compact_rev
                and view.can_follow(mark[0])):
            base = int(mark[0])

        def write(f: BinaryIO) -> int:
            f.write(struct.pack(">I", len(head)))
            f.write(head)
            if base is None:
                view.write(f)
                return 0
            return 4 + len(head) + view.write_delta(f, base)

        return write, base is not None, (view.rev, view.compact_rev)

    def mark(self) -> object:
        """The mark ``capture`` would give now (after a ``restore``: of the state restored)."""
        with self.lock:
            return (self.store.rev, self.store.compact_rev)

    def snapshot_writer(self) -> Callable[[BinaryIO], object]:
        """``capture``'s writer of the whole state."""
        return self.capture()[0]

    def snapshot(self) -> bytes:
        buf = io.BytesIO()
        self.snapshot_writer()(buf)
        return buf.getvalue()

    def restore(self, data: bytes, deltas: Sequence[bytes] = ()) -> None:
        """Replace the whole state with a ``snapshot``, followed by ``deltas`` written by
        ``capture`` (each over the state the ones before it give)."""
        frames = [_split_head(d) for d in (data, *deltas)]
        state = frames[-1][0]
        with self.lock:
            self.store.restore(frames[0][1], [body for _, body in frames[1:]])
            self._members = {
                int(mid): (str(name), [str(u) for u in urls])
                for mid, name, urls in state["members"]
            }
            metrics.REVISION.set(self.store.rev)
            metrics.COMPACT_REVISION.set(self.store.compact_rev)

    # Local reads (API layer) -----------------------------------------------------------

    def read(self, fn: Callable[[KVStore], T]) -> T:
        """Run ``fn(store)`` under the state lock (a consistent local view)."""
        with self.lock:
            return fn(self.store)

    @property
    def revision(self) -> int:
        with self.lock:
            return self.store.rev

    def range(self, req: pb.RangeRequest) -> pb.RangeResponse:
        """A Range served from local state. Raises CompactedError / FutureRevError."""
        with self.lock:
            return range_view(self.store, req)

    def txn_readonly(self, req: pb.TxnRequest) -> pb.TxnResponse:
        """A transaction without puts or deletes, served from local state (etcd serves these
        without going through raft). Raises MVCC errors."""
        with self.lock:
            txn = self.store.write()
            try:
                resp = self._txn(txn, req)
            finally:
                txn.abort()
            resp.header.revision = self.store.rev
            return resp

    def watch(
        self,
        key: bytes,
        end: bytes | None,
        start_rev: int,
        callback: Callable[[list[Event]], None],
        on_compacted: Callable[[int], None] | None = None,
    ) -> tuple[int, list[Event], int]:
        """Register a store watcher; returns (watcher id, history, current revision), all read
        atomically. ``on_compacted(compact_rev)`` is called (applying thread, lock held) if a
        snapshot restore skips events the watcher has not seen. Raises CompactedError."""
        with self.lock:
            wid, hist = self.store.watch(key, end, start_rev, callback, on_compacted)
            return wid, hist, self.store.rev

    def cancel_watch(self, watcher_id: int) -> None:
        with self.lock:
            self.store.cancel_watch(watcher_id)

    def now(self) -> float:
        """The lessor's clock (member-local monotonic seconds)."""
        return self._clock()

    def member_attributes(self) -> dict[int, tuple[str, list[str]]]:
        """Published {member_id: (name, client_urls)}."""
        with self.lock:
            return {mid: (name, list(urls)) for mid, (name, urls) in self._members.items()}

    # Ops -------------------------------------------------------------------------------

    def _apply_put(self, env: dict[str, Any]) -> object:
        req = pb.PutRequest.FromString(env["req"])
        txn = self.store.write()
        try:
            resp = self._put(txn, req)
        except BaseException:
            txn.abort()
            raise
        resp.header.revision = txn.end()
        return resp

    def _apply_delete_range(self, env: dict[str, Any]) -> object:
        req = pb.DeleteRangeRequest.FromString(env["req"])
        txn = self.store.write()
        resp = self._delete_range(txn, req)
        resp.header.revision = txn.end()
        return resp

    def _apply_txn(self, env: dict[str, Any]) -> object:
        req = pb.TxnRequest.FromString(env["req"])
        txn = self.store.write()
        try:
            resp = self._txn(txn, req)
        except BaseException:
            # All or nothing: a failing op (unknown lease, compacted range, ...) leaves the
            # store as it was, as etcd's pre-checks do.
            txn.abort()
            raise
        resp.header.revision = txn.end()
        return resp

    def _apply_compact(self, env: dict[str, Any]) -> object:
        req = pb.CompactionRequest.FromString(env["req"])
        self.store.compact(req.revision)
        resp = pb.CompactionResponse()
        resp.header.revision = self.store.rev
        return resp

    def _apply_lease_grant(self, env: dict[str, Any]) -> object:
        req = pb.LeaseGrantRequest.FromString(env["req"])
        ttl = self.store.lessor.grant(req.ID, req.TTL, self._clock())
        resp = pb.LeaseGrantResponse(ID=req.ID, TTL=ttl)
        resp.header.revision = self.store.rev
        return resp

    def _apply_lease_revoke(self, env: dict[str, Any]) -> object:
        req = pb.LeaseRevokeRequest.FromString(env["req"])
        resp = pb.LeaseRevokeResponse()
        resp.header.revision = self.store.lessor.revoke(req.ID)
        return resp

    def _apply_lease_keepalive(self, env: dict[str, Any]) -> object:
        req = pb.LeaseKeepAliveRequest.FromString(env["req"])
        ttl = self.store.lessor.keepalive(req.ID, self._clock())
        resp = pb.LeaseKeepAliveResponse(ID=req.ID, TTL=ttl)
        resp.header.revision = self.store.rev
        return resp

    def _apply_publish(self, env: dict[str, Any]) -> object:
        self._members[int(env["member_id"])] = (
            str(env["name"]), [str(u) for u in env["client_urls"]]
        )
        return None

    # Operations inside a write transaction ---------------------------------------------

    def _put(self, txn: StoreTxnWrite, req: pb.PutRequest) -> pb.PutResponse:
        value, lease = req.value, req.lease
        # etcd checks the lease before the ignore_* flags.
        if lease and lease not in self.store.lessor:
            raise LeaseNotFoundError()
        if req.ignore_value or req.ignore_lease:
            cur = txn.range(req.key, None, RangeOptions()).kvs
            if not cur:
                raise EtcdError(KEY_NOT_FOUND)
            if req.ignore_value:
                value = cur[0].value
            if req.ignore_lease:
                lease = cur[0].lease
        prev = txn.put(req.key, value, lease)
        resp = pb.PutResponse()
        if req.prev_kv and prev is not None:
            resp.prev_kv.CopyFrom(kv_to_pb(prev))
        return resp

    def _check_puts(self, txn: StoreTxnWrite, req: pb.TxnRequest, path: Iterator[bool]) -> None:
        """etcd's ``checkRequestPut`` on every put of the branches taken: a put that keeps
        the value or lease needs the key to exist, and a lease named must exist."""
        for op in req.success if next(path) else req.failure:
            kind = op.WhichOneof("request")
            if kind == "request_put":
                put = op.request_put
                if (put.ignore_value or put.ignore_lease) and not txn.range(
                        put.key, None, RangeOptions()).kvs:
                    raise EtcdError(KEY_NOT_FOUND)
                if put.lease and put.lease not in self.store.lessor:
                    raise LeaseNotFoundError()
            elif kind == "request_txn":
                self._check_puts(txn, op.request_txn, path)

    def _delete_range(
        self, txn: StoreTxnWrite, req: pb.DeleteRangeRequest
    ) -> pb.DeleteRangeResponse:
        deleted = txn.delete_range(req.key, range_end(req.range_end))
        resp = pb.DeleteRangeResponse(deleted=len(deleted))
        if req.prev_kv:
            resp.prev_kvs.extend(kv_to_pb(kv) for kv in deleted)
        return resp

    def _txn(self, txn: StoreTxnWrite, req: pb.TxnRequest) -> pb.TxnResponse:
        path: list[bool] = []
        _compare_path(txn, req, path)
        # etcd's checkRequests, over the branches taken, before anything is applied: puts
        # first, then ranges.
        self._check_puts(txn, req, iter(path))
        _check_ranges(req, iter(path), self.store.rev, self.store.compact_rev)
        resp = pb.TxnResponse()
        self._txn_ops(txn, req, iter(path), resp)
        return resp

    def _txn_ops(
        self, txn: StoreTxnWrite, req: pb.TxnRequest, path: Iterator[bool], resp: pb.TxnResponse
    ) -> None:
        """etcd's ``applyTxn``. Each inner response's header revision is what etcd's
        ``storeTxnWrite`` answers for that op: a range reads at the txn's view revision; a put
        answers ``begin_rev + 1``; a delete the view revision after it (``begin_rev`` while
        the txn has changed nothing, e.g. a DeleteRange of nothing first in the txn). A nested
        txn's header stays empty (etcd's ``newTxnResp`` leaves it zero; only the outermost
        response gets the revision and the member fields)."""
        ok = next(path)
        resp.succeeded = ok
        for op in req.success if ok else req.failure:
            out = resp.responses.add()
            kind = op.WhichOneof("request")
            if kind == "request_range":
                out.response_range.CopyFrom(range_view(txn, op.request_range))
            elif kind == "request_put":
                out.response_put.CopyFrom(self._put(txn, op.request_put))
                out.response_put.header.revision = txn.view_rev
            elif kind == "request_delete_range":
                out.response_delete_range.CopyFrom(
                    self._delete_range(txn, op.request_delete_range)
                )
                out.response_delete_range.header.revision = txn.view_rev
            elif kind == "request_txn":
                self._txn_ops(txn, op.request_txn, path, out.response_txn)
                out.response_txn.header.SetInParent()
            # An empty RequestOp gets an empty ResponseOp, as etcd.


def _split_head(data: bytes) -> tuple[dict[str, Any], bytes]:
    """A state machine snapshot's head and the store's bytes after it."""
    try:
        (n,) = struct.unpack_from(">I", data, 0)
        state = msgpack.unpackb(data[4 : 4 + n], raw=False)
    except (struct.error, ValueError, msgpack.ExtraData, msgpack.FormatError):
        raise ValueError("raftstore: unreadable state machine snapshot") from None
    if not isinstance(state, dict) or state.get("v") != SNAPSHOT_VERSION:
        raise ValueError("raftstore: unknown state machine snapshot format")
    return state, data[4 + n :]

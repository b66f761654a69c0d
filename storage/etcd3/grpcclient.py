"""``GrpcKVClient``: ``KVClient`` over etcd's v3 gRPC API (raftstore or a real etcd).

One ``grpc.aio`` channel per endpoint of ``--etcd-servers``. Unary calls and watches go to the
preferred endpoint: the Raft leader's, once known (see ``GrpcKVClient._seek_leader``); on
UNAVAILABLE (member down, no leader) or a deadline the next endpoint becomes the
preferred one and a read is retried there, once per endpoint; a write is retried only when
it never reached a server (see ``GrpcKVClient._call``), otherwise the caller sees
UNREACHABLE, as with upstream's clientv3. Watches are one bidirectional stream each, read on
the client's watch loop (watchstream.py); a broken stream ends the watch (the storage
watcher then ends and the client re-watches from its last revision).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

import grpc

from raftstore.api.pb import rpc_pb2 as pb
from raftstore.api.pb import rpc_pb2_grpc
from storage.etcd3.kvclient import (
    COMPACTED,
    FUTURE,
    OTHER,
    TOO_LARGE_REQUEST,
    UNAVAILABLE,
    KVError,
)
from storage.etcd3.watchstream import GrpcWatch, WatchLoop

log = logging.getLogger(__name__)

T = TypeVar("T")

CALL_TIMEOUT: Final = 10.0  # seconds per attempt of a unary call
_CHANNEL_OPTIONS: Final = [
    ("grpc.max_receive_message_length", 2**31 - 1),
    ("grpc.max_send_message_length", 2**31 - 1),
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
]
_RETRY_CODES: Final = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
# etcd clientv3's WithRequireLeader: a member without a leader cancels the watch instead of
# leaving it silently stale.
_REQUIRE_LEADER: Final = (("hasleader", "true"),)
_PROBE_KEY: Final = b"\x00plat-compaction-probe"
# Looking for the leader: each member's Maintenance.Status within this time; at most one look
# per LEADER_LOOK_INTERVAL, and while none is found, looks again that often for
# LEADER_LOOK_TRIES looks.
LEADER_STATUS_TIMEOUT: Final = 2.0
LEADER_LOOK_INTERVAL: Final = 1.0
LEADER_LOOK_TRIES: Final = 30


def parse_endpoint(url: str) -> tuple[str, bool]:
    """``https://h:p`` -> (``h:p``, tls); ``http://h:p`` and bare ``h:p`` are plaintext."""
    if url.startswith("https://"):
        return url[len("https://"):].rstrip("/"), True
    if url.startswith("http://"):
        return url[len("http://"):].rstrip("/"), False
    return url.rstrip("/"), False


def progress_safe(version: str) -> bool:
    """Upstream's RequestWatchProgress check: etcd before 3.4.31, and 3.5.0 to 3.5.12, may
    send a progress response ahead of events it covers (etcd issues 15220 and 17507).
    raftstore (build metadata ``+raftstore``) queues a progress response after every event
    it covers, whatever API version it reports."""
    if version.partition("+")[2] == "raftstore":
        return True
    parts = version.split("+")[0].split("-")[0].split(".")
    try:
        v = tuple(int(x) for x in parts[:3])
    except ValueError:
        return False
    if len(v) != 3:
        return False
    return not (v < (3, 4, 31) or (3, 5, 0) <= v < (3, 5, 13))


def _read(path: str) -> bytes | None:
    if not path:
        return None
    with open(path, "rb") as f:
        return f.read()


def to_kv_error(exc: grpc.aio.AioRpcError) -> KVError:
    code = exc.code()
    message = exc.details() or code.name
    if code == grpc.StatusCode.OUT_OF_RANGE and "compacted" in message:
        return KVError(COMPACTED, message)
    if code == grpc.StatusCode.OUT_OF_RANGE and "future revision" in message:
        return KVError(FUTURE, message)
    if code == grpc.StatusCode.INVALID_ARGUMENT and "request is too large" in message:
        return KVError(TOO_LARGE_REQUEST, message)
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:  # over gRPC's own message size limit
        return KVError(TOO_LARGE_REQUEST, "etcdserver: request is too large")
    if code in _RETRY_CODES:
        return KVError(UNAVAILABLE, message)
    if code == grpc.StatusCode.UNKNOWN and "deadline exceeded" in message:
        # etcd 3.4 answers a request it could not finish in time (no quorum) with its context
        # error as UNKNOWN "context deadline exceeded": the store is unavailable, the request's
        # outcome unknown (as for a timeout: a write is not retried)
        return KVError(UNAVAILABLE, message)
    return KVError(OTHER, message)


def never_sent(exc: grpc.aio.AioRpcError) -> bool:
    """Whether a failed call certainly never reached a server (no connection could be made)."""
    if exc.code() != grpc.StatusCode.UNAVAILABLE:
        return False
    details = (exc.details() or "").lower()
    return any(m in details for m in (
        "failed to connect", "connection refused", "dns resolution failed", "no connection",
        "connect failed",
    ))


def _channel(target: str, creds: grpc.ChannelCredentials | None) -> grpc.aio.Channel:
    """An aio channel, bound to the running loop."""
    if creds is None:
        return grpc.aio.insecure_channel(target, options=_CHANNEL_OPTIONS)
    return grpc.aio.secure_channel(target, creds, options=_CHANNEL_OPTIONS)


class _Endpoint:
    def __init__(self, target: str, creds: grpc.ChannelCredentials | None) -> None:
        self.target = target
        self.creds = creds
        self.channel = _channel(target, creds)
        stubs: Any = rpc_pb2_grpc  # generated stubs are untyped: Any at this one boundary
        self.kv: Any = stubs.KVStub(self.channel)
        self.maintenance: Any = stubs.MaintenanceStub(self.channel)
        self.lease: Any = stubs.LeaseStub(self.channel)
        # watches: a channel of the client's watch loop (watchstream.py), made at the first
        self.watch_channel: grpc.aio.Channel | None = None
        self.watch: Any = None


class GrpcKVClient:
    """Implements ``KVClient`` over a list of endpoints (URLs or host:port)."""

    def __init__(
        self,
        endpoints: tuple[str, ...] | list[str],
        *,
        cafile: str = "",
        certfile: str = "",
        keyfile: str = "",
        trust_progress: bool | None = None,
    ) -> None:
        """``trust_progress``: None decides by each member's reported version (upstream's
        check); True / False override it (raftstore orders progress correctly but reports
        the etcd API version 3.4.0)."""
        if not endpoints:
            raise ValueError("at least one etcd endpoint is required")
        root, key, chain = _read(cafile), _read(keyfile), _read(certfile)
        self._endpoints: list[_Endpoint] = []
        for url in endpoints:
            target, tls = parse_endpoint(url)
            creds = None
            if tls or root or chain:
                creds = grpc.ssl_channel_credentials(
                    root_certificates=root, private_key=key, certificate_chain=chain
                )
            self._endpoints.append(_Endpoint(target, creds))
        self._preferred = 0
        self._term = 0  # the highest raft term seen in a response header
        self._leader_task: asyncio.Task[None] | None = None
        self._leader_wanted = False
        self._known_compacted = 0
        self._closed = False
        self._progress_ok = trust_progress
        self._progress_lock = asyncio.Lock()
        self._watch_loop: WatchLoop | None = None
        self._watch_lock = asyncio.Lock()

    async def _call(self, fn: Callable[[_Endpoint], Awaitable[T]], *,
                    mutation: bool = False) -> T:
        """Run ``fn`` on the preferred endpoint, then the others. A read is retried on any
        UNAVAILABLE / deadline; a write only when it never left this process (no
        connection), since a write that timed out may still be applied, and applying a
        guaranteed_update's function twice is not the same as once (clientv3 retries
        mutations only in that case too)."""
        last: KVError | None = None
        n = len(self._endpoints)
        for attempt in range(n):
            i = (self._preferred + attempt) % n
            ep = self._endpoints[i]
            try:
                result = await fn(ep)
            except grpc.aio.AioRpcError as exc:
                err = to_kv_error(exc)
                if err.kind != UNAVAILABLE:
                    raise err from None
                last = err
                if self._preferred == i:
                    self._preferred = (i + 1) % n
                    self._seek_leader()
                if mutation and not never_sent(exc):
                    raise err from None
                log.info("etcd endpoint %s unavailable: %s", ep.target, err.message)
                continue
            return result
        assert last is not None
        raise last

    # -- the leader as preferred endpoint --------------------------------------------------
    #
    # Any member answers any call, but a follower hands a write to the leader and asks the
    # leader for every linearizable read point (raftstore and etcd alike), which costs both
    # members a round trip and, on raftstore, a good part of a read's CPU: over a three-member
    # raftstore, an API server's GETs ran about a quarter faster with the leader first in
    # --etcd-servers than with a follower first (docs/apiserver.md). So the client asks the
    # members who leads (Maintenance.Status, in the background, never delaying a call) when it
    # first gets an answer, when a response shows a new raft term and when it fails over, and
    # prefers the leader's endpoint. Correctness does not depend on it: a stale choice only
    # costs the follower's round trip, as before.

    def _seen(self, header: Any) -> None:
        term = int(header.raft_term)
        if term > self._term:
            self._term = term
            self._seek_leader()

    def _seek_leader(self) -> None:
        """Look for the leader soon (one look at a time, at most one a second)."""
        if len(self._endpoints) < 2 or self._closed:
            return
        self._leader_wanted = True
        if self._leader_task is None:
            self._leader_task = asyncio.get_running_loop().create_task(self._leader_looks())

    async def _leader_looks(self) -> None:
        try:
            tries = 0
            while self._leader_wanted and not self._closed:
                self._leader_wanted = False
                found = await self._look_for_leader()
                tries = 0 if found else tries + 1
                if not found and tries < LEADER_LOOK_TRIES:
                    self._leader_wanted = True
                await asyncio.sleep(LEADER_LOOK_INTERVAL)
        finally:
            self._leader_task = None

    async def _look_for_leader(self) -> bool:
        """Prefer the endpoint of the member every answering member names as leader; False
        when there is none (an election, or the leader is not among the endpoints)."""

        async def status(ep: _Endpoint) -> pb.StatusResponse | None:
            try:
                resp: pb.StatusResponse = await ep.maintenance.Status(
                    pb.StatusRequest(), timeout=LEADER_STATUS_TIMEOUT)
            except (grpc.RpcError, grpc.aio.UsageError):  # down, or closing
                return None
            return resp

        answers = await asyncio.gather(*(status(ep) for ep in self._endpoints))
        leaders = {int(a.leader) for a in answers if a is not None}
        if len(leaders) != 1 or 0 in leaders:
            return False
        (leader,) = leaders
        for i, a in enumerate(answers):
            if a is not None and int(a.header.member_id) == leader:
                if i != self._preferred:
                    log.info("etcd endpoint %s is the leader's: preferred from now",
                             self._endpoints[i].target)
                    self._preferred = i
                self._term = max(self._term, int(a.header.raft_term))
                return True
        return False

    async def range(self, req: pb.RangeRequest) -> pb.RangeResponse:
        resp: pb.RangeResponse = await self._call(
            lambda ep: ep.kv.Range(req, timeout=CALL_TIMEOUT)
        )
        self._seen(resp.header)
        return resp

    async def txn(self, req: pb.TxnRequest) -> pb.TxnResponse:
        resp: pb.TxnResponse = await self._call(
            lambda ep: ep.kv.Txn(req, timeout=CALL_TIMEOUT), mutation=True
        )
        self._seen(resp.header)
        return resp

    async def lease_grant(self, ttl: int) -> int:
        resp: pb.LeaseGrantResponse = await self._call(
            lambda ep: ep.lease.LeaseGrant(pb.LeaseGrantRequest(TTL=ttl), timeout=CALL_TIMEOUT),
            mutation=True,
        )
        if resp.error:
            raise KVError(OTHER, f"etcdserver: lease grant: {resp.error}")
        return int(resp.ID)

    async def compact(self, revision: int) -> None:
        await self._call(
            lambda ep: ep.kv.Compact(pb.CompactionRequest(revision=revision),
                                     timeout=CALL_TIMEOUT),
            mutation=True,
        )
        self._known_compacted = max(self._known_compacted, revision)

    async def _readable(self, rev: int) -> bool:
        try:
            await self.range(pb.RangeRequest(key=_PROBE_KEY, revision=rev, count_only=True))
        except KVError as exc:
            if exc.kind == COMPACTED:
                return False
            raise
        return True

    async def compacted_revision(self) -> int:
        """etcd does not report its compaction revision; find the oldest readable revision
        by bisection (one request when nothing was compacted since the last answer)."""
        lo = max(self._known_compacted, 1)
        if await self._readable(lo):
            return self._known_compacted
        head = await self.range(pb.RangeRequest(key=_PROBE_KEY, count_only=True))
        hi = int(head.header.revision)  # always readable
        while lo + 1 < hi:  # invariant: lo unreadable, hi readable
            mid = (lo + hi) // 2
            if await self._readable(mid):
                hi = mid
            else:
                lo = mid
        self._known_compacted = hi
        return hi

    async def progress_supported(self) -> bool:
        if self._progress_ok is None:
            # Every cacher's watch asks at its first tick, all at once: one asks the members.
            async with self._progress_lock:
                if self._progress_ok is None:
                    self._progress_ok = await self._ask_progress_support()
        return self._progress_ok

    async def _ask_progress_support(self) -> bool:
        for ep in self._endpoints:
            try:
                resp = await ep.maintenance.Status(pb.StatusRequest(), timeout=CALL_TIMEOUT)
            except grpc.aio.AioRpcError as exc:
                raise to_kv_error(exc) from None
            if not progress_safe(str(resp.version)):
                log.info("etcd %s at %s: watch progress requests disabled (upstream "
                         "requires 3.4.31+ or 3.5.13+)", resp.version, ep.target)
                return False
        return True

    async def _watch_stub(self, ep: _Endpoint) -> tuple[WatchLoop, Any]:
        """The watch loop, started at the first watch, and ``ep``'s WatchStub on it."""
        async with self._watch_lock:
            if self._closed:
                raise KVError(UNAVAILABLE, "the store client is closed")
            if self._watch_loop is None:
                self._watch_loop = WatchLoop()
            wl = self._watch_loop
            if ep.watch is None:
                async def make() -> grpc.aio.Channel:
                    return _channel(ep.target, ep.creds)

                ep.watch_channel = await wl.run(make())
                ep.watch = rpc_pb2_grpc.WatchStub(ep.watch_channel)  # type: ignore[no-untyped-call]
            return wl, ep.watch

    async def watch(self, req: pb.WatchCreateRequest) -> GrpcWatch:
        async def start(ep: _Endpoint) -> GrpcWatch:
            wl, stub = await self._watch_stub(ep)
            w = GrpcWatch(wl, stub, _REQUIRE_LEADER, ep.target)
            try:
                await w.start(req)
            except BaseException:
                w.close()
                raise
            return w

        return await self._call(start)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        task = self._leader_task
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for ep in self._endpoints:
            await ep.channel.close()
        async with self._watch_lock:
            wl, self._watch_loop = self._watch_loop, None
        if wl is not None:
            await wl.stop([ep.watch_channel.close for ep in self._endpoints
                           if ep.watch_channel is not None])

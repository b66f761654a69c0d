"""Assembles one raftstore member: state machine, replication, gRPC API, health and metrics."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from typing import Any

import structlog
from aiohttp import web

from raftstore import metrics
from raftstore.config import Config, host_port
from raftstore.consensus import ConsensusError
from raftstore.replication import Replication, ReplicationConfig

log = structlog.get_logger("raftstore")


GC_THAW_INTERVAL = 900.0  # seconds between full collections of the frozen heap
LOOP_CHECK_INTERVAL = 0.1  # seconds; see watch_loop_lag
LOOP_STALLED = 0.3  # seconds late before it is logged
LONG_GC_PAUSE = 0.2  # seconds; a cyclic collection this long is logged
GC_GEN0_THRESHOLD = 10_000  # allocations between collections of the youngest generation


def tune_gc() -> None:
    """Keep Python's cyclic GC from stalling the member, and record its pauses in /metrics.

    A full (generation 2) collection walks every tracked object; with a store of 50,000 keys
    that measured 170-190 ms, every ~7 s under write load, on each member: the largest source of
    slow requests. The store's objects hold no reference cycles (refcounting frees them), so
    after each full collection the survivors are frozen (``gc.freeze``) and later collections
    walk only what is newer. Cyclic garbage among frozen objects would not be found, so every
    GC_THAW_INTERVAL the heap is thawed and collected once in full (``thaw_gc``)."""
    import gc
    import time

    started = [0.0, 0.0]

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0], started[1] = time.perf_counter(), time.thread_time()
            return
        generation = info["generation"]
        pause = time.perf_counter() - started[0]
        metrics.GC_PAUSE.labels(str(generation)).observe(pause)
        if pause > LONG_GC_PAUSE:
            # Every thread of the member waits for it: named, so a stall can be traced to it.
            # The CPU it took tells a large heap from a collection that waited for a core.
            log.warning("long gc pause", generation=generation, seconds=round(pause, 3),
                        cpu=round(time.thread_time() - started[1], 3),
                        collected=info.get("collected", 0))
        if generation == 2:
            gc.freeze()

    gc.callbacks.append(callback)
    # The youngest generation collects every GC_GEN0_THRESHOLD allocations instead of 700: a
    # request's temporary objects are mostly gone by then rather than promoted, and fewer
    # collections of the older generations follow (as the apiserver does: apiserver/gctuning.py).
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GC_GEN0_THRESHOLD, gen1, gen2)


async def thaw_gc() -> None:
    import gc

    while True:
        await asyncio.sleep(GC_THAW_INTERVAL)
        gc.unfreeze()
        gc.collect()


async def watch_loop_lag() -> None:
    """Log when this member's event loop ran more than ``LOOP_STALLED`` late: no request is
    read or answered meanwhile (the raft thread's own gaps are logged by replication.py)."""
    loop = asyncio.get_running_loop()
    while True:
        start = loop.time()
        await asyncio.sleep(LOOP_CHECK_INTERVAL)
        late = loop.time() - start - LOOP_CHECK_INTERVAL
        if late > LOOP_STALLED:
            log.warning("event loop stalled", seconds=round(late, 3))


def configure_logging(level: str) -> None:
    lvl = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING,
           "error": logging.ERROR}[level]
    logging.basicConfig(stream=sys.stderr, level=lvl,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    renderer: Any = (
        structlog.dev.ConsoleRenderer(colors=False) if sys.stderr.isatty()
        else structlog.processors.JSONRenderer()
    )
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )


def _peer_addr(url: str) -> str:
    host, port = host_port(url)
    return f"{host}:{port}"


def replication_config(cfg: Config) -> ReplicationConfig:
    return ReplicationConfig(
        name=cfg.name,
        self_peer=_peer_addr(cfg.initial_advertise_peer_urls[0]),
        bind_peer=_peer_addr(cfg.listen_peer_urls[0]),
        peers={name: _peer_addr(urls[0]) for name, urls in cfg.initial_cluster.items()},
        peer_urls=dict(cfg.initial_cluster),
        client_urls=list(cfg.advertise_client_urls),
        data_dir=cfg.data_dir,
        cluster_token=cfg.initial_cluster_token,
        password=cfg.peer_password,
        fsync=not cfg.unsafe_no_fsync,
        snapshot_count=cfg.snapshot_count,
        heartbeat=cfg.heartbeat_interval_ms / 1000,
        election_timeout=cfg.election_timeout_ms / 1000,
        join_existing=cfg.initial_cluster_state == "existing",
    )


class Member:
    def __init__(self, cfg: Config) -> None:
        from raftstore.applier import EtcdStateMachine
        from raftstore.mvcc.kvstore import KVStore

        self.cfg = cfg
        self.store = KVStore()
        self.state = EtcdStateMachine(self.store)
        self.replication = Replication(replication_config(cfg), self.state)
        self._grpc: Any = None
        self._runners: list[web.AppRunner] = []
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        from raftstore.api.requireleader import LeaderMonitor
        from raftstore.api.server import run_lease_expiry, start_grpc_server

        tls = None
        if self.cfg.cert_file and self.cfg.key_file:
            with open(self.cfg.cert_file, "rb") as c, open(self.cfg.key_file, "rb") as k:  # noqa: ASYNC230 - once at start-up
                tls = (c.read(), k.read())
        listen = [_peer_addr(u) for u in self.cfg.listen_client_urls]
        # One check per election timeout, as etcd's monitorLeader.
        leaders = LeaderMonitor(self.replication, self.cfg.election_timeout_ms / 1000)
        self._grpc = await start_grpc_server(
            state=self.state, consensus=self.replication, listen=listen, tls=tls,
            leaders=leaders,
        )
        self._tasks.append(asyncio.create_task(leaders.run()))
        for url in self.cfg.listen_metrics_urls:
            await self._start_metrics(url, tls)
        self._tasks.append(asyncio.create_task(run_lease_expiry(self.state, self.replication)))
        self._tasks.append(asyncio.create_task(self._publish()))
        self._tasks.append(asyncio.create_task(thaw_gc()))
        self._tasks.append(asyncio.create_task(watch_loop_lag()))
        log.info("member started", name=self.cfg.name, clients=self.cfg.listen_client_urls,
                 peer=self.cfg.listen_peer_urls[0], member_id=f"{self.replication.member_id:x}",
                 fsync=not self.cfg.unsafe_no_fsync)

    async def _publish(self) -> None:
        """Replicate this member's name and client URLs, as etcd publishes member attributes,
        so that ``member list`` on any member shows every member's client URLs."""
        from raftstore.applier import encode_publish

        cmd = encode_publish(self.replication.member_id, self.cfg.name,
                             list(self.cfg.advertise_client_urls))
        while True:
            try:
                await self.replication.propose(cmd, timeout=5.0)
                return
            except ConsensusError:
                await asyncio.sleep(0.5)

    async def _start_metrics(self, url: str, tls: tuple[bytes, bytes] | None) -> None:
        app = web.Application()
        app.router.add_get("/health", self._health)
        app.router.add_get("/metrics", self._metrics)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        host, port = host_port(url)
        ssl_ctx = None
        if url.startswith("https://"):
            import ssl

            ssl_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            assert self.cfg.cert_file and self.cfg.key_file
            ssl_ctx.load_cert_chain(self.cfg.cert_file, self.cfg.key_file)
        await web.TCPSite(runner, host, port, ssl_context=ssl_ctx).start()
        self._runners.append(runner)

    async def _health(self, request: web.Request) -> web.Response:
        if self.replication.leader_id() == 0:
            return web.json_response({"health": "false", "reason": "RAFT NO LEADER"}, status=503)
        try:
            await self.replication.read_barrier(timeout=2.0)
        except ConsensusError as e:
            return web.json_response({"health": "false", "reason": e.message}, status=503)
        return web.json_response({"health": "true", "reason": ""})

    async def _metrics(self, request: web.Request) -> web.Response:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        r = self.replication
        metrics.RAFT_TERM.set(r.term())
        metrics.HAS_LEADER.set(1 if r.leader_id() else 0)
        metrics.IS_LEADER.set(1 if r.is_leader() else 0)
        metrics.APPLIED_INDEX.set(r.applied_index())
        metrics.COMMITTED_INDEX.set(r.commit_index())
        with self.state.lock:
            metrics.REVISION.set(self.store.rev)
            metrics.COMPACT_REVISION.set(self.store.compact_rev)
            keys = getattr(self.store, "key_count", None)
            if keys is not None:
                metrics.DB_KEYS.set(keys() if callable(keys) else keys)
        body = generate_latest(metrics.REGISTRY)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        if self._grpc is not None:
            await self._grpc.stop(grace=1.0)
        for runner in self._runners:
            await runner.cleanup()
        await asyncio.get_running_loop().run_in_executor(None, self.replication.stop)


async def serve(cfg: Config) -> None:
    tune_gc()
    member = Member(cfg)
    await member.start()
    # Everything loaded so far (modules, grpc, protobuf descriptors, a restored state) lives
    # as long as the process: freeze it, so that the first full collection under load does
    # not walk it (measured: a 34 ms pause on the leader within its first 2,000 puts).
    import gc

    gc.collect()
    gc.freeze()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("member stopping", name=cfg.name)
    await member.stop()

"""Benchmark: the API server on each storage backend, against a bare aiohttp ceiling, in one run.

    python bench/bench_apiserver.py --out /tmp/api.json            # about 10 minutes
    python bench/bench_apiserver.py --quick                        # about 4 minutes

Series (each started fresh, loopback only, TLS everywhere the server has it):

  plat-server (embedded)          the all-in-one default: apiserver + in-process store
  2 apiservers / raftstore x3     plat-server + plat-apiserver over a three-member raftstore
  2 apiservers / etcd x3          the same over a three-member etcd 3.4
  bare aiohttp (ceiling)          aiohttp + uvloop + orjson returning the same ConfigMap

Figures per series: ConfigMap creates/s and p50/p99 at 32 clients (spread over the replicas);
the store's raw put rate at the same concurrency (gRPC puts of the same bytes; in-process
creates for the embedded store); gets/s of one object from one replica; a list of 10,000
ConfigMaps (ms, from the watch cache); watch delivery latency (write acknowledged -> event
received) p50/p99 with N watchers while a writer makes 100 writes/s, and whether any watcher
saw a gap. Ratios: gets against the bare ceiling measured in the same run of turns (the
series' GETs and the ceiling's alternate, ``GET_TURNS``: this machine's speed drifts over
minutes), and against the one measured after every series; creates against the raw store.

The load generator is one asyncio process on the same 2-core machine as the servers, so every
figure includes its share of the CPU. Nothing here is asserted: it prints a table and writes
JSON (``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import re
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp  # noqa: E402
import orjson  # noqa: E402

from apiserver.testing.launcher import ApiServerProcess  # noqa: E402
from raftstore.launcher import Cluster, EtcdCluster, RaftstoreCluster, free_ports  # noqa: E402


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    creates: int
    create_clients: int
    gets: int
    get_clients: int
    list_items: int
    list_repeats: int
    watchers: int
    watch_writes: int
    write_rate: float


FULL = Plan(creates=6000, create_clients=32, gets=20000, get_clients=32, list_items=10000,
            list_repeats=5, watchers=1000, watch_writes=1000, write_rate=100.0)
QUICK = Plan(creates=1500, create_clients=32, gets=5000, get_clients=32, list_items=10000,
             list_repeats=3, watchers=200, watch_writes=300, write_rate=100.0)


PHASES = ("create", "get", "list", "watch")

# An event's resourceVersion in a watch frame (one per frame: the object's metadata).
RV_PATTERN = re.compile(rb'"resourceVersion":"(\d+)"')
# The end of every event's frame (its line's newline and the chunk's CRLF; compact JSON has
# no raw newline) and the end of the stream (the zero-size chunk).
FRAME_END = b"\n\r\n"
STREAM_END = b"0\r\n\r\n"


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def cpu_seconds(pids: list[int], children: bool = False) -> float:
    """User + system CPU seconds used so far by ``pids`` (from /proc; 0 for a gone one),
    with ``children`` also that of their children waited for (the watch clients)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
        if children:
            total += int(fields[13]) + int(fields[14])  # cutime, cstime
    return total / tick


def store_ranges(metrics_urls: list[str]) -> float:
    """Range calls the store members have answered so far (``grpc_server_handled_total``, which
    raftstore and etcd both export); NaN when a member cannot be read."""
    total = 0.0
    for url in metrics_urls:
        try:
            with urllib.request.urlopen(f"{url}/metrics", timeout=5) as resp:
                text = resp.read().decode()
        except OSError:
            return float("nan")
        for line in text.splitlines():
            if line.startswith("grpc_server_handled_total{") and 'grpc_method="Range"' in line:
                total += float(line.rsplit(" ", 1)[1])
    return total


class CpuMeter:
    """CPU seconds of the API servers, the store members and the load generator (this
    process and its watch clients) over a phase, and the store's Range calls."""

    def __init__(self, servers: list[int], store: list[int],
                 store_metrics: list[str] | None = None) -> None:
        self.groups = {"servers": servers, "store": store, "client": [os.getpid()]}
        self.store_metrics = store_metrics or []
        self._start: dict[str, float] = {}
        self._ranges = 0.0

    def start(self) -> None:
        self._start = {k: cpu_seconds(v, k == "client") for k, v in self.groups.items()}
        self._ranges = store_ranges(self.store_metrics) if self.store_metrics else 0.0

    def stop(self, ops: int) -> dict[str, float]:
        """CPU ms per operation of each group since start(), and store ranges per operation."""
        return self._per_op(self._elapsed(), ops)

    def _elapsed(self) -> dict[str, float]:
        out = {k: cpu_seconds(v, k == "client") - self._start[k] for k, v in self.groups.items()}
        if self.store_metrics:
            out["ranges"] = store_ranges(self.store_metrics) - self._ranges
        return out

    def _per_op(self, used: dict[str, float], ops: int) -> dict[str, float]:
        out = {f"{k}_ms_per_op": round(used[k] * 1000 / max(ops, 1), 3) for k in self.groups}
        if self.store_metrics:
            out["store_ranges_per_op"] = round(used["ranges"] / max(ops, 1), 3)
        return out

    def laps(self) -> CpuLaps:
        return CpuLaps(self)


class CpuLaps:
    """A CpuMeter's figures summed over several laps (the turns of one side of a paired
    phase), leaving out what ran between them."""

    def __init__(self, meter: CpuMeter) -> None:
        self.meter = meter
        self.used: dict[str, float] = {}

    def start(self) -> None:
        self.meter.start()

    def stop(self) -> None:
        for k, v in self.meter._elapsed().items():
            self.used[k] = self.used.get(k, 0.0) + v

    def per_op(self, ops: int) -> dict[str, float]:
        return self.meter._per_op(self.used, ops)


def configmap(name: str, stamp: float = 0.0) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"bench": "yes"}},
            "data": {"payload": "x" * 200, "stamp": repr(stamp)}}


async def run_clients(concurrency: int, total: int,
                      op: Callable[[int], Awaitable[None]]) -> dict[str, Any]:
    """``total`` calls of ``op(i)`` from ``concurrency`` workers; latencies and failures."""
    latencies: list[float] = []
    failures: dict[str, int] = {}
    counter = iter(range(total))

    async def worker() -> None:
        for i in counter:
            t0 = time.perf_counter()
            try:
                await op(i)
            except Exception as exc:  # noqa: BLE001 - counted, printed
                key = f"{type(exc).__name__}: {str(exc)[:80]}"
                failures[key] = failures.get(key, 0) + 1
                continue
            latencies.append(time.perf_counter() - t0)

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return summary(latencies, time.perf_counter() - t0, failures)


def summary(latencies: list[float], elapsed: float, failures: dict[str, int]
            ) -> dict[str, Any]:
    return {"ops": len(latencies), "per_s": round(len(latencies) / elapsed, 1),
            "p50_ms": round(percentile(latencies, 0.50) * 1000, 2),
            "p99_ms": round(percentile(latencies, 0.99) * 1000, 2),
            "failures": failures, "elapsed_s": elapsed, "latencies_s": latencies}


def pooled(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Several rounds of one load as one: every operation over the rounds' summed time."""
    failures: dict[str, int] = {}
    for r in rounds:
        for k, v in r["failures"].items():
            failures[k] = failures.get(k, 0) + v
    out = summary([x for r in rounds for x in r["latencies_s"]],
                  sum(r["elapsed_s"] for r in rounds), failures)
    out["rounds_per_s"] = [r["per_s"] for r in rounds]
    return out


def trimmed(result: dict[str, Any]) -> dict[str, Any]:
    """A result without its latencies (for the JSON output)."""
    out = {k: v for k, v in result.items() if k != "latencies_s"}
    if "elapsed_s" in out:
        out["elapsed_s"] = round(out["elapsed_s"], 3)
    return out


class Http:
    """aiohttp sessions to one or more API servers with the admin credentials."""

    def __init__(self, urls: list[str], ctx: ssl.SSLContext, limit: int = 64) -> None:
        self.urls = urls
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=ctx, limit=limit * max(1, len(urls))),
            timeout=aiohttp.ClientTimeout(total=60),
        )

    async def request(self, method: str, path: str, *, replica: int = 0,
                      body: Any = None, expect: int = 200) -> bytes:
        url = self.urls[replica % len(self.urls)] + path
        data = orjson.dumps(body) if body is not None else None
        async with self.session.request(
            method, url, data=data, headers={"Content-Type": "application/json",
                                             "Accept": "application/json"},
        ) as resp:
            raw = await resp.read()
            if resp.status != expect:
                raise RuntimeError(f"{method} {path}: {resp.status} {raw[:120]!r}")
            return raw

    async def close(self) -> None:
        await self.session.close()


async def ensure_namespace(http: Http, ns: str) -> None:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    try:
        await http.request("POST", "/api/v1/namespaces", body=body, expect=201)
    except RuntimeError as exc:
        if "409" not in str(exc):
            raise


# The GETs of a series and of the bare ceiling take turns in this order (A: the series, B:
# the ceiling), each turn a share of ``Plan.gets``: both sides see the same moments of a
# machine whose speed drifts over minutes (a shared VM), and their ratio compares like with
# like. Before 2026-11-24 21:12 UTC the ceiling was one run of its own just before the series.
GET_TURNS: Final = "ABBAABBA"


async def api_phases(urls: list[str], ctx: ssl.SSLContext, kubeconfig: str, plan: Plan,
                     log: Callable[[str], None], phases: frozenset[str],
                     meter: CpuMeter, bare: BareServer | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    http = Http(urls, ctx, limit=max(plan.create_clients, plan.get_clients))
    try:
        await ensure_namespace(http, "bench")
        path = "/api/v1/namespaces/bench/configmaps"

        async def create(i: int) -> None:
            await http.request("POST", path, replica=i, body=configmap(f"c{i}"), expect=201)

        if "create" in phases or "get" in phases:
            log(f"creates x{plan.creates} at {plan.create_clients} clients")
            meter.start()
            out["create"] = trimmed(await run_clients(plan.create_clients, plan.creates, create))
            out["create"]["cpu"] = meter.stop(out["create"]["ops"])

        async def get(i: int) -> None:
            await http.request("GET", f"{path}/c{i % 100}")

        if "get" in phases and bare is None:
            log(f"gets x{plan.gets} at {plan.get_clients} clients (one replica)")
            meter.start()
            out["get"] = trimmed(await run_clients(plan.get_clients, plan.gets, get))
            out["get"]["cpu"] = meter.stop(out["get"]["ops"])
        elif "get" in phases:
            assert bare is not None
            log(f"gets x{plan.gets} at {plan.get_clients} clients (one replica), in turns "
                f"{GET_TURNS} with the bare ceiling (B)")
            out["get"], out["bare"] = await paired_gets(plan, get, bare, meter)

        if "list" in phases:
            # the list: top the namespace up to list_items objects in a second namespace
            await ensure_namespace(http, "bench-list")
            lpath = "/api/v1/namespaces/bench-list/configmaps"

            async def fill(i: int) -> None:
                await http.request("POST", lpath, replica=i, body=configmap(f"l{i}"),
                                   expect=201)

            log(f"loading {plan.list_items} objects for the list")
            out["list_load"] = trimmed(await run_clients(32, plan.list_items, fill))
            times = []
            for _ in range(plan.list_repeats):
                t0 = time.perf_counter()
                raw = await http.request("GET", lpath)
                times.append(time.perf_counter() - t0)
                n = len(orjson.loads(raw)["items"])
            out["list"] = {"items": n, "best_ms": round(min(times) * 1000, 1),
                           "median_ms": round(statistics.median(times) * 1000, 1),
                           "bytes": len(raw)}
            log(f"list of {n}: best {out['list']['best_ms']} ms")
        if "watch" in phases:
            meter.start()
            out["watch"] = await watch_latency(http, urls, kubeconfig, plan, log)
            cpu = meter.stop(out["watch"]["writes"] * out["watch"]["watchers"])
            out["watch"]["cpu_us_per_frame"] = {k.replace("_ms_per_op", ""): round(v * 1000, 1)
                                                for k, v in cpu.items() if k.endswith("_ms_per_op")}
    finally:
        await http.close()
    return out


class _WatchReader(asyncio.Protocol):
    """One watch over a raw TLS connection (uvloop): sends the GET, checks the status line,
    and records, for every complete event frame, its resourceVersion and the time of the
    read that completed it. An aiohttp session per connection cost the client process about
    three times the CPU per event, and the client shares the 2 cores with the server. The
    frames are not taken apart: the bytes up to the last end of a frame hold whole events
    only, and one regular expression finds their resourceVersions (0.6 us per event here,
    against 3.3 us for undoing the chunked framing and splitting lines in Python: a third of
    a core at a thousand watchers and 100 events/s)."""

    def __init__(self, request: bytes, mine: list[tuple[str, float]], want: int,
                 opened: Callable[[], None], done: asyncio.Future[None]) -> None:
        self.request = request
        self.mine = mine
        self.want = want
        self.opened = opened
        self.done = done
        self.transport: asyncio.Transport | None = None
        self.head = True  # still reading the status line and headers
        self.buf = b""  # bytes after the last complete frame

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is no subclass
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        now = time.monotonic()
        buf = self.buf + data if self.buf else data
        if self.head:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                self.buf = buf
                return
            head = buf[:end].lower()
            if not head.startswith(b"http/1.1 200") or b"transfer-encoding: chunked" not in head:
                self._finish(RuntimeError(f"watch answered {buf[:200]!r}"))
                return
            self.head = False
            self.opened()
            buf = buf[end + 4:]
        end = buf.rfind(FRAME_END) + len(FRAME_END)
        if end < len(FRAME_END):
            self.buf = buf
            return
        self.buf = buf[end:]
        mine = self.mine
        mine.extend([(rv.decode(), now) for rv in RV_PATTERN.findall(buf, 0, end)])
        if len(mine) >= self.want or buf.endswith(STREAM_END, 0, end):
            self._finish(None)  # all it waited for, or the server ended the stream

    def _finish(self, exc: BaseException | None) -> None:
        if not self.done.done():
            if exc is None:
                self.done.set_result(None)
            else:
                self.done.set_exception(exc)
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: BaseException | None) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def collect_events(urls: list[str], ctx: ssl.SSLContext, path: str, start_rv: str,
                         first: int, count: int, want: int,
                         ready: Callable[[], None], seconds: float
                         ) -> list[list[tuple[str, float]]]:
    """Open watchers ``first .. first+count-1`` from ``start_rv``; call ``ready`` once all are
    open; return each one's (resourceVersion, receive time) once it has ``want`` events or
    ``seconds`` have passed. Receive times are ``time.monotonic()``, comparable across the
    processes of this machine."""
    from urllib.parse import urlsplit

    loop = asyncio.get_running_loop()
    received: list[list[tuple[str, float]]] = [[] for _ in range(count)]
    n_open = 0

    def opened() -> None:
        nonlocal n_open
        n_open += 1
        if n_open == count:
            ready()

    dones: list[asyncio.Future[None]] = []
    transports: list[asyncio.BaseTransport] = []
    for i in range(count):
        u = urlsplit(urls[(first + i) % len(urls)])
        assert u.hostname is not None and u.port is not None
        target = f"{path}?watch=1&resourceVersion={start_rv}&timeoutSeconds=600"
        request = (f"GET {target} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\n"
                   "Accept: application/json\r\nUser-Agent: bench-watch\r\n\r\n").encode()
        done: asyncio.Future[None] = loop.create_future()
        mine = received[i]
        tr, _ = await loop.create_connection(
            lambda r=request, m=mine, d=done: _WatchReader(r, m, want, opened, d),  # type: ignore[misc]
            u.hostname, u.port, ssl=ctx)
        dones.append(done)
        transports.append(tr)
    try:
        await asyncio.wait_for(asyncio.gather(*dones), seconds)
    except TimeoutError:
        pass
    for t in transports:
        t.close()
    for d in dones:
        if d.done() and not d.cancelled() and d.exception() is not None:
            raise d.exception()  # type: ignore[misc]
    return received


def watch_child(argv: list[str]) -> int:
    """``--watch-child``: one load-generating process of the watch phase (see
    watch_latency). Prints READY when its watchers are open, then the events as JSON."""
    spec = json.loads(argv[0])
    from apiserver.testing.launcher import ssl_context_for

    async def run() -> list[list[tuple[str, float]]]:
        def ready() -> None:
            print("READY", flush=True)

        return await collect_events(spec["urls"], ssl_context_for(spec["kubeconfig"]),
                                    spec["path"], spec["start_rv"], spec["first"],
                                    spec["count"], spec["want"], ready, spec["seconds"])

    import uvloop

    events = uvloop.run(run())
    sys.stdout.write(json.dumps(events) + "\n")
    return 0


WATCH_PROCESSES = 2


async def watch_latency(http: Http, urls: list[str], kubeconfig: str, plan: Plan,
                        log: Callable[[str], None]) -> dict[str, Any]:
    """N watchers of one namespace, spread over WATCH_PROCESSES client processes (one
    process reading 1,000 TLS streams saturates a core before the server does); a writer
    updates one object at ``write_rate``; each event's latency is its receive time minus the
    time its write was sent (the write's own latency included: an event may reach a watcher
    before the writer has read the PUT's response, so the acknowledgement is no clock to
    measure from)."""
    await ensure_namespace(http, "bench-watch")
    path = "/api/v1/namespaces/bench-watch/configmaps"
    raw = await http.request("POST", path, body=configmap("w", 0.0), expect=201)
    start_rv = orjson.loads(raw)["metadata"]["resourceVersion"]
    acked: dict[str, float] = {}  # resourceVersion -> time the write was sent
    seconds = plan.watch_writes / plan.write_rate + 90
    per = -(-plan.watchers // WATCH_PROCESSES)
    children = []
    for k in range(WATCH_PROCESSES):
        spec = {"urls": urls, "kubeconfig": kubeconfig, "path": path, "start_rv": start_rv,
                "first": k * per, "count": min(per, plan.watchers - k * per),
                "want": plan.watch_writes, "seconds": seconds}
        children.append(await asyncio.create_subprocess_exec(
            sys.executable, __file__, "--watch-child", json.dumps(spec),
            stdout=asyncio.subprocess.PIPE, limit=1 << 30))
    log(f"opening {plan.watchers} watchers in {WATCH_PROCESSES} processes")
    for c in children:
        assert c.stdout is not None
        line = await asyncio.wait_for(c.stdout.readline(), 180)
        if line.strip() != b"READY":
            raise RuntimeError(f"watch child failed: {line[:200]!r}")
    await asyncio.sleep(1.0)
    log(f"writing {plan.watch_writes} updates at {plan.write_rate}/s")
    interval = 1.0 / plan.write_rate
    t_next = time.monotonic()
    failures = 0
    put_lat: list[float] = []
    for n in range(plan.watch_writes):
        t_next += interval
        body = configmap("w", float(n + 1))  # never equal to the created object: no no-op
        sent = time.monotonic()
        try:
            raw = await http.request("PUT", f"{path}/w", body=body)
            acked[orjson.loads(raw)["metadata"]["resourceVersion"]] = sent
            put_lat.append(time.monotonic() - sent)
        except RuntimeError:
            failures += 1
        delay = t_next - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
    received: list[list[tuple[str, float]]] = []
    for c in children:
        assert c.stdout is not None
        out = await c.stdout.read()
        await c.wait()
        received.extend([(rv, t) for rv, t in w] for w in json.loads(out or b"[]"))
    lat: list[float] = []
    first: dict[str, float] = {}  # resourceVersion -> when its first watcher had it
    gaps = 0
    for events in received:
        rvs = [rv for rv, _ in events]
        if rvs != list(acked):  # every write, in order, nothing else
            gaps += 1
        for rv, t in events:
            if rv in acked:
                lat.append(t - acked[rv])
                first[rv] = min(first.get(rv, t), t)
    firsts = [t - acked[rv] for rv, t in first.items()]

    def ms(values: list[float], q: float) -> float:
        return round(percentile(values, q) * 1000, 1)

    # The breakdown: the PUT's own latency (its response, not the event), and the latency
    # of each event to its first watcher (the store, the cache and the first write); the
    # rest of the spread is the fan-out to the other watchers and their reading.
    return {"watchers": len(received), "writes": len(acked), "write_failures": failures,
            "events": sum(len(e) for e in received),
            "p50_ms": ms(lat, 0.5), "p99_ms": ms(lat, 0.99),
            "put_p50_ms": ms(put_lat, 0.5), "put_p99_ms": ms(put_lat, 0.99),
            "first_watcher_p50_ms": ms(firsts, 0.5), "first_watcher_p99_ms": ms(firsts, 0.99),
            "watchers_with_gaps_or_missing": gaps}


# -- raw store put rate -------------------------------------------------------------------------


async def raw_grpc_puts(endpoints: list[str], concurrency: int, total: int) -> dict[str, Any]:
    import grpc

    from raftstore.api.pb import rpc_pb2, rpc_pb2_grpc

    channels = [grpc.aio.insecure_channel(ep) for ep in endpoints]
    stubs = [rpc_pb2_grpc.KVStub(c) for c in channels]  # type: ignore[no-untyped-call]
    value = orjson.dumps(configmap("raw"))

    async def put(i: int) -> None:
        await stubs[i % len(stubs)].Put(
            rpc_pb2.PutRequest(key=f"/bench/raw/{i}".encode(), value=value), timeout=10)

    try:
        return trimmed(await run_clients(concurrency, total, put))
    finally:
        for c in channels:
            await c.close()


async def raw_embedded_creates(concurrency: int, total: int) -> dict[str, Any]:
    from storage.factory import StorageConfig, open_storage

    with tempfile.TemporaryDirectory() as d:
        store = await open_storage(StorageConfig(backend="embedded", data_dir=d,
                                                 compaction_interval=0))
        try:
            async def create(i: int) -> None:
                await store.create(f"/registry/configmaps/bench/r{i}", configmap(f"r{i}"))

            return trimmed(await run_clients(concurrency, total, create))
        finally:
            await store.close()


# -- bare ceiling ---------------------------------------------------------------------------------

BARE_SERVER = r'''
import asyncio, ssl, sys
import orjson, uvloop
from aiohttp import web
obj = orjson.loads(sys.argv[4])
async def get(request):
    return web.Response(body=orjson.dumps(obj), content_type="application/json")
app = web.Application()
app.router.add_get("/api/v1/namespaces/{ns}/configmaps/{name}", get)
ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
ctx.load_cert_chain(sys.argv[2], sys.argv[3])
uvloop.install()
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), ssl_context=ctx, print=None,
            access_log=None)
'''


class BareServer:
    """The ceiling: BARE_SERVER in a process of its own, with a throwaway certificate."""

    def __init__(self, sample: dict[str, Any]) -> None:
        self.sample = sample
        self._dir = tempfile.TemporaryDirectory(prefix="bench-bare-")
        self.cafile = Path(self._dir.name) / "c.pem"
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    def start(self) -> BareServer:
        import datetime
        import ipaddress

        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "bare")])
        now = datetime.datetime.now(datetime.UTC)
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
                .add_extension(x509.SubjectAlternativeName(
                    [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
                .sign(key, hashes.SHA256()))
        kp = Path(self._dir.name) / "k.pem"
        self.cafile.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        kp.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                         serialization.PrivateFormat.PKCS8,
                                         serialization.NoEncryption()))
        port = free_ports(1)[0]
        self.url = f"https://127.0.0.1:{port}"
        self.proc = subprocess.Popen([sys.executable, "-c", BARE_SERVER, str(port),
                                      str(self.cafile), str(kp), json.dumps(self.sample)])
        return self

    async def client(self, plan: Plan) -> Http:
        """A session to the server, once it answers."""
        http = Http([self.url], ssl.create_default_context(cafile=str(self.cafile)),
                    limit=plan.get_clients)
        for _ in range(100):
            try:
                await http.request("GET", "/api/v1/namespaces/bench/configmaps/c0")
                return http
            except (aiohttp.ClientError, OSError):
                await asyncio.sleep(0.1)
        await http.close()
        raise RuntimeError("the bare ceiling server did not answer")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None
        self._dir.cleanup()


async def bare_gets(http: Http, plan: Plan, total: int) -> dict[str, Any]:
    async def get(i: int) -> None:
        await http.request("GET", f"/api/v1/namespaces/bench/configmaps/c{i % 100}")

    return await run_clients(plan.get_clients, total, get)


async def bare_ceiling(plan: Plan, bare: BareServer, log: Callable[[str], None]
                       ) -> dict[str, Any]:
    """The ceiling alone: ``plan.gets`` GETs of the bare server."""
    http = await bare.client(plan)
    try:
        log(f"bare gets x{plan.gets}")
        return {"get": trimmed(await bare_gets(http, plan, plan.gets))}
    finally:
        await http.close()


async def paired_gets(plan: Plan, get: Callable[[int], Awaitable[None]], bare: BareServer,
                      meter: CpuMeter) -> tuple[dict[str, Any], dict[str, Any]]:
    """The series' GETs and the bare ceiling's in GET_TURNS, ``plan.gets`` a side, pooled per
    side; CPU figures over the series' turns only."""
    http = await bare.client(plan)
    per_turn = max(1, plan.gets * 2 // len(GET_TURNS))  # plan.gets a side
    sides: dict[str, list[dict[str, Any]]] = {"A": [], "B": []}
    laps = meter.laps()
    try:
        # Not counted: every client's connection opened (a TLS handshake each) on both sides.
        await run_clients(plan.get_clients, plan.get_clients * 4, get)
        await bare_gets(http, plan, plan.get_clients * 4)
        for turn in GET_TURNS:
            if turn == "A":
                laps.start()
                sides["A"].append(await run_clients(plan.get_clients, per_turn, get))
                laps.stop()
            else:
                sides["B"].append(await bare_gets(http, plan, per_turn))
    finally:
        await http.close()
    series, ceiling = trimmed(pooled(sides["A"])), trimmed(pooled(sides["B"]))
    series["cpu"] = laps.per_op(series["ops"])
    return series, {"get": ceiling}


# -- series ---------------------------------------------------------------------------------------


def run_series(label: str, plan: Plan, base: Path, store: str,
               phases: frozenset[str] = frozenset(PHASES),
               bare: BareServer | None = None) -> dict[str, Any]:
    def log(msg: str) -> None:
        print(f"[{label}] {msg}", flush=True)

    cluster: Cluster | None = None
    servers: list[ApiServerProcess] = []
    try:
        endpoints: list[str] = []
        if store != "embedded":
            cls = RaftstoreCluster if store == "raftstore" else EtcdCluster
            cluster = cls(base / f"{store}-cluster", nodes=3)
            cluster.start(timeout=60)
            endpoints = [m.client_url for m in cluster.members]
            log(f"{store} x3 up")
        main = ApiServerProcess(base / f"{store}-api", etcd_servers=endpoints).start()
        servers.append(main)
        if store != "embedded":
            servers.append(replica_of(main, endpoints, base / f"{store}-api2"))
        log(f"{len(servers)} apiserver(s) up")
        ctx = main.ssl_context()
        result: dict[str, Any] = {"label": label}
        meter = CpuMeter([s.proc.pid for s in servers if s.proc is not None],
                         cluster.pids() if cluster is not None else [],
                         [m.metrics_url for m in cluster.members] if cluster is not None else [])
        result.update(asyncio.run(api_phases([s.url for s in servers], ctx, main.kubeconfig,
                                             plan, log, phases, meter, bare)))
        if "create" not in phases:
            return result
        if store == "embedded":
            result["raw"] = asyncio.run(raw_embedded_creates(plan.create_clients, plan.creates))
        else:
            result["raw"] = asyncio.run(raw_grpc_puts(
                [m.endpoint for m in cluster.members] if cluster else [],
                plan.create_clients, plan.creates))
        log(f"raw store puts/s: {result['raw']['per_s']}")
        return result
    finally:
        for s in servers:
            s.stop()
        if cluster is not None:
            cluster.stop()


def replica_of(main: ApiServerProcess, endpoints: list[str], base: Path) -> ApiServerProcess:
    pki = main.data_dir / "pki"
    return ApiServerProcess(
        base, program="plat-apiserver", etcd_servers=endpoints, kubeconfig=main.kubeconfig,
        extra_args=["--tls-cert-file", str(pki / "apiserver.crt"),
                    "--tls-private-key-file", str(pki / "apiserver.key"),
                    "--client-ca-file", str(pki / "ca.crt")],
    ).start()


def report(results: list[dict[str, Any]], bare: dict[str, Any]) -> str:
    rows: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
        ("creates/s, 32 clients", lambda r: r["create"]["per_s"]),
        ("create p50 ms", lambda r: r["create"]["p50_ms"]),
        ("create p99 ms", lambda r: r["create"]["p99_ms"]),
        ("raw store puts/s, 32 clients", lambda r: r["raw"]["per_s"]),
        ("creates / raw store", lambda r: round(r["create"]["per_s"] / r["raw"]["per_s"], 2)),
        ("gets/s, one replica", lambda r: r["get"]["per_s"]),
        ("bare ceiling gets/s, same turns", lambda r: r["bare"]["get"]["per_s"]),
        ("gets / bare ceiling", lambda r: round(r["get"]["per_s"] / r["bare"]["get"]["per_s"], 2)),
        ("gets / last bare ceiling", lambda r: round(r["get"]["per_s"] / bare["get"]["per_s"], 2)),
        ("get p99 ms", lambda r: r["get"]["p99_ms"]),
        ("list of 10,000 best ms", lambda r: r["list"]["best_ms"]),
        ("list median ms", lambda r: r["list"]["median_ms"]),
        ("watch p50 ms", lambda r: r["watch"]["p50_ms"]),
        ("watch p99 ms", lambda r: r["watch"]["p99_ms"]),
        ("watchers", lambda r: r["watch"]["watchers"]),
        ("watchers with gaps/missing", lambda r: r["watch"]["watchers_with_gaps_or_missing"]),
        ("server CPU ms per create", lambda r: r["create"]["cpu"]["servers_ms_per_op"]),
        ("store CPU ms per create", lambda r: r["create"]["cpu"]["store_ms_per_op"]),
        ("server CPU ms per get", lambda r: r["get"]["cpu"]["servers_ms_per_op"]),
        ("store CPU ms per get", lambda r: r["get"]["cpu"]["store_ms_per_op"]),
        ("store ranges per get", lambda r: r["get"]["cpu"].get("store_ranges_per_op", 0.0)),
        ("server CPU us per watch frame", lambda r: r["watch"]["cpu_us_per_frame"]["servers"]),
        ("store CPU us per watch frame", lambda r: r["watch"]["cpu_us_per_frame"]["store"]),
    ]
    labels = [r["label"] for r in results]
    width = max(len(n) for n, _ in rows) + 2
    cols = [max(len(lb), 10) + 2 for lb in labels]
    header = "".join(lb.rjust(c) for lb, c in zip(labels, cols, strict=True))
    lines = ["metric".ljust(width) + header]
    lines.append("-" * len(lines[0]))
    for name, get in rows:
        cells = []
        for r, c in zip(results, cols, strict=True):
            try:
                cells.append(str(get(r)).rjust(c))
            except (KeyError, TypeError, ZeroDivisionError):
                cells.append("-".rjust(c))
        lines.append(name.ljust(width) + "".join(cells))
    lines.append(f"last bare aiohttp ceiling gets/s (after every series): {bare['get']['per_s']} "
                 f"(p99 {bare['get']['p99_ms']} ms)")
    for r in results:
        for phase in ("create", "get", "list_load", "raw"):
            if r.get(phase, {}).get("failures"):
                lines.append(f"{r['label']}: {phase}: failures {r[phase]['failures']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    if args_in[:1] == ["--watch-child"]:
        return watch_child(args_in[1:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--only", default="embedded,raftstore,etcd",
                   help="comma list of series: embedded, raftstore, etcd")
    p.add_argument("--out", help="write the results as JSON here")
    p.add_argument("--phases", default=",".join(PHASES),
                   help="comma list of phases to run: " + ", ".join(PHASES)
                   + " (gets need the creates; the raw put rate runs with create)")
    args = p.parse_args(argv)
    plan = QUICK if args.quick else FULL
    phases = frozenset(args.phases.split(","))
    if not phases <= set(PHASES):
        p.error(f"--phases: unknown {sorted(phases - set(PHASES))}")
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-api-") as d:
        base = Path(d)
        labels = {"embedded": "plat-server (embedded)",
                  "raftstore": "2 apiservers / raftstore x3",
                  "etcd": "2 apiservers / etcd x3"}
        # The ceiling's server runs through the whole run: each series' GETs take turns with
        # it (GET_TURNS), and it is measured once more on its own after every series.
        server = BareServer(configmap("c0")).start() if "get" in phases else None
        try:
            for store in args.only.split(","):
                results.append(run_series(labels[store], plan, base, store, phases, server))
            bare = (asyncio.run(bare_ceiling(plan, server, print)) if server is not None
                    else {"get": {"per_s": float("nan"), "p99_ms": float("nan")}})
        finally:
            if server is not None:
                server.stop()
    table = report(results, bare)
    print(table)
    if args.out:
        Path(args.out).write_text(json.dumps({"plan": dataclasses.asdict(plan), "results": results,
                                              "bare": bare, "table": table,
                                              "cpus": os.cpu_count()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

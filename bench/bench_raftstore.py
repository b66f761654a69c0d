"""Benchmark: a 3-member raftstore against a 3-member etcd, on this machine, in one run.

    python bench/bench_raftstore.py --out bench-results.json          # about 12 minutes
    python bench/bench_raftstore.py --quick --out /tmp/quick.json     # about 6 minutes

Series (started through raftstore.launcher, loopback only):

  raftstore (durable)            fsync before acknowledging, the default
  raftstore (--unsafe-no-fsync)  no fsync: what the Python code costs without the disk
  etcd (durable)                 Debian's etcd 3.4, which always fsyncs

The two durable series, whose ratio the goals are about, run together: both clusters are
started fresh and stay up, and every phase alternates between them in turns (A B B A
A B B A: ``--rounds`` turns each, check perf ``--perf-rounds`` runs each), each system's
turns pooled. This machine is shared and its disk and CPU vary from minute to minute; one
series after the other put that drift into the ratio. An idle cluster costs 0.03 (raftstore)
to 0.05 (etcd) of a core. The no-fsync series runs alone afterwards; ``--sequential`` runs
every series alone, one after the other, as before.

Figures: ``etcdctl check perf`` (writes/s, slowest request, stddev); put latency p50/p99 at
1 and 64 concurrent clients (requests spread over the members in turn); linearizable range
throughput; watch events delivered per second to 100 watchers; RSS summed over the members
after loading 1 KiB keys.

The client runs on the same machine as the members (a single asyncio process, grpc.aio):
with few cores it competes with them for CPU, which caps the highest figures for both
systems. Every loop is bounded in count and in time. Nothing here is asserted; it prints a
table and writes JSON (``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import grpc  # noqa: E402

from raftstore.api.pb import rpc_pb2, rpc_pb2_grpc  # noqa: E402
from raftstore.launcher import Cluster, EtcdCluster, RaftstoreCluster  # noqa: E402
from raftstore.testing import etcdctl  # noqa: E402
from raftstore.testing.client import prefix_end  # noqa: E402


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    perf_load: str
    put_total: dict[int, int]  # concurrency -> number of puts
    put_seconds: float
    range_total: int
    range_seconds: float
    watchers: int
    watch_events: int
    watch_seconds: float
    rss_keys: int
    rss_seconds: float


FULL = Plan(perf_load="m", put_total={1: 2000, 64: 20000}, put_seconds=30,
            range_total=50000, range_seconds=20, watchers=100, watch_events=2000,
            watch_seconds=60, rss_keys=100_000, rss_seconds=300)
QUICK = Plan(perf_load="s", put_total={1: 300, 64: 3000}, put_seconds=15,
             range_total=10000, range_seconds=10, watchers=100, watch_events=300,
             watch_seconds=30, rss_keys=10_000, rss_seconds=90)


# -- check perf -----------------------------------------------------------------------------


def check_perf(cluster: Cluster, load: str) -> dict[str, Any]:
    res = etcdctl.run(cluster.endpoints, "check", "perf", f"--load={load}", timeout=240)
    text = res.stdout + "\n" + res.stderr
    out: dict[str, Any] = {"load": load, "rc": res.rc,
                           "verdict": "PASS" if re.search(r"^PASS$", text, re.M) else "FAIL"}
    if m := re.search(r"(\d+) writes/s", text):
        out["writes_per_s"] = int(m.group(1))
    if m := re.search(r"Slowest request took(?: too long:)? ([0-9.]+)s", text):
        out["slowest_s"] = float(m.group(1))
    if m := re.search(r"Stddev (?:is|too high:) ([0-9.]+)s", text):
        out["stddev_s"] = float(m.group(1))
    if "writes_per_s" not in out:
        out["error"] = text.strip()[-500:]
    return out


# -- gRPC load --------------------------------------------------------------------------------


class Channels:
    """A few aio channels per member; client ``i`` uses ``stub(i)`` (round-robin)."""

    def __init__(self, endpoints: list[str], per_endpoint: int = 2) -> None:
        self.channels = [grpc.aio.insecure_channel(ep) for ep in endpoints
                         for _ in range(per_endpoint)]
        self.kv = [rpc_pb2_grpc.KVStub(c) for c in self.channels]
        self.watch = [rpc_pb2_grpc.WatchStub(c) for c in self.channels]

    async def close(self) -> None:
        for c in self.channels:
            await c.close()


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    idx = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[idx]


async def run_clients(concurrency: int, total: int, seconds: float,
                      op: Callable[[int, int], Awaitable[None]]) -> dict[str, Any]:
    """``concurrency`` workers share ``total`` operations, stopping early after ``seconds``.
    Returns count, errors, elapsed, ops/s and latency percentiles (ms); ``latencies_s``
    holds every latency (seconds) for pooling rounds (see paired_phases)."""
    latencies: list[float] = []
    errors = 0
    error_samples: dict[str, int] = {}
    next_op = 0
    deadline = time.monotonic() + seconds

    async def worker(w: int) -> None:
        nonlocal next_op, errors
        while next_op < total and time.monotonic() < deadline:
            n = next_op
            next_op += 1
            t0 = time.perf_counter()
            try:
                await op(w, n)
            except grpc.aio.AioRpcError as exc:
                errors += 1
                sample = f"{exc.code().name}: {exc.details()}"
                error_samples[sample] = error_samples.get(sample, 0) + 1
                continue
            latencies.append(time.perf_counter() - t0)

    start = time.perf_counter()
    await asyncio.gather(*(worker(w) for w in range(concurrency)))
    return summarize(concurrency, latencies, errors, error_samples,
                     time.perf_counter() - start)


def summarize(concurrency: int, latencies: list[float], errors: int,
              error_samples: dict[str, int], elapsed: float) -> dict[str, Any]:
    latencies = sorted(latencies)
    return {
        "concurrency": concurrency,
        "count": len(latencies),
        "errors": errors,
        "error_kinds": dict(sorted(error_samples.items(), key=lambda kv: -kv[1])[:5]),
        "elapsed_s": round(elapsed, 3),
        "ops_per_s": round(len(latencies) / elapsed, 1) if elapsed else 0.0,
        "p50_ms": round(percentile(latencies, 0.50) * 1000, 3),
        "p99_ms": round(percentile(latencies, 0.99) * 1000, 3),
        "mean_ms": round(statistics.fmean(latencies) * 1000, 3) if latencies else None,
        "latencies_s": latencies,
    }


def pooled(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One summary of several rounds of run_clients: their latencies together, their
    counts over their summed elapsed time."""
    samples: dict[str, int] = {}
    for r in rounds:
        for kind, n in r["error_kinds"].items():
            samples[kind] = samples.get(kind, 0) + n
    out = summarize(rounds[0]["concurrency"], [x for r in rounds for x in r["latencies_s"]],
                    sum(r["errors"] for r in rounds), samples,
                    sum(r["elapsed_s"] for r in rounds))
    out["rounds"] = [{k: v for k, v in r.items() if k != "latencies_s"} for r in rounds]
    return out


async def put_latency(ch: Channels, concurrency: int, total: int,
                      seconds: float, tag: str = "") -> dict[str, Any]:
    value = b"x" * 256

    # Each request to the next channel (members in turn), as etcd's clientv3 balancer spreads
    # one client's requests over its endpoints. Before 2026-11-24 21:36 UTC a worker kept
    # one channel, so the one-client figure was the first member's alone, whatever its role
    # (a leader answers raftstore's puts about 0.5 ms sooner than a follower).
    async def op(w: int, n: int) -> None:
        key = f"/bench/put/c{concurrency}{tag}/{n:08d}".encode()
        await ch.kv[(w + n) % len(ch.kv)].Put(rpc_pb2.PutRequest(key=key, value=value),
                                               timeout=10)

    return await run_clients(concurrency, total, seconds, op)


async def range_throughput(ch: Channels, concurrency: int, total: int,
                           seconds: float) -> dict[str, Any]:
    await ch.kv[0].Put(rpc_pb2.PutRequest(key=b"/bench/range/k", value=b"v" * 256), timeout=10)

    async def op(w: int, n: int) -> None:
        await ch.kv[w % len(ch.kv)].Range(rpc_pb2.RangeRequest(key=b"/bench/range/k"),
                                          timeout=10)

    out = await run_clients(concurrency, total, seconds, op)
    out["linearizable"] = True
    return out


async def watch_fanout(ch: Channels, watchers: int, events: int,
                       seconds: float) -> dict[str, Any]:
    prefix = b"/bench/watch/"
    head = await ch.kv[0].Range(rpc_pb2.RangeRequest(key=b"/bench/none"), timeout=10)
    start_rev = head.header.revision + 1
    received = [0] * watchers
    calls = []
    created = 0
    for i in range(watchers):
        call = ch.watch[i % len(ch.watch)].Watch()
        await call.write(rpc_pb2.WatchRequest(create_request=rpc_pb2.WatchCreateRequest(
            key=prefix, range_end=prefix_end(prefix), start_revision=start_rev)))
        calls.append(call)
    for i, call in enumerate(calls):  # every watch is created before the first write
        resp = await asyncio.wait_for(call.read(), 10)
        created += int(resp.created)
        received[i] += len(resp.events)

    async def drain(i: int) -> None:
        call = calls[i]
        while received[i] < events:
            resp = await call.read()
            if resp is grpc.aio.EOF:
                return
            received[i] += len(resp.events)

    t0 = time.perf_counter()
    drains = [asyncio.ensure_future(drain(i)) for i in range(watchers)]

    async def op(w: int, n: int) -> None:
        await ch.kv[w % len(ch.kv)].Put(
            rpc_pb2.PutRequest(key=prefix + f"{n:06d}".encode(), value=b"e" * 128), timeout=10)

    writes = await run_clients(8, events, seconds, op)
    remaining = max(1.0, seconds - (time.perf_counter() - t0))
    _done, pending = await asyncio.wait(drains, timeout=remaining)
    elapsed = time.perf_counter() - t0
    for task in pending:
        task.cancel()
    for call in calls:
        call.cancel()
    delivered = sum(received)
    return {
        "watchers": watchers,
        "created": created,
        "events_written": writes["count"],
        "events_delivered": delivered,
        "complete_watchers": sum(1 for r in received if r >= writes["count"]),
        "elapsed_s": round(elapsed, 3),
        "delivered_per_s": round(delivered / elapsed, 1),
    }


async def load_keys(ch: Channels, n: int, seconds: float) -> dict[str, Any]:
    value = b"k" * 1024

    async def op(w: int, i: int) -> None:
        await ch.kv[w % len(ch.kv)].Put(
            rpc_pb2.PutRequest(key=f"/bench/rss/{i:07d}".encode(), value=value), timeout=20)

    return await run_clients(64, n, seconds, op)


# -- one series -------------------------------------------------------------------------------


async def grpc_phases(cluster: Cluster, plan: Plan, log: Callable[[str], None]) -> dict[str, Any]:
    ch = Channels(cluster.endpoints)
    out: dict[str, Any] = {}
    try:
        for c, total in sorted(plan.put_total.items()):
            log(f"put latency, {c} client(s), up to {total} puts / {plan.put_seconds:.0f}s")
            out[f"put_c{c}"] = await put_latency(ch, c, total, plan.put_seconds)
        log(f"linearizable range, 64 clients, up to {plan.range_total}")
        out["range_c64"] = await range_throughput(ch, 64, plan.range_total, plan.range_seconds)
        log(f"watch, {plan.watchers} watchers, {plan.watch_events} events")
        out["watch"] = await watch_fanout(ch, plan.watchers, plan.watch_events,
                                          plan.watch_seconds)
        out["rss_idle_bytes"] = cluster.rss_bytes()
        log(f"loading {plan.rss_keys} keys of 1 KiB (64 clients, at most {plan.rss_seconds:.0f}s)")
        load = await load_keys(ch, plan.rss_keys, plan.rss_seconds)
        await asyncio.sleep(2)
        out["load_1k"] = load
        out["rss_loaded_bytes"] = cluster.rss_bytes()
        out["rss_keys"] = load["count"]
    finally:
        await ch.close()
    return out


def member_events(cluster: Cluster, limit: int = 60) -> list[str]:
    """The lines of the members' logs that tell of elections, lost peers and stalls (for
    a run with failed requests: the data dir, and with it the logs, is removed after it)."""
    words = ("raft state", "leader is now", "took too long", "slow fdatasync", "lost", "stalled",
             "long gc pause",
             "became leader", "elected leader", "lost leader")
    out: list[str] = []
    for m in cluster.members:
        with contextlib.suppress(OSError):
            for line in m.log_path.read_text(errors="replace").splitlines():
                if any(w in line for w in words):
                    out.append(f"{m.name}: {line[:240]}")
    return out[-limit:]


def leader_name(cluster: Cluster) -> str | None:
    """The leader's member name (recorded: a client's latency depends on the member's role),
    or None if the members do not agree on one."""
    try:
        return cluster.members[cluster.leader(timeout=5.0)].name
    except Exception:  # noqa: BLE001 - a figure of the report, not a reason to fail the run
        return None


def run_series(label: str, cluster: Cluster, plan: Plan, skip_perf: bool) -> dict[str, Any]:
    def log(msg: str) -> None:
        print(f"  [{label}] {time.strftime('%H:%M:%S')} {msg}", file=sys.stderr, flush=True)

    result: dict[str, Any] = {"label": label, "kind": cluster.kind,
                              "durability": cluster.durability}
    log("starting 3 members")
    cluster.start(timeout=60)
    result["leader_at_start"] = leader_name(cluster)
    try:
        if not skip_perf:
            log(f"etcdctl check perf --load={plan.perf_load} (60 s)")
            result["check_perf"] = check_perf(cluster, plan.perf_load)
        result.update(asyncio.run(grpc_phases(cluster, plan, log)))
    except Exception as exc:  # noqa: BLE001 - report the series as failed, keep the others
        result["error"] = f"{type(exc).__name__}: {exc}"
        log(f"failed: {result['error']}")
    finally:
        result["leader_at_end"] = leader_name(cluster)
        result["member_events"] = member_events(cluster)
        cluster.stop()
    return result


# -- two systems in alternating rounds -------------------------------------------------------


def alternation(rounds: int) -> str:
    """``rounds`` turns each for systems A and B in the order A B B A A B B A ...: each goes
    first and second equally often, so a drift of the machine's load over the phase falls
    on both alike."""
    return "".join("A" if i % 4 in (0, 3) else "B" for i in range(2 * rounds))


def pooled_perf(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Several check perf runs of one system: mean writes/s and stddev, the slowest request
    of all; each run kept under ``runs``."""
    ok = [r for r in runs if "writes_per_s" in r]
    out: dict[str, Any] = {"load": runs[0]["load"], "runs": runs}
    if not ok:
        out["error"] = runs[-1].get("error", "no run finished")
        return out
    out["writes_per_s"] = round(statistics.fmean(r["writes_per_s"] for r in ok))
    out["slowest_s"] = max(r.get("slowest_s", 0.0) for r in ok)
    out["stddev_s"] = round(statistics.fmean(r.get("stddev_s", 0.0) for r in ok), 6)
    out["verdict"] = "PASS" if all(r["verdict"] == "PASS" for r in ok) else "FAIL"
    return out


def pooled_watch(runs: list[dict[str, Any]]) -> dict[str, Any]:
    elapsed = sum(r["elapsed_s"] for r in runs)
    delivered = sum(r["events_delivered"] for r in runs)
    return {
        "watchers": runs[0]["watchers"],
        "created": min(r["created"] for r in runs),
        "events_written": sum(r["events_written"] for r in runs),
        "events_delivered": delivered,
        "complete_watchers": min(r["complete_watchers"] for r in runs),
        "elapsed_s": round(elapsed, 3),
        "delivered_per_s": round(delivered / elapsed, 1) if elapsed else 0.0,
        "rounds": runs,
    }


async def paired_phases(clusters: dict[str, Cluster], plan: Plan, rounds: int,
                        log: Callable[[str], None]) -> dict[str, dict[str, Any]]:
    """grpc_phases on clusters "A" and "B" (both running), each phase in ``rounds`` turns
    per system (see alternation), the turns of a system pooled; the 1 KiB load for RSS runs
    once per system, A then B."""
    ch = {k: Channels(c.endpoints) for k, c in clusters.items()}
    out: dict[str, dict[str, Any]] = {k: {} for k in clusters}
    order = alternation(rounds)

    async def phase(name: str, run: Callable[[Channels, int], Awaitable[dict[str, Any]]],
                    pool: Callable[[list[dict[str, Any]]], dict[str, Any]]) -> None:
        log(f"{name}: {rounds} turns each, {order}")
        turns: dict[str, list[dict[str, Any]]] = {k: [] for k in clusters}
        for i, k in enumerate(order):
            turns[k].append(await run(ch[k], i))
        for k, runs in turns.items():
            out[k][name] = pool(runs)

    try:
        for c, total in sorted(plan.put_total.items()):
            await phase(f"put_c{c}", lambda chan, i, c=c, total=total: put_latency(  # type: ignore[misc]
                chan, c, total // rounds, plan.put_seconds / rounds, tag=f"t{i}"), pooled)
        await phase("range_c64", lambda chan, i: range_throughput(
            chan, 64, plan.range_total // rounds, plan.range_seconds / rounds), pooled)
        for k in clusters:
            out[k]["range_c64"]["linearizable"] = True
        await phase("watch", lambda chan, i: watch_fanout(
            chan, plan.watchers, plan.watch_events // rounds, plan.watch_seconds / rounds),
            pooled_watch)
        for k, cluster in clusters.items():
            out[k]["rss_idle_bytes"] = cluster.rss_bytes()
        for k, cluster in clusters.items():
            log(f"{k}: loading {plan.rss_keys} keys of 1 KiB (64 clients, "
                f"at most {plan.rss_seconds:.0f}s)")
            load = await load_keys(ch[k], plan.rss_keys, plan.rss_seconds)
            await asyncio.sleep(2)
            out[k]["load_1k"] = load
            out[k]["rss_loaded_bytes"] = cluster.rss_bytes()
            out[k]["rss_keys"] = load["count"]
    finally:
        for chan in ch.values():
            await chan.close()
    return out


def run_paired(series: dict[str, tuple[str, Cluster]], plan: Plan, skip_perf: bool,
               rounds: int, perf_rounds: int) -> list[dict[str, Any]]:
    """Two series ("A", "B": label and cluster) started together and measured in
    alternating turns (paired_phases; check perf ``perf_rounds`` times each, in the same
    order). Returns their results in A, B order."""
    tags = " / ".join(f"{k} = {label}" for k, (label, _) in series.items())

    def log(msg: str) -> None:
        print(f"  [{tags}] {time.strftime('%H:%M:%S')} {msg}", file=sys.stderr, flush=True)

    results = {k: {"label": label, "kind": c.kind, "durability": c.durability,
                   "paired": {"rounds": rounds, "perf_rounds": perf_rounds,
                              "order": alternation(rounds)}}
               for k, (label, c) in series.items()}
    clusters = {k: c for k, (_, c) in series.items()}
    started: list[Cluster] = []
    try:
        for k, c in clusters.items():
            log(f"starting {k}: 3 members")
            c.start(timeout=60)
            started.append(c)
            results[k]["leader_at_start"] = leader_name(c)
        if not skip_perf:
            perf: dict[str, list[dict[str, Any]]] = {k: [] for k in clusters}
            for k in alternation(perf_rounds):
                log(f"{k}: etcdctl check perf --load={plan.perf_load} (60 s)")
                perf[k].append(check_perf(clusters[k], plan.perf_load))
            for k, runs in perf.items():
                results[k]["check_perf"] = pooled_perf(runs)
        for k, phases in asyncio.run(paired_phases(clusters, plan, rounds, log)).items():
            results[k].update(phases)
    except Exception as exc:  # noqa: BLE001 - report both as failed, keep the other series
        for r in results.values():
            r["error"] = f"{type(exc).__name__}: {exc}"
        log(f"failed: {type(exc).__name__}: {exc}")
    finally:
        for k, c in clusters.items():
            if c in started:
                results[k]["leader_at_end"] = leader_name(c)
            results[k]["member_events"] = member_events(c)
        for c in started:
            c.stop()
    return list(results.values())


def without_raw(doc: Any) -> Any:
    """``doc`` without the raw latency lists (summaries only, for the JSON file)."""
    if isinstance(doc, dict):
        return {k: without_raw(v) for k, v in doc.items() if k != "latencies_s"}
    if isinstance(doc, list):
        return [without_raw(v) for v in doc]
    return doc


# -- report -----------------------------------------------------------------------------------


METRICS: list[tuple[str, Callable[[dict[str, Any]], Any], str]] = [
    ("check perf writes/s", lambda r: r["check_perf"]["writes_per_s"], "higher"),
    ("check perf slowest (s)", lambda r: r["check_perf"]["slowest_s"], "lower"),
    ("check perf stddev (s)", lambda r: r["check_perf"]["stddev_s"], "lower"),
    ("put p50 ms, 1 client", lambda r: r["put_c1"]["p50_ms"], "lower"),
    ("put p99 ms, 1 client", lambda r: r["put_c1"]["p99_ms"], "lower"),
    ("put p50 ms, 64 clients", lambda r: r["put_c64"]["p50_ms"], "lower"),
    ("put p99 ms, 64 clients", lambda r: r["put_c64"]["p99_ms"], "lower"),
    ("put/s, 64 clients", lambda r: r["put_c64"]["ops_per_s"], "higher"),
    ("linearizable range/s, 64 clients", lambda r: r["range_c64"]["ops_per_s"], "higher"),
    ("watch events/s to 100 watchers (8 writers)",
     lambda r: r["watch"]["delivered_per_s"], "higher"),
    ("RSS MiB before the 1 KiB load", lambda r: round(r["rss_idle_bytes"] / 2**20, 1),
     "lower"),
    ("RSS MiB after 1 KiB keys", lambda r: round(r["rss_loaded_bytes"] / 2**20, 1), "lower"),
    ("keys loaded for RSS", lambda r: r["rss_keys"], ""),
    ("failed puts while loading", lambda r: r["load_1k"]["errors"], "lower"),
    ("1 KiB puts/s while loading", lambda r: r["load_1k"]["ops_per_s"], "higher"),
]


def metric(series: dict[str, Any], get: Callable[[dict[str, Any]], Any]) -> Any:
    try:
        return get(series)
    except (KeyError, TypeError):
        return None


def report(results: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    etcd = next((r for r in results if r["kind"] == "etcd"), None)
    others = [r for r in results if r is not etcd]
    header = ["metric", *(r["label"] for r in results),
              *(f"{r['label']} / etcd" for r in others if etcd)]
    rows = [header]
    ratios: dict[str, dict[str, float | None]] = {}
    for name, get, _better in METRICS:
        row = [name]
        for r in results:
            v = metric(r, get)
            row.append("-" if v is None else f"{v:g}" if isinstance(v, float) else str(v))
        if etcd is not None:
            base = metric(etcd, get)
            for r in others:
                v = metric(r, get)
                ratio = (v / base) if isinstance(v, int | float) and base else None
                ratios.setdefault(r["label"], {})[name] = (
                    round(ratio, 3) if ratio is not None else None)
                row.append("-" if ratio is None else f"{ratio:.2f}x")
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                       for i, (cell, w) in enumerate(zip(row, widths, strict=True)))
             for row in rows]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines), ratios


def machine() -> dict[str, Any]:
    etcd_version = subprocess.run([EtcdCluster.available() and "/usr/bin/etcd" or "true",
                                   "--version"], capture_output=True, text=True).stdout
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "etcd": etcd_version.splitlines()[0] if etcd_version else None,
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="write the results as JSON here")
    parser.add_argument("--quick", action="store_true",
                        help="check perf --load=s and smaller counts (about 4 minutes)")
    parser.add_argument("--only", choices=["raftstore", "raftstore-nofsync", "etcd"],
                        action="append", help="run only these series (repeatable)")
    parser.add_argument("--skip-perf", action="store_true", help="skip etcdctl check perf")
    parser.add_argument("--sequential", action="store_true",
                        help="one series after the other, each alone on the machine, instead "
                             "of durable raftstore and etcd together in alternating turns")
    parser.add_argument("--rounds", type=int, default=4,
                        help="turns per system of each gRPC phase when paired (default 4)")
    parser.add_argument("--perf-rounds", type=int, default=2,
                        help="check perf runs per system when paired (default 2)")
    parser.add_argument("--base-dir", help="data dirs and member logs (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the base dir afterwards")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL

    base = Path(args.base_dir or tempfile.mkdtemp(prefix="raftstore-bench-"))
    wanted = args.only or ["raftstore", "raftstore-nofsync", "etcd"]
    if "etcd" in wanted and not EtcdCluster.available():
        print("etcd is not installed: skipping the etcd series", file=sys.stderr)
        wanted = [w for w in wanted if w != "etcd"]
    makers: dict[str, tuple[str, Callable[[], Cluster]]] = {
        "raftstore": ("raftstore (durable)", lambda: RaftstoreCluster(base / "rs", nodes=3)),
        "raftstore-nofsync": ("raftstore (--unsafe-no-fsync)",
                              lambda: RaftstoreCluster(base / "rs-nofsync", nodes=3,
                                                       unsafe_no_fsync=True)),
        "etcd": ("etcd 3.4 (durable)", lambda: EtcdCluster(base / "etcd", nodes=3)),
    }
    paired = not args.sequential and {"raftstore", "etcd"} <= set(wanted)

    print(f"benchmark ({'quick' if args.quick else 'full'}), data under {base}", file=sys.stderr)
    by_name: dict[str, dict[str, Any]] = {}
    if paired:
        print("series: raftstore (durable) and etcd 3.4 (durable), in alternating turns",
              file=sys.stderr, flush=True)
        a, b = run_paired({"A": (makers["raftstore"][0], makers["raftstore"][1]()),
                           "B": (makers["etcd"][0], makers["etcd"][1]())},
                          plan, args.skip_perf, args.rounds, args.perf_rounds)
        by_name["raftstore"], by_name["etcd"] = a, b
    for name in ("raftstore", "raftstore-nofsync", "etcd"):
        if name in wanted and name not in by_name:
            label, make = makers[name]
            print(f"series: {label}", file=sys.stderr, flush=True)
            by_name[name] = run_series(label, make(), plan, args.skip_perf)
    results = [by_name[n] for n in ("raftstore", "raftstore-nofsync", "etcd") if n in by_name]

    table, ratios = report(results)
    print()
    print(table)
    for r in results:
        print(f"{r['label']}: leader {r.get('leader_at_start')} at the start, "
              f"{r.get('leader_at_end')} at the end")
    for r in results:
        if "error" in r:
            print(f"{r['label']}: FAILED: {r['error']}")
        failed = False
        for phase, v in r.items():
            if isinstance(v, dict) and v.get("error_kinds"):
                failed = True
                print(f"{r['label']}: {phase}: failed requests: {v['error_kinds']}")
        if failed or "error" in r:
            for line in r.get("member_events", []):
                print(f"  {line}")
        cp = r.get("check_perf")
        if cp and "error" in cp:
            print(f"{r['label']}: check perf: {cp['error'][-200:]}")
    doc = {"machine": machine(), "plan": vars_plan(plan),
           "series": without_raw(results), "ratios_vs_etcd": ratios}
    if args.out:
        Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")
        print(f"\nwrote {args.out}")
    if not args.keep and not args.base_dir:
        shutil.rmtree(base, ignore_errors=True)
    return 0 if all("error" not in r for r in results) else 1


def vars_plan(plan: Plan) -> dict[str, Any]:
    return {f: getattr(plan, f) for f in plan.__dataclass_fields__}


if __name__ == "__main__":
    sys.exit(main())

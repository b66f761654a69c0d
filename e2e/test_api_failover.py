"""The API under failures: two API servers over a three-member store (raftstore, and etcd as
the reference) while store members or an API server are killed with SIGKILL and restarted.

Clients create objects, read each one back through the other replica, and watch from before
the first write, resuming from their last resourceVersion after a dropped connection (on the
other replica when theirs is gone), as an informer does. Whatever fails:

* every create that was acknowledged (201) is there afterwards, listed alike by both replicas;
* a read through the other replica after an acknowledgement never misses it (404): it answers
  the object or a Status error (the store has no leader for a moment);
* the watch delivers every object once, in resourceVersion order, with no 410 within the
  history;
* every failed request gets a Status body (503 or 504), and writes go on afterwards;
* no server logs a stack trace.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from apiserver.testing.launcher import ApiServerProcess
from raftstore.launcher import Cluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

NS = "failover"
WRITERS = 6
PHASE = 3.0  # seconds of load before a kill, while the process is down, after its restart
KINDS = ["raftstore", "etcd"]
PAUSE = 12.0  # seconds a paused leader stays stopped: past the client's 10 s call deadline
# Seconds the store's leader stays cut off from its peers: past etcd's request timeout (7 s),
# until which an etcd leader cut off holds the writes it took.
CUT = 10.0


@dataclass
class Outcome:
    acked: dict[str, int] = field(default_factory=dict)  # name -> resourceVersion
    acked_at: dict[str, float] = field(default_factory=dict)
    failures: list[tuple[int, Any]] = field(default_factory=list)  # (HTTP code, body)
    stale: list[str] = field(default_factory=list)
    reads: collections.Counter[int] = field(default_factory=collections.Counter)
    events: list[tuple[str, str, int]] = field(default_factory=list)  # type, name, rv
    event_at: dict[str, float] = field(default_factory=dict)  # name -> when its event came
    watch_errors: list[Any] = field(default_factory=list)
    reconnects: int = 0
    listed: dict[str, dict[str, int]] = field(default_factory=dict)  # url -> name -> rv
    resumed: float = 0.0  # when the last process was back
    exited: list[str] = field(default_factory=list)  # servers not running at the end
    start_rv: str = ""  # the list's resourceVersion before the first write

    def report(self, kind: str) -> str:
        return (f"{kind}: {len(self.acked)} creates acknowledged, {len(self.failures)} failed "
                f"({collections.Counter(code for code, _ in self.failures)}), reads back "
                f"{dict(self.reads)}, watch reconnects {self.reconnects}")


def _status(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw[:200]


def _configmaps(server: ApiServerProcess) -> str:
    return f"{server.url}/api/v1/namespaces/{NS}/configmaps"


@asynccontextmanager
async def _replicas(cluster: Cluster, base: Path) -> AsyncIterator[
        tuple[ApiServerProcess, ApiServerProcess]]:
    """plat-server and a plat-apiserver replica (one PKI) over ``cluster``."""
    servers = [m.client_url for m in cluster.members]
    a = await asyncio.to_thread(ApiServerProcess(base / "a", etcd_servers=servers).start)
    b = ApiServerProcess(base / "b", program="plat-apiserver", etcd_servers=servers,
                         kubeconfig=a.kubeconfig,
                         extra_args=["--cert-dir", str(base / "a" / "pki")])
    try:
        await asyncio.to_thread(b.start)
        try:
            yield a, b
        finally:
            await asyncio.to_thread(b.stop)
    finally:
        await asyncio.to_thread(a.stop)


async def _run(a: ApiServerProcess, b: ApiServerProcess, faults: Callable[[], Awaitable[None]],
               *, watch_through: ApiServerProcess) -> Outcome:
    """Writers create through ``a`` (through ``b`` once ``a`` is gone) and read back through
    the other; a watch from before the first write runs through ``watch_through`` (through the
    other once it is gone); ``faults`` runs meanwhile. Then both replicas list."""
    out = Outcome()
    connector = aiohttp.TCPConnector(ssl=a.ssl_context(), limit=0)
    async with aiohttp.ClientSession(connector=connector) as s:
        r = await s.post(f"{a.url}/api/v1/namespaces", json={"metadata": {"name": NS}})
        assert r.status == 201, await r.text()
        r = await s.get(_configmaps(b))
        start_rv = out.start_rv = (await r.json())["metadata"]["resourceVersion"]
        stop = asyncio.Event()
        expected: set[str] = set()  # filled once the writers are done: what the list holds
        seen: set[str] = set()

        def caught_up() -> bool:
            return bool(expected) and seen >= expected

        async def watcher() -> None:
            rv, servers = start_rv, [watch_through, a if watch_through is b else b]
            while not caught_up():
                try:
                    async with s.get(_configmaps(servers[0]), params={
                            "watch": "1", "resourceVersion": rv, "allowWatchBookmarks": "true",
                            "timeoutSeconds": "5"}) as resp:
                        if resp.status != 200:
                            out.watch_errors.append(_status(await resp.read()))
                            await asyncio.sleep(0.2)
                            continue
                        async for line in resp.content:
                            ev = json.loads(line)
                            if ev["type"] == "ERROR":
                                out.watch_errors.append(ev["object"])
                                break
                            rv = ev["object"]["metadata"]["resourceVersion"]
                            if ev["type"] != "BOOKMARK":
                                name = ev["object"]["metadata"]["name"]
                                out.events.append((ev["type"], name, int(rv)))
                                out.event_at.setdefault(name, time.monotonic())
                                seen.add(name)
                            if caught_up():
                                return
                except (TimeoutError, aiohttp.ClientError):
                    servers.reverse()  # that replica is gone: resume on the other
                    await asyncio.sleep(0.2)
                out.reconnects += 1

        async def writer(w: int) -> None:
            i, servers = 0, [a, b]
            while not stop.is_set():
                name = f"w{w}-{i}"
                i += 1
                try:
                    r = await s.post(_configmaps(servers[0]), json={"metadata": {"name": name}},
                                     timeout=aiohttp.ClientTimeout(total=60))
                    raw = await r.read()
                except (TimeoutError, aiohttp.ClientError) as e:
                    if isinstance(e, aiohttp.ClientConnectionError):
                        servers.reverse()  # that replica is gone: go on through the other
                    else:
                        out.failures.append((0, repr(e)))
                    await asyncio.sleep(0.05)
                    continue
                if r.status != 201:
                    out.failures.append((r.status, _status(raw)))
                    await asyncio.sleep(0.05)
                    continue
                out.acked[name] = int(json.loads(raw)["metadata"]["resourceVersion"])
                out.acked_at[name] = time.monotonic()
                if w == 0:  # read it back through the other replica, if it is up
                    try:
                        g = await s.get(f"{_configmaps(servers[1])}/{name}",
                                        timeout=aiohttp.ClientTimeout(total=60))
                        raw = await g.read()
                    except aiohttp.ClientConnectionError:
                        continue
                    out.reads[g.status] += 1
                    if g.status == 404:
                        out.stale.append(name)
                    elif g.status != 200:
                        out.failures.append((g.status, _status(raw)))

        watch = asyncio.create_task(watcher())
        writers = [asyncio.create_task(writer(w)) for w in range(WRITERS)]
        await asyncio.sleep(PHASE)
        await faults()
        out.resumed = time.monotonic() - PHASE
        # Writes must go on after the failures. etcd holds a proposal that was in flight when
        # its leader died until its request timeout (7 s here: "request timed out, possibly
        # due to previous leader failure"), longer than a phase: wait for the first write
        # acknowledged since, for a while.
        give_up = out.resumed + PHASE + 20
        while time.monotonic() < give_up and not any(
                at > out.resumed for at in out.acked_at.values()):
            await asyncio.sleep(0.1)
        stop.set()
        await asyncio.gather(*writers)
        for server in (a, b):
            r = await s.get(_configmaps(server))
            assert r.status == 200, await r.text()
            out.listed[server.url] = {it["metadata"]["name"]: int(it["metadata"]["resourceVersion"])
                                      for it in (await r.json())["items"]}
        expected.update(out.listed[a.url])
        await asyncio.wait_for(watch, 60)
    out.exited = [f"{srv.program}\n{srv.log_tail()}" for srv in (a, b)
                  if srv.proc is None or srv.proc.poll() is not None]
    return out


def _check(out: Outcome, servers: tuple[ApiServerProcess, ApiServerProcess]) -> None:
    # every acknowledged create is kept, and both replicas list the same objects
    first, second = out.listed.values()
    assert first == second
    missing = [n for n in out.acked if n not in first]
    assert not missing, f"{len(missing)} acknowledged creates lost: {missing[:5]}"
    assert all(first[n] == rv for n, rv in out.acked.items())
    # reads after an acknowledgement never miss it
    assert not out.stale, f"stale reads (404 after the create was acknowledged): {out.stale[:5]}"
    assert out.reads[200] > 0
    # the watch saw every object once, in order, and never needed a relist (no 410): a
    # watch may only be refused for a moment, as the store fails over
    for err in out.watch_errors:
        assert isinstance(err, dict) and err.get("kind") == "Status", err
        assert err.get("code") in (429, 503, 504), err
    names = [name for _, name, _ in out.events]
    assert sorted(names) == sorted(first), "the watch and the list disagree"
    assert all(t == "ADDED" for t, _, _ in out.events)
    versions = [rv for _, _, rv in out.events]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    assert [first[name] for name in names] == versions
    # failures are Status errors saying the store is unavailable or slow, never a bare 500
    for code, body in out.failures:
        assert code in (503, 504), (code, body)
        assert isinstance(body, dict) and body.get("kind") == "Status", body
        assert body.get("code") == code, body
    # writes went on after the failures
    assert any(at > out.resumed for at in out.acked_at.values())
    # both servers were up at the end (a writer that loses its replica moves on quietly, so
    # a replica that died of the store's failure would otherwise go unnoticed)
    assert not out.exited, f"exited: {out.exited}"
    # nothing unexpected was raised on the way: the servers logged no stack trace
    for server in servers:
        text = server.log_path.read_text(errors="replace")
        at = text.find("Traceback")
        assert at < 0, f"{server.program} logged a stack trace:\n{text[max(0, at - 300):at + 3000]}"


@pytest.mark.parametrize("kind", KINDS)
def test_store_members_killed_under_api_load(kind: str, cluster_factory: Callable[..., Cluster],
                                             tmp_path: Path) -> None:
    """The store's leader, then its first endpoint (where the replicas' own watches of the
    store began before they learned which member leads, so their watch caches re-watch), are
    killed and restarted in turn."""
    cluster = cluster_factory(kind, nodes=3)

    async def scenario() -> tuple[Outcome, tuple[ApiServerProcess, ApiServerProcess]]:
        async with _replicas(cluster, tmp_path) as (a, b):
            async def faults() -> None:
                leader = await asyncio.to_thread(cluster.leader)
                for victim in dict.fromkeys([leader, 0]):
                    await asyncio.to_thread(cluster.kill, victim)
                    await asyncio.sleep(PHASE)
                    await asyncio.to_thread(cluster.restart, victim)
                    await asyncio.sleep(PHASE)

            return await _run(a, b, faults, watch_through=b), (a, b)

    out, servers = asyncio.run(scenario())
    print("\n" + out.report(kind))
    _check(out, servers)


@pytest.mark.parametrize("kind", KINDS)
def test_api_server_killed_under_load(kind: str, cluster_factory: Callable[..., Cluster],
                                      tmp_path: Path) -> None:
    """The replica the writers and the watch use is killed, and later started again over the
    same store: the writers go on through the other, the watch resumes there from its last
    resourceVersion, and the restarted replica serves reads and lists at once; a watch on it
    from before its restart gets upstream's 410."""
    cluster = cluster_factory(kind, nodes=3)

    async def scenario() -> tuple[Outcome, Any, tuple[ApiServerProcess, ApiServerProcess]]:
        async with _replicas(cluster, tmp_path) as (a, b):
            async def faults() -> None:
                await asyncio.to_thread(a.kill)
                await asyncio.sleep(PHASE)
                await asyncio.to_thread(a.start)
                await asyncio.sleep(PHASE)

            out = await _run(a, b, faults, watch_through=a)
            # The restarted replica's watch cache begins at its first list: a watch from
            # before it gets upstream's 410 (the client relists), where the replica that ran
            # throughout served the same resume without one.
            connector = aiohttp.TCPConnector(ssl=a.ssl_context())
            async with aiohttp.ClientSession(connector=connector) as s, s.get(
                    _configmaps(a), params={"watch": "1", "resourceVersion": out.start_rv,
                                            "timeoutSeconds": "1"}) as r:
                assert r.status == 200
                too_old = json.loads((await r.read()).splitlines()[0])
            return out, too_old, (a, b)

    out, too_old, servers = asyncio.run(scenario())
    print("\n" + out.report(kind))
    _check(out, servers)
    assert too_old["type"] == "ERROR"
    assert too_old["object"]["code"] == 410
    assert too_old["object"]["message"].startswith(
        f"too old resource version: {out.start_rv} (")


@pytest.mark.parametrize("kind", KINDS)
def test_store_leader_paused_under_api_load(kind: str, cluster_factory: Callable[..., Cluster],
                                            tmp_path: Path) -> None:
    """The store's leader stops (SIGSTOP: a machine that hangs, or a long stall) longer than a
    call's deadline, then resumes: its sockets stay open and say nothing. Calls sent to it fail
    once their deadline passes; the replicas then use the members that elected a new leader."""
    cluster = cluster_factory(kind, nodes=3)

    async def scenario() -> tuple[Outcome, tuple[ApiServerProcess, ApiServerProcess]]:
        async with _replicas(cluster, tmp_path) as (a, b):
            async def faults() -> None:
                leader = await asyncio.to_thread(cluster.leader)
                pid = cluster.members[leader].pid
                assert pid is not None
                os.kill(pid, signal.SIGSTOP)
                try:
                    await asyncio.sleep(PAUSE)
                finally:
                    os.kill(pid, signal.SIGCONT)
                await asyncio.sleep(PHASE)

            return await _run(a, b, faults, watch_through=b), (a, b)

    out, servers = asyncio.run(scenario())
    print("\n" + out.report(kind))
    _check(out, servers)


def test_embedded_server_killed_under_load(tmp_path: Path) -> None:
    """plat-server on its embedded store is killed (SIGKILL) while clients create through it,
    and started again on the same data directory: every create it acknowledged is there,
    with the resourceVersion it was acknowledged with, and the server takes writes again."""
    server = ApiServerProcess(tmp_path / "embedded").start()
    try:
        async def load() -> dict[str, int]:
            acked: dict[str, int] = {}
            connector = aiohttp.TCPConnector(ssl=server.ssl_context(), limit=0)
            async with aiohttp.ClientSession(connector=connector) as s:
                r = await s.post(f"{server.url}/api/v1/namespaces",
                                 json={"metadata": {"name": NS}})
                assert r.status == 201, await r.text()
                gone = asyncio.Event()

                async def writer(w: int) -> None:
                    i = 0
                    while not gone.is_set():
                        name = f"w{w}-{i}"
                        i += 1
                        try:
                            r = await s.post(_configmaps(server), json={"metadata": {"name": name}})
                            raw = await r.read()
                        except aiohttp.ClientError:
                            return  # the server is gone
                        assert r.status == 201, raw
                        acked[name] = int(json.loads(raw)["metadata"]["resourceVersion"])

                writers = [asyncio.create_task(writer(w)) for w in range(WRITERS)]
                await asyncio.sleep(PHASE)
                await asyncio.to_thread(server.kill)
                gone.set()
                await asyncio.gather(*writers)
            return acked

        acked = asyncio.run(load())
        server.start()

        async def after() -> tuple[dict[str, int], int]:
            connector = aiohttp.TCPConnector(ssl=server.ssl_context())
            async with aiohttp.ClientSession(connector=connector) as s:
                r = await s.get(_configmaps(server))
                assert r.status == 200, await r.text()
                listed = {it["metadata"]["name"]: int(it["metadata"]["resourceVersion"])
                          for it in (await r.json())["items"]}
                r = await s.post(_configmaps(server), json={"metadata": {"name": "after"}})
                return listed, r.status

        listed, status = asyncio.run(after())
    finally:
        server.stop()
    print(f"\nembedded: {len(acked)} creates acknowledged before the kill, {len(listed)} listed "
          "after the restart")
    assert len(acked) > 0
    missing = [n for n in acked if n not in listed]
    assert not missing, f"{len(missing)} acknowledged creates lost: {missing[:5]}"
    assert all(listed[n] == rv for n, rv in acked.items())
    assert len(listed) - len(acked) <= WRITERS  # at most the creates in flight at the kill
    assert status == 201


@pytest.mark.parametrize("kind", KINDS)
def test_store_leader_cut_off_under_api_load(kind: str, cluster_factory: Callable[..., Cluster],
                                             tmp_path: Path) -> None:
    """A network partition cuts the store's leader off from the other two members
    (raftstore/testing/partition.py: links black-holed, connections left open); the replicas
    still reach it. It is member 0, made leader first: the replicas' preferred endpoint for
    writes, and the first endpoint, where their own watches of the store begin. Its writes
    cannot commit and its watch streams go quiet; the other two elect a leader. The API
    must go on during the partition, not only after it heals: creates are acknowledged, and
    the watch delivers those of the new leader, before the heal."""
    cluster = cluster_factory(kind, nodes=3, peer_proxy=True)
    proxy = cluster.proxy
    assert proxy is not None
    status = cluster.status(0)
    first = int(status["header"]["member_id"])  # type: ignore[index]
    if int(status["leader"]) != first:  # type: ignore[call-overload]
        cluster.ctl.check("move-leader", f"{first:x}")
    marks: dict[str, float] = {}

    async def scenario() -> tuple[Outcome, tuple[ApiServerProcess, ApiServerProcess]]:
        async with _replicas(cluster, tmp_path) as (a, b):
            async def faults() -> None:
                assert await asyncio.to_thread(cluster.leader) == 0
                proxy.isolate(0)
                marks["cut"] = time.monotonic()
                await asyncio.sleep(CUT)
                marks["healed"] = time.monotonic()
                proxy.heal()
                await asyncio.sleep(PHASE)

            return await _run(a, b, faults, watch_through=b), (a, b)

    out, servers = asyncio.run(scenario())
    cut, healed = marks["cut"], marks["healed"]
    during = sorted((at, n) for n, at in out.acked_at.items() if cut < at < healed)
    seen = sorted(out.event_at[n] for _, n in during
                  if out.event_at.get(n, healed) < healed)
    times = [cut] + [at for at, _ in during] + [healed]
    gap = max((b - a, a - cut) for a, b in zip(times, times[1:], strict=False))
    print("\n" + out.report(kind))
    print(f"{kind}: no create acknowledged for {gap[0]:.2f} s from {gap[1]:.2f} s after the cut")
    print(f"{kind}: during the {CUT:.0f} s partition {len(during)} creates acknowledged (the "
          f"first {during[0][0] - cut if during else float('nan'):.2f} s after the cut), "
          f"{len(seen)} of them watched before the heal (the first "
          f"{seen[0] - cut if seen else float('nan'):.2f} s after the cut)")
    # creates committed by the new leader: acknowledged after the longest stop
    resumed = gap[1] + gap[0] + cut
    seen_new = [n for at, n in during if at >= resumed and out.event_at.get(n, healed) < healed]
    print(f"{kind}: {len(seen_new)} creates of the new leader watched before the heal")
    _check(out, servers)
    assert during, "no create acknowledged while the store's leader was cut off"
    assert seen, "the watch delivered no create of the partition before it healed"
    # The replicas' own watches of the store were on the cut-off member: they require a
    # leader, so it ends them once it has had none for three election timeouts
    # (raftstore/api/requireleader.py, as etcd), and the replicas watch elsewhere.
    assert seen_new, "the watch delivered no create of the new leader before the heal"
    if kind == "raftstore":
        # A raftstore leader cut off steps down after leaderFallbackTimeout (2 s here) and
        # fails its writes that did not commit at once (Replication._fail_uncommitted); etcd
        # holds them until its request timeout (7 s), so creates stop for that long there.
        assert gap[0] < CUT / 2, f"no create acknowledged for {gap[0]:.2f} s"

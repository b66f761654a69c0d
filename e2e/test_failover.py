"""Fault tests: kill -9 the leader under write load; restart members behind a snapshot.

Each test runs against raftstore and, as the reference, against etcd (same assertions).
Run with ``-s`` to see the measured failover time.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest

from raftstore.launcher import Cluster
from raftstore.testing.client import Client, prefix_end

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

FAILOVER_BOUND = 3.0  # seconds, from the issue: a new leader accepts writes within 3 s
KINDS = ["raftstore", "etcd"]


@dataclass
class Acked:
    """Writes that a member acknowledged: key -> value (each key is written once)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    writes: dict[bytes, bytes] = field(default_factory=dict)
    errors: int = 0
    last: tuple[bytes, bytes] | None = None

    def add(self, key: bytes, value: bytes) -> None:
        with self.lock:
            self.writes[key] = value
            self.last = (key, value)


def stale_reader(endpoints: list[str], acked: Acked, stop: threading.Event,
                 stale: list[str], reads: list[int]) -> None:
    """Linearizable reads of the most recently acknowledged write, from every member in
    turn, throughout the failover: a read that starts after an ack and misses it is stale.
    Members that are down or without a leader answer errors, which are fine."""
    clients = [Client(ep, deadline=1.0) for ep in endpoints]
    i = 0
    try:
        while not stop.is_set():
            with acked.lock:
                last = acked.last
            if last is None:
                time.sleep(0.01)
                continue
            c = clients[i % len(clients)]
            i += 1
            try:
                kv = c.get(last[0])
            except grpc.RpcError:
                time.sleep(0.01)
                continue
            reads[0] += 1
            if kv is None or kv.value != last[1]:
                stale.append(f"{c.endpoint}: {last[0]!r} -> {kv}")
    finally:
        for c in clients:
            c.close()


def writer(endpoints: list[str], prefix: bytes, n: int, acked: Acked, stop: threading.Event,
           offset: int) -> None:
    """Writes distinct keys round-robin over the members; records every acknowledged one.
    A failed write is retried under a new key (its fate is unknown, so it is not recorded)."""
    clients = [Client(ep, deadline=1.0) for ep in endpoints]
    seq = 0
    try:
        while not stop.is_set():
            c = clients[(offset + seq) % len(clients)]
            key = prefix + f"w{n}/{seq:06d}".encode()
            value = f"{n}:{seq}".encode()
            seq += 1
            try:
                c.put(key, value)
            except grpc.RpcError:
                with acked.lock:
                    acked.errors += 1
                time.sleep(0.01)
                continue
            acked.add(key, value)
    finally:
        for c in clients:
            c.close()


def wait_until(pred: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if pred():
                return
        except grpc.RpcError as exc:
            last = exc
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last error: {last})")


def check_same_state(cluster: Cluster, prefix: bytes, timeout: float = 30.0) -> None:
    """Every running member's local state (serializable reads) and HashKV agree."""
    clients = [Client(m.endpoint) for m in cluster.members if m.alive()]

    def converged() -> bool:
        revs = {c.revision(serializable=True) for c in clients}
        if len(revs) != 1:
            return False
        dumps = [c.prefix(prefix, serializable=True) for c in clients]
        if any(d != dumps[0] for d in dumps):
            return False
        hashes = {(h.hash, h.compact_revision) for h in (c.hash_kv() for c in clients)}
        return len(hashes) == 1

    try:
        wait_until(converged, timeout, "members to converge (same revision, keys, HashKV)")
    finally:
        for c in clients:
            c.close()


@pytest.mark.parametrize("kind", KINDS)
def test_leader_kill_under_load(kind: str, cluster_factory: Callable[..., Cluster]) -> None:
    cluster = cluster_factory(kind, nodes=3)
    prefix = b"/failover/"
    leader = cluster.leader()
    acked = Acked()
    stop = threading.Event()
    threads = [threading.Thread(target=writer, args=(cluster.endpoints, prefix, n, acked, stop, n),
                                daemon=True) for n in range(4)]
    stale: list[str] = []
    reads = [0]
    threads.append(threading.Thread(target=stale_reader,
                                    args=(cluster.endpoints, acked, stop, stale, reads),
                                    daemon=True))
    for t in threads:
        t.start()
    time.sleep(2.0)
    before = len(acked.writes)
    assert before > 0, "no write acknowledged before the kill"

    survivors = [m.endpoint for m in cluster.members if m.index != leader]
    probes = [Client(ep, deadline=0.5) for ep in survivors]
    killed_at = time.monotonic()
    cluster.kill(leader)
    # time until a surviving member accepts (commits) a write
    recovered: float | None = None
    attempt = 0
    while time.monotonic() - killed_at < 15:
        c = probes[attempt % len(probes)]
        try:
            c.put(prefix + f"probe/{attempt}".encode(), b"p")
            recovered = time.monotonic() - killed_at
            acked.add(prefix + f"probe/{attempt}".encode(), b"p")
            break
        except grpc.RpcError:
            attempt += 1
            time.sleep(0.02)
    for c in probes:
        c.close()
    assert recovered is not None, "no new leader accepted a write within 15 s"
    print(f"[{kind}] new leader after {recovered:.2f}s")

    time.sleep(2.0)  # keep writing against the new leader
    stop.set()
    for t in threads:
        t.join(10)
    after = len(acked.writes)
    assert after > before, "no write acknowledged after the failover"
    print(f"[{kind}] acknowledged writes: {after} ({acked.errors} failed attempts), "
          f"{reads[0]} linearizable reads of the latest ack, {len(stale)} stale")
    assert not stale, f"stale linearizable reads: {stale[:5]}"

    # every acknowledged write is present, read linearizably from every surviving member
    for ep in survivors:
        with Client(ep, deadline=10) as c:
            stored = c.prefix(prefix)
        missing = [k for k, v in acked.writes.items() if stored.get(k) != v]
        assert not missing, f"{ep} lost {len(missing)} acknowledged writes, e.g. {missing[:3]}"

    # the killed member comes back and catches up
    cluster.restart(leader)
    check_same_state(cluster, prefix)
    with Client(cluster.members[leader].endpoint, deadline=10) as c:
        stored = c.prefix(prefix)
    assert all(stored.get(k) == v for k, v in acked.writes.items())

    # read-your-writes from any member: a read that starts after the ack sees the write
    clients = [Client(ep) for ep in cluster.endpoints]
    try:
        for i in range(30):
            key, value = prefix + f"ryw/{i}".encode(), f"v{i}".encode()
            clients[i % 3].put(key, value)
            for c in clients:
                kv = c.get(key)
                assert kv is not None and kv.value == value, f"stale read from {c.endpoint}"
    finally:
        for c in clients:
            c.close()

    # The bound is the promise for raftstore. etcd is the comparison: its figure is
    # printed, not held to our bound (a run of this suite saw etcd take 3.06 s on a loaded
    # machine, which says nothing about our code).
    if kind == "raftstore":
        assert recovered < FAILOVER_BOUND, (
            f"failover took {recovered:.2f}s (bound {FAILOVER_BOUND}s)")


@pytest.mark.parametrize("kind", KINDS)
def test_restart_after_snapshot(kind: str, cluster_factory: Callable[..., Cluster]) -> None:
    cluster = cluster_factory(kind, nodes=3, snapshot_count=100)
    prefix = b"/snapcatchup/"
    leader = cluster.leader()
    follower = (leader + 1) % 3
    with Client(cluster.members[leader].endpoint) as c:
        for i in range(20):
            c.put(prefix + f"before/{i:04d}".encode(), b"b")
    cluster.kill(follower)

    live = [m.endpoint for m in cluster.members if m.index != follower]
    written: dict[bytes, bytes] = {}
    with Client(live[0], deadline=10) as c:
        for i in range(500):
            key, value = prefix + f"k/{i:04d}".encode(), (f"value-{i}-" * 8).encode()
            c.put(key, value)
            written[key] = value
        c.put(prefix + b"k/0000", b"overwritten")
        written[prefix + b"k/0000"] = b"overwritten"
        expected = c.prefix(prefix)
    assert len(expected) == 520

    cluster.restart(follower, timeout=60)
    check_same_state(cluster, prefix, timeout=60)
    with Client(cluster.members[follower].endpoint, deadline=10) as c:
        assert c.prefix(prefix, serializable=True) == expected
        assert c.prefix(prefix) == expected
        # and it serves new writes' reads too
        c.put(prefix + b"after", b"a")
    for ep in cluster.endpoints:
        with Client(ep) as c:
            kv = c.get(prefix + b"after")
            assert kv is not None and kv.value == b"a"


@pytest.mark.parametrize("kind", KINDS)
def test_paused_leader_serves_no_stale_read(
    kind: str, cluster_factory: Callable[..., Cluster]
) -> None:
    """A leader frozen (SIGSTOP) while the others elect a new leader and take a write still
    believes it leads when it wakes. A linearizable read sent to it right away must see the
    new write or fail. (It usually hears of the new term before the read arrives;
    tests/raftstore/test_replication.py holds a partitioned leader inside that window.)"""
    cluster = cluster_factory(kind, nodes=3)
    key = b"/paused-leader/k"
    old = cluster.leader()
    with Client(cluster.members[old].endpoint) as c:
        c.put(key, b"before")
    pid = cluster.members[old].pid
    assert pid is not None
    others = [m.endpoint for m in cluster.members if m.index != old]
    os.kill(pid, signal.SIGSTOP)
    try:
        clients = [Client(ep, deadline=1.0) for ep in others]
        try:
            deadline = time.monotonic() + 20
            while True:
                try:
                    clients[0].put(key, b"after")
                    break
                except grpc.RpcError:
                    if time.monotonic() > deadline:
                        raise
                    clients.reverse()
                    time.sleep(0.1)
        finally:
            for c in clients:
                c.close()
    finally:
        os.kill(pid, signal.SIGCONT)
    answers: list[bytes | None] = []
    with Client(cluster.members[old].endpoint, deadline=10.0) as c:
        end = time.monotonic() + 3
        while time.monotonic() < end:
            try:
                kv = c.get(key)
            except grpc.RpcError:
                continue
            answers.append(kv.value if kv is not None else None)
    assert answers, "the old leader answered no read within 3 s of waking"
    assert set(answers) == {b"after"}, answers


@pytest.mark.parametrize("kind", KINDS)
def test_every_member_killed_while_snapshots_are_written(
    kind: str, cluster_factory: Callable[..., Cluster]
) -> None:
    """kill -9 of every member, one after the other, under write load with snapshots every 50
    requests (raftstore appends a delta to its snapshot file each time, so a kill can land in
    an append): after a restart every acknowledged write is there, on every member, and the
    members agree."""
    cluster = cluster_factory(kind, nodes=3, snapshot_count=50)
    prefix = b"/killall/"
    acked = Acked()
    stop = threading.Event()
    threads = [threading.Thread(target=writer, args=(cluster.endpoints, prefix, n, acked, stop, n),
                                daemon=True) for n in range(4)]
    for t in threads:
        t.start()
    try:
        time.sleep(3.0)
        for m in cluster.members:
            cluster.kill(m.index)
            time.sleep(0.3)
    finally:
        stop.set()
        for t in threads:
            t.join(10)
    assert len(acked.writes) > 100, "too few writes acknowledged before the kills"
    for m in cluster.members:
        cluster.restart(m.index, wait=False)
    cluster.wait_ready(60)
    check_same_state(cluster, prefix, timeout=60)
    for ep in cluster.endpoints:
        with Client(ep, deadline=10) as c:
            stored = c.prefix(prefix)
        missing = [k for k, v in acked.writes.items() if stored.get(k) != v]
        assert not missing, f"{ep} lost {len(missing)} acknowledged writes, e.g. {missing[:3]}"


def same_state_at_a_revision(cluster: Cluster, prefix: bytes, expected: dict[bytes, bytes],
                             timeout: float = 60.0) -> None:
    """With writes going on: take the current revision R (a linearizable read), wait until
    every member has applied it, then every member holds the same keys under ``prefix`` at R
    (each read from its own state), the same HashKV at R, and every write of ``expected``
    (acknowledged before R was read)."""
    clients = [Client(m.endpoint, deadline=5.0) for m in cluster.members if m.alive()]
    try:
        rev = 0
        deadline = time.monotonic() + timeout
        while not rev:
            for c in clients:
                with contextlib.suppress(grpc.RpcError):
                    rev = c.revision()
                    break
            if not rev and time.monotonic() > deadline:
                raise AssertionError("no member answered a linearizable read")
        wait_until(lambda: all(c.revision(serializable=True) >= rev for c in clients),
                   max(1.0, deadline - time.monotonic()), f"every member to apply {rev}")
        dumps = []
        for c in clients:
            kvs, _ = c.range(prefix, prefix_end(prefix), serializable=True, revision=rev)
            dumps.append({kv.key: kv.value for kv in kvs})
        for c, d in zip(clients, dumps, strict=True):
            assert d == dumps[0], f"{c.endpoint} differs at revision {rev}"
        hashes = {c.endpoint: c.hash_kv(rev).hash for c in clients}
        assert len(set(hashes.values())) == 1, f"HashKV at {rev}: {hashes}"
        missing = [k for k, v in expected.items() if dumps[0].get(k) != v]
        assert not missing, f"lost {len(missing)} acknowledged writes, e.g. {missing[:3]}"
    finally:
        for c in clients:
            c.close()


@dataclass
class Timeline:
    """Each acknowledged write: (endpoint, started, ended) by monotonic time, beside Acked."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    acks: list[tuple[str, float, float]] = field(default_factory=list)


def bound_writer(endpoint: str, prefix: bytes, n: int, acked: Acked, timeline: Timeline,
                 stop: threading.Event) -> None:
    """Writes distinct keys through one member, with a deadline longer than a partition:
    a write stuck on a cut-off member is still waiting when the partition heals, so the
    member must then answer it (an error, or success only if the write really committed)."""
    seq = 0
    with Client(endpoint, deadline=15.0) as c:
        while not stop.is_set():
            key = prefix + f"p{n}/{seq:06d}".encode()
            value = f"{n}:{seq}".encode()
            seq += 1
            started = time.monotonic()
            try:
                c.put(key, value)
            except grpc.RpcError:
                with acked.lock:
                    acked.errors += 1
                time.sleep(0.05)
                continue
            ended = time.monotonic()
            acked.add(key, value)
            with timeline.lock:
                timeline.acks.append((endpoint, started, ended))


def write_through(endpoints: list[str], key: bytes, timeout: float) -> tuple[float, str]:
    """Put ``key`` through the first of ``endpoints`` that commits it; returns the seconds
    it took and that endpoint."""
    clients = [Client(ep, deadline=0.5) for ep in endpoints]
    began = time.monotonic()
    try:
        attempt = 0
        while time.monotonic() - began < timeout:
            c = clients[attempt % len(clients)]
            attempt += 1
            try:
                c.put(key, b"x")
                return time.monotonic() - began, c.endpoint
            except grpc.RpcError:
                time.sleep(0.02)
        raise AssertionError(f"no write committed through {endpoints} within {timeout}s")
    finally:
        for c in clients:
            c.close()


@pytest.mark.parametrize("kind", KINDS)
def test_network_partitions_under_load(kind: str,
                                       cluster_factory: Callable[..., Cluster]) -> None:
    """The members talk through a proxy that cuts links silently (packets dropped,
    connections left open: raftstore/testing/partition.py) while one writer per member and
    a linearizable reader run throughout. Three partitions, each healed before the next:

    1. the leader alone against the other two (clients still reach every member);
    2. a follower alone;
    3. every member alone (no majority anywhere).

    Throughout: a write started through a cut-off minority is never acknowledged while the
    partition lasts; a majority elects a leader and takes writes; no linearizable read is
    stale. After each heal: the members converge (same revision, keys and HashKV) and every
    acknowledged write is on every member."""
    cluster = cluster_factory(kind, nodes=3, peer_proxy=True)
    proxy = cluster.proxy
    assert proxy is not None
    prefix = b"/partition/"
    endpoints = cluster.endpoints
    acked, timeline = Acked(), Timeline()
    stop = threading.Event()
    threads = [threading.Thread(target=bound_writer,
                                args=(ep, prefix, n, acked, timeline, stop), daemon=True)
               for n, ep in enumerate(endpoints)]
    stale: list[str] = []
    reads = [0]
    threads.append(threading.Thread(target=stale_reader,
                                    args=(endpoints, acked, stop, stale, reads), daemon=True))
    for t in threads:
        t.start()
    # (cut-off endpoints, cut at, healed at) of each partition
    windows: list[tuple[set[str], float, float]] = []

    def acks_since(t: float) -> int:
        with timeline.lock:
            return sum(1 for _, started, _ in timeline.acks if started > t)

    def check_converged() -> None:
        with acked.lock:
            expected = dict(acked.writes)
        same_state_at_a_revision(cluster, prefix, expected)

    try:
        time.sleep(1.5)
        assert acked.writes, "no write acknowledged before the first partition"

        # 1. the leader cut off from both followers
        old = cluster.leader()
        proxy.isolate(old)
        cut = time.monotonic()
        majority = [m.endpoint for m in cluster.members if m.index != old]
        took, _ = write_through(majority, prefix + b"probe/1", timeout=15)
        print(f"[{kind}] leader cut off: the other two took a write after {took:.2f}s")
        # the writers bound to those two: etcd's hold a write forwarded to the lost leader
        # until its request timeout (about 7 s); raftstore's fail theirs when the leader's
        # connection is dropped
        wait_until(lambda: acks_since(cut) > 0, 20, "a writer's ack through the majority")
        print(f"[{kind}] leader cut off: the writers' first ack after "
              f"{time.monotonic() - cut:.2f}s")
        time.sleep(1.0)
        proxy.heal()
        windows.append(({cluster.members[old].endpoint}, cut, time.monotonic()))
        acked.add(prefix + b"probe/1", b"x")
        check_converged()

        # 2. a follower cut off
        leader = cluster.leader()
        follower = next(m.index for m in cluster.members if m.index != leader)
        proxy.isolate(follower)
        cut = time.monotonic()
        time.sleep(3.0)
        wait_until(lambda: acks_since(cut) > 0, 20, "a writer's ack through the majority")
        proxy.heal()
        windows.append(({cluster.members[follower].endpoint}, cut, time.monotonic()))
        check_converged()

        # 3. no majority anywhere
        proxy.partition()
        cut = time.monotonic()
        time.sleep(3.0)
        proxy.heal()
        windows.append((set(endpoints), cut, time.monotonic()))
        took, _ = write_through(endpoints, prefix + b"probe/3", timeout=20)
        acked.add(prefix + b"probe/3", b"x")
        print(f"[{kind}] after the three-way split: a write after {took:.2f}s")
    finally:
        stop.set()
        for t in threads:
            t.join(20)
    check_same_state(cluster, prefix)
    with Client(endpoints[0], deadline=10) as c:
        stored = c.prefix(prefix)
    missing = [k for k, v in acked.writes.items() if stored.get(k) != v]
    assert not missing, f"lost {len(missing)} acknowledged writes, e.g. {missing[:3]}"

    with timeline.lock:
        acks = list(timeline.acks)
    for cut_off, cut, healed in windows:
        # started after the cut, acknowledged before the heal, by a member cut off from a
        # majority: a write that no majority can have on disk
        bad = [(ep, started - cut, ended - cut) for ep, started, ended in acks
               if ep in cut_off and started > cut and ended < healed]
        assert not bad, f"acknowledged by a cut-off minority: {bad[:5]}"
    print(f"[{kind}] {len(acked.writes)} writes acknowledged ({acked.errors} failed), "
          f"{reads[0]} linearizable reads, {len(stale)} stale")
    assert not stale, f"stale linearizable reads: {stale[:5]}"


@pytest.mark.parametrize("kind", KINDS)
def test_streams_that_require_a_leader_end_on_a_cut_off_member(
    kind: str, cluster_factory: Callable[..., Cluster]
) -> None:
    """clientv3's WithRequireLeader (``hasleader`` metadata; Kubernetes' API server sets it on
    its watches): a member cut off from its peers ends such a watch once it has had no leader
    for three election timeouts, refuses new ones and unary calls that carry it at once, and
    keeps serving calls that do not (a write then waits for its deadline)."""
    from raftstore.api.pb import rpc_pb2, rpc_pb2_grpc

    cluster = cluster_factory(kind, nodes=3, peer_proxy=True)
    assert cluster.proxy is not None
    victim = cluster.leader()
    has_leader = (("hasleader", "true"),)
    stop = threading.Event()

    def requests() -> Any:
        yield rpc_pb2.WatchRequest(create_request=rpc_pb2.WatchCreateRequest(key=b"/rl"))
        stop.wait(60)

    with grpc.insecure_channel(cluster.members[victim].endpoint) as ch:
        watch = rpc_pb2_grpc.WatchStub(ch)
        kv = rpc_pb2_grpc.KVStub(ch)
        required = watch.Watch(requests(), metadata=has_leader, timeout=30)
        plain = watch.Watch(requests(), timeout=8)
        assert next(required).created and next(plain).created
        cut = time.monotonic()
        cluster.proxy.isolate(victim)
        try:
            with pytest.raises(grpc.RpcError) as err:
                next(required)
            ended = time.monotonic() - cut
            assert err.value.code() == grpc.StatusCode.UNAVAILABLE
            assert err.value.details() == "etcdserver: no leader"
            print(f"[{kind}] watch requiring a leader ended {ended:.2f}s after the cut")
            assert 2.0 < ended < 15.0
            with pytest.raises(grpc.RpcError) as err:
                next(watch.Watch(requests(), metadata=has_leader, timeout=5))
            assert err.value.details() == "etcdserver: no leader"
            with pytest.raises(grpc.RpcError) as err:
                kv.Put(rpc_pb2.PutRequest(key=b"/rl", value=b"x"), metadata=has_leader,
                       timeout=5)
            assert err.value.details() == "etcdserver: no leader"
            # the plain watch is still open: it ends only with the client's deadline (etcd's
            # server may see it pass first and answer UNKNOWN "context deadline exceeded")
            with pytest.raises(grpc.RpcError) as err:
                next(plain)
            assert err.value.code() in (grpc.StatusCode.DEADLINE_EXCEEDED,
                                        grpc.StatusCode.UNKNOWN), err.value
            assert "deadline" in (err.value.details() or "").lower(), err.value
        finally:
            stop.set()
            cluster.proxy.heal()


@pytest.mark.parametrize("kind", KINDS)
def test_a_cut_off_leader_with_writes_it_could_not_commit_catches_up(
    kind: str, cluster_factory: Callable[..., Cluster]
) -> None:
    """The leader is cut off while clients go on writing through it: it appends writes it
    cannot commit, steps down, and the others elect a leader and commit other writes at the
    same log positions. After the heal, with those clients still writing through it, the
    old leader must throw its conflicting entries away and catch up. raftstore's did not:
    pysyncobj's follower answered the new leader's probe with "one entry earlier" and the
    next append, already on its way, with "from the end of my log", which sent the leader
    back to the probe that had failed, for ever (Replication: _reject_conflict). The member
    stayed at its old revision, hearing heartbeats, and no write through it succeeded."""
    cluster = cluster_factory(kind, nodes=3, peer_proxy=True)
    assert cluster.proxy is not None
    status = cluster.status(0)
    first = int(status["header"]["member_id"])  # type: ignore[index]
    if int(status["leader"]) != first:  # type: ignore[call-overload]
        cluster.ctl.check("move-leader", f"{first:x}")
    prefix = b"/conflict/"
    acked: dict[bytes, bytes] = {}
    stop = threading.Event()

    def through_the_old_leader(t: int) -> None:
        with Client(cluster.members[0].endpoint, deadline=1) as c:
            i = 0
            while not stop.is_set():
                key, value = prefix + b"old-%d-%05d" % (t, i), b"v%d" % i
                i += 1
                try:
                    c.put(key, value)
                except grpc.RpcError:
                    continue
                acked[key] = value

    cluster.proxy.isolate(0)
    writers = [threading.Thread(target=through_the_old_leader, args=(t,), daemon=True)
               for t in range(4)]
    for w in writers:
        w.start()
    try:
        time.sleep(3)  # it appends, steps down; the others elect one of themselves
        with Client(cluster.members[1].endpoint, deadline=10) as c:
            written = 0
            while written < 1000:
                key = prefix + b"new-%05d" % written
                with contextlib.suppress(grpc.RpcError):
                    c.put(key, b"x" * 100)
                    acked[key] = b"x" * 100
                    written += 1
        before = len(acked)
        cluster.proxy.heal()
        time.sleep(3)
        through_it = len(acked) - before
    finally:
        stop.set()
        for w in writers:
            w.join(10)
    check_same_state(cluster, prefix)
    with Client(cluster.members[0].endpoint, deadline=10) as c:
        stored = c.prefix(prefix)
    missing = [k for k, v in acked.items() if stored.get(k) != v]
    assert not missing, f"lost {len(missing)} acknowledged writes, e.g. {missing[:3]}"
    print(f"[{kind}] {through_it} writes through the old leader in the 3 s after the heal")
    assert through_it > 0


@pytest.mark.parametrize("kind", KINDS)
def test_a_follower_that_cannot_hear_the_others(
    kind: str, cluster_factory: Callable[..., Cluster]
) -> None:
    """A one-way cut: a follower hears nothing, the others hear it. It times out and wants
    an election. The leader must stay the leader throughout, and writes go on. raftstore's
    members voted for it at each higher term it asked for (pysyncobj has neither etcd's
    CheckQuorum lease nor pre-vote), so the leader was deposed every second or two (writes
    stopped for 1-2 s three times in 20 s); now a member in its lease ignores such votes
    and the follower asks in a pre-vote first, so its term does not rise either, and the
    heal deposes nobody (etcd 3.4, without pre-vote, holds its leader during the cut but
    loses it at the heal, to the follower's higher term)."""
    cluster = cluster_factory(kind, nodes=3, peer_proxy=True)
    assert cluster.proxy is not None
    leader = cluster.leader()
    deaf = next(m.index for m in cluster.members if m.index != leader)
    hearing = [m.index for m in cluster.members if m.index != deaf]
    term_before = int(cluster.status(leader)["raftTerm"])  # type: ignore[call-overload]
    prefix = b"/deaf/"
    acked: dict[bytes, bytes] = {}
    stop = threading.Event()

    def write(t: int) -> None:
        with Client(cluster.members[hearing[t % 2]].endpoint, deadline=5) as c:
            i = 0
            while not stop.is_set():
                key = prefix + b"%d-%05d" % (t, i)
                i += 1
                with contextlib.suppress(grpc.RpcError):
                    c.put(key, b"x")
                    acked[key] = b"x"

    writers = [threading.Thread(target=write, args=(t,), daemon=True) for t in range(4)]
    for w in writers:
        w.start()
    leaders: set[int] = set()
    try:
        time.sleep(1)
        cluster.proxy.deafen(deaf)
        end = time.monotonic() + 5  # it times out after 1-2 s, again every 1-2 s
        while time.monotonic() < end:
            for i in hearing:
                with contextlib.suppress(Exception):
                    leaders.add(int(cluster.status(i, timeout=2)["leader"]))  # type: ignore[call-overload]
            time.sleep(0.3)
        during = len(acked)
        cluster.proxy.heal()
        time.sleep(2)
    finally:
        stop.set()
        for w in writers:
            w.join(10)
    first = int(cluster.status(leader)["header"]["member_id"])  # type: ignore[index]
    check_same_state(cluster, prefix)
    term_after = int(cluster.status(leader)["raftTerm"])  # type: ignore[call-overload]
    with Client(cluster.members[leader].endpoint, deadline=10) as c:
        stored = c.prefix(prefix)
    missing = [k for k, v in acked.items() if stored.get(k) != v]
    print(f"[{kind}] {during} writes during the cut; leaders seen {len(leaders)}; "
          f"term {term_before} -> {term_after} through the cut and the heal")
    assert not missing, f"lost {len(missing)} acknowledged writes, e.g. {missing[:3]}"
    assert during > 0
    assert leaders == {first}, f"the leader changed during the cut: {leaders}"
    if kind == "raftstore":
        assert term_after == term_before, "the cut or the heal started an election"


@pytest.mark.parametrize("kind", KINDS)
def test_one_link_between_the_leader_and_a_follower_fails(
    kind: str, cluster_factory: Callable[..., Cluster]
) -> None:
    """Only the link between the leader and one follower fails; each still reaches the other
    follower. The cut-off follower hears no leader and wants an election, and the other
    follower hears both. The leader keeps a majority through that follower, so it must stay
    the leader and writes go on: the middle follower, in its lease, ignores the cut-off
    one's votes (without the lease it adopted the higher term, stopped taking the leader's
    appends, and the leader had to step down)."""
    cluster = cluster_factory(kind, nodes=3, peer_proxy=True)
    assert cluster.proxy is not None
    leader = cluster.leader()
    far, middle = (m.index for m in cluster.members if m.index != leader)
    term_before = int(cluster.status(leader)["raftTerm"])  # type: ignore[call-overload]
    prefix = b"/onelink/"
    acked: dict[bytes, bytes] = {}
    stop = threading.Event()

    def write(t: int) -> None:
        with Client(cluster.members[(leader, middle)[t % 2]].endpoint, deadline=5) as c:
            i = 0
            while not stop.is_set():
                key = prefix + b"%d-%05d" % (t, i)
                i += 1
                with contextlib.suppress(grpc.RpcError):
                    c.put(key, b"x")
                    acked[key] = b"x"

    writers = [threading.Thread(target=write, args=(t,), daemon=True) for t in range(4)]
    for w in writers:
        w.start()
    leaders: set[int] = set()
    try:
        time.sleep(1)
        cluster.proxy.cut_link(leader, far)
        end = time.monotonic() + 5
        while time.monotonic() < end:
            for i in (leader, middle):
                with contextlib.suppress(Exception):
                    leaders.add(int(cluster.status(i, timeout=2)["leader"]))  # type: ignore[call-overload]
            time.sleep(0.3)
        during = len(acked)
        cluster.proxy.heal()
        time.sleep(2)
    finally:
        stop.set()
        for w in writers:
            w.join(10)
    first = int(cluster.status(leader)["header"]["member_id"])  # type: ignore[index]
    check_same_state(cluster, prefix)
    term_after = int(cluster.status(leader)["raftTerm"])  # type: ignore[call-overload]
    with Client(cluster.members[leader].endpoint, deadline=10) as c:
        stored = c.prefix(prefix)
    missing = [k for k, v in acked.items() if stored.get(k) != v]
    print(f"[{kind}] {during} writes during the cut; leaders seen {len(leaders)}; "
          f"term {term_before} -> {term_after} through the cut and the heal")
    assert not missing, f"lost {len(missing)} acknowledged writes, e.g. {missing[:3]}"
    assert during > 0
    assert leaders == {first}, f"the leader changed during the cut: {leaders}"
    if kind == "raftstore":
        assert term_after == term_before, "the cut or the heal started an election"


@pytest.mark.parametrize("kind", KINDS)
def test_a_leader_that_cannot_hear_its_followers(
    kind: str, cluster_factory: Callable[..., Cluster]
) -> None:
    """A one-way cut (raftstore/testing/partition.py ``deafen``): the leader's appends and
    heartbeats reach its followers, their answers never reach it. It can commit nothing, and
    the followers, who still hear it, have no reason of their own to elect another. The
    cluster must get past it: the leader steps down for want of answers, the other two elect
    a leader and take writes, no acknowledged write is lost, no read is stale; after the
    heal the members converge."""
    cluster = cluster_factory(kind, nodes=3, peer_proxy=True)
    assert cluster.proxy is not None
    prefix = b"/deaf/"
    endpoints = cluster.endpoints
    acked, timeline = Acked(), Timeline()
    stop = threading.Event()
    threads = [threading.Thread(target=bound_writer,
                                args=(ep, prefix, n, acked, timeline, stop), daemon=True)
               for n, ep in enumerate(endpoints)]
    stale: list[str] = []
    reads = [0]
    threads.append(threading.Thread(target=stale_reader,
                                    args=(endpoints, acked, stop, stale, reads), daemon=True))
    for t in threads:
        t.start()
    try:
        time.sleep(1.5)
        old = cluster.leader()
        cluster.proxy.deafen(old)
        cut = time.monotonic()
        others = [m.endpoint for m in cluster.members if m.index != old]
        took, _ = write_through(others, prefix + b"probe", timeout=30)
        acked.add(prefix + b"probe", b"x")
        print(f"[{kind}] leader deaf: the other two took a write after {took:.2f}s")

        def writers_resumed() -> bool:
            with timeline.lock:
                return any(started > cut for _, started, _ in timeline.acks)

        # etcd's followers hold a write forwarded to the deaf leader until their request
        # timeout (7 s); raftstore's fail it when they see another leader
        wait_until(writers_resumed, 20, "a writer's ack after the cut")
        print(f"[{kind}] leader deaf: the writers' first ack after "
              f"{time.monotonic() - cut:.2f}s")
        time.sleep(1.0)
        cluster.proxy.heal()
    finally:
        stop.set()
        for t in threads:
            t.join(20)
    check_same_state(cluster, prefix)
    with Client(endpoints[0], deadline=10) as c:
        stored = c.prefix(prefix)
    missing = [k for k, v in acked.writes.items() if stored.get(k) != v]
    assert not missing, f"lost {len(missing)} acknowledged writes, e.g. {missing[:3]}"
    print(f"[{kind}] {len(acked.writes)} writes acknowledged ({acked.errors} failed), "
          f"{reads[0]} linearizable reads, {len(stale)} stale")
    assert not stale, f"stale linearizable reads: {stale[:5]}"


WRITERS = 8


@pytest.mark.parametrize("catch_up", ["snapshot", "log"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_watch_on_a_member_that_catches_up(
    kind: str, catch_up: str, cluster_factory: Callable[..., Cluster]
) -> None:
    """A follower is cut off while the others commit 2,000 writes (8,000 for the log case)
    from 8 clients. After the heal it catches up by installing a snapshot (the others
    snapshot every 100 requests and drop their logs) or by replaying the leader's log (the
    default snapshot count). A watch on it, open throughout, gets every one of those
    events, in order, and is not cancelled. raftstore
    cancelled it as a slow consumer: before sending one event through a snapshot, and after
    about 200 through the log (a member applies entries faster than a stream sends)."""
    from raftstore.api.pb import rpc_pb2, rpc_pb2_grpc

    cluster = cluster_factory(kind, nodes=3, peer_proxy=True,
                              snapshot_count=100 if catch_up == "snapshot" else None)
    # a snapshot's catch-up needs over 1,024 missed revisions; a log replay a large burst
    per_writer = 250 if catch_up == "snapshot" else 1000
    assert cluster.proxy is not None
    leader = cluster.leader()
    victim = next(m.index for m in cluster.members if m.index != leader)
    prefix = b"/catchup/"
    stop = threading.Event()
    got: list[tuple[bytes, int]] = []
    ended: list[str] = []

    def requests() -> Any:
        yield rpc_pb2.WatchRequest(create_request=rpc_pb2.WatchCreateRequest(
            key=prefix, range_end=prefix_end(prefix)))
        stop.wait(120)

    def read(responses: Any) -> None:
        try:
            for r in responses:
                if r.canceled:
                    ended.append(f"canceled: {r.cancel_reason}")
                got.extend((e.kv.key, e.kv.mod_revision) for e in r.events)
        except grpc.RpcError as exc:
            ended.append(f"{exc.code()}: {exc.details()}")

    with grpc.insecure_channel(cluster.members[victim].endpoint) as ch:
        responses = rpc_pb2_grpc.WatchStub(ch).Watch(requests(), timeout=90)
        assert next(responses).created
        reader = threading.Thread(target=read, args=(responses,), daemon=True)
        reader.start()
        try:
            cluster.proxy.isolate(victim)
            others = [m.endpoint for m in cluster.members if m.index != victim]
            written: list[bytes] = []

            def write(t: int) -> None:
                with Client(others[t % 2], deadline=10) as c:
                    for i in range(per_writer):
                        c.put(prefix + b"%d-%05d" % (t, i), b"v" * 100)
                        written.append(prefix + b"%d-%05d" % (t, i))

            writers = [threading.Thread(target=write, args=(t,)) for t in range(WRITERS)]
            for t in writers:
                t.start()
            for t in writers:
                t.join(120)
            cluster.proxy.heal()
            with Client(others[0], deadline=10) as c:
                c.put(prefix + b"last", b"x")
            wait_until(lambda: bool(got) and got[-1][0] == prefix + b"last" or bool(ended),
                       60, "the watch to deliver the write after the heal")
        finally:
            stop.set()
            responses.cancel()
            reader.join(10)
    assert not [e for e in ended if "CANCELLED" not in e], ended
    keys = [k for k, _ in got]
    assert len(written) == WRITERS * per_writer
    assert sorted(keys[:-1]) == sorted(written) and keys[-1] == prefix + b"last"
    for n in range(WRITERS):  # each writer's keys in the order it wrote them
        mine = [k for k in keys if k.startswith(prefix + b"%d-" % n)]
        assert mine == [prefix + b"%d-%05d" % (n, i) for i in range(per_writer)]
    revs = [r for _, r in got]
    assert revs == sorted(set(revs))
    print(f"[{kind}] the watch on the member that caught up through its {catch_up} "
          f"delivered {len(got)} events")

"""The launcher itself: port conflicts at start, kill/restart, leader, RSS."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from raftstore import launcher
from raftstore.launcher import Cluster, EtcdCluster
from raftstore.testing.fixtures import raftstore_class, require_etcd, require_raftstore

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("kind", ["raftstore", "etcd"])
def test_start_retries_on_port_conflict(kind: str, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    if kind == "etcd":
        require_etcd()
        cls: type[Cluster] = EtcdCluster
    else:
        require_raftstore()
        cls = raftstore_class()
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    taken = busy.getsockname()[1]
    real = launcher.free_ports
    calls = []

    def first_one_taken(count: int) -> list[int]:
        calls.append(count)
        ports = real(count)
        return [taken, *ports[1:]] if len(calls) == 1 else ports

    monkeypatch.setattr(launcher, "free_ports", first_one_taken)
    try:
        with cls(tmp_path, nodes=1) as cluster:
            assert len(calls) >= 2, "the conflicting start was not retried"
            assert cluster.members[0].client_port != taken
            assert cluster.ctl.check("put", "k", "v").strip() == "OK"
    finally:
        busy.close()


@pytest.mark.parametrize("kind", ["raftstore", "etcd"])
def test_kill_restart_leader(kind: str, cluster_factory: Callable[..., Cluster]) -> None:
    cluster = cluster_factory(kind, nodes=3)
    assert len(cluster.endpoints) == 3
    leader = cluster.leader()
    assert cluster.rss_bytes() > 0
    cluster.ctl.check("put", "before", "1")
    follower = (leader + 1) % 3
    cluster.kill(follower)
    assert not cluster.members[follower].alive()
    assert cluster.leader() == leader  # two members still agree
    cluster.ctl.only(leader).check("put", "during", "2")
    cluster.restart(follower)
    out = cluster.ctl.only(follower).check("get", "during", "--print-value-only")
    assert out.strip() == "2"


def test_etcd_stop_needs_no_sigkill(tmp_path: Path) -> None:
    """An etcd leader stopped together with its followers waits for a leadership hand-off
    that cannot happen, past the stop timeout; stop() stops the followers first and lets the
    leader see them go, so every member exits from its SIGTERM (SIGKILL would show as -9).
    A follower restarted just before is the case where the leader was slowest to notice."""
    require_etcd()
    cluster = EtcdCluster(tmp_path, nodes=3)
    cluster.start(timeout=60)
    try:
        leader = cluster.leader()
        follower = (leader + 1) % 3
        cluster.kill(follower)
        cluster.restart(follower)
        cluster.ctl.only(follower).check("put", "k", "v")
        procs = [m.proc for m in cluster.members]
    finally:
        cluster.stop()
    codes = [p.returncode for p in procs if p is not None]
    assert len(codes) == 3
    assert all(code != -9 for code in codes), f"leader {leader}, exit codes {codes}"

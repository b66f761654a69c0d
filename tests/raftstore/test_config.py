"""Flags named as etcd's, their RAFTSTORE_* environment variables, and the refusals that keep
peers and clients safe."""

from __future__ import annotations

import subprocess
import sys

import pytest

from raftstore.config import ConfigError, parse

CLUSTER = "a=http://127.0.0.1:2380,b=http://127.0.0.1:2381,c=http://127.0.0.1:2382"


def test_etcd_flag_names() -> None:
    cfg = parse([
        "--name", "a", "--data-dir", "/tmp/x", "--listen-client-urls", "http://127.0.0.1:2379",
        "--advertise-client-urls", "http://127.0.0.1:2379",
        "--listen-peer-urls", "http://127.0.0.1:2380",
        "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
        "--initial-cluster", CLUSTER, "--initial-cluster-state", "new",
        "--snapshot-count", "500", "--listen-metrics-urls", "http://127.0.0.1:9100",
        "--unsafe-no-fsync",
    ])
    assert cfg.initial_cluster["c"] == ["http://127.0.0.1:2382"]
    assert cfg.snapshot_count == 500 and cfg.unsafe_no_fsync
    assert cfg.listen_metrics_urls == ["http://127.0.0.1:9100"]


def test_initial_cluster_state_reaches_replication() -> None:
    """existing: an empty member joins without a vote until it has caught up
    (tests/raftstore/test_replication.py)."""
    from raftstore.server import replication_config

    base = ["--name", "a", "--initial-cluster", CLUSTER,
            "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
            "--listen-peer-urls", "http://127.0.0.1:2380"]
    assert replication_config(parse([*base, "--initial-cluster-state", "existing"])).join_existing
    assert not replication_config(parse(base)).join_existing


def test_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAFTSTORE_NAME", "b")
    monkeypatch.setenv("RAFTSTORE_INITIAL_CLUSTER", CLUSTER)
    monkeypatch.setenv("RAFTSTORE_LISTEN_PEER_URLS", "http://127.0.0.1:2381")
    monkeypatch.setenv("RAFTSTORE_UNSAFE_NO_FSYNC", "true")
    cfg = parse([])
    assert cfg.name == "b" and cfg.unsafe_no_fsync
    assert cfg.initial_advertise_peer_urls == ["http://127.0.0.1:2381"]
    assert parse(["--name", "a", "--listen-peer-urls", "http://127.0.0.1:2380"]).name == "a"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--initial-cluster", "a=http://10.0.0.1:2380", "--name", "a",
          "--listen-peer-urls", "http://10.0.0.1:2380"], "--peer-password-file is required"),
        (["--listen-client-urls", "http://10.1.2.3:2379"], "must use https"),
        (["--listen-client-urls", "https://127.0.0.1:2379"], "--cert-file and --key-file"),
        (["--initial-cluster", "x=http://127.0.0.1:2380"], "no member named 'default'"),
        (["--initial-cluster", "garbage"], "is not name=URL"),
        (["--listen-peer-urls", "127.0.0.1"], "invalid URL"),
        (["--snapshot-count", "many"], "must be an integer"),
        # etcd's words for the same flags.
        (["--heartbeat-interval", "100", "--election-timeout", "400"],
         r"--election-timeout\[400ms\] should be at least as 5 times as "
         r"--heartbeat-interval\[100ms\]"),
        (["--election-timeout", "60000"],
         r"--election-timeout\[60000ms\] is too long, and should be set less than 50000ms"),
    ],
)
def test_refusals(args: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse(args)


def test_bad_flag_exits_2_with_message() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "raftstore", "--listen-client-urls", "http://10.1.2.3:2379"],
        capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 2
    assert "must use https" in out.stderr

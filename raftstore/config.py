"""Command-line flags of a raftstore member, named as etcd names them.

Every flag can also come from the environment as ``RAFTSTORE_<FLAG>`` (upper case, dashes as
underscores: ``RAFTSTORE_INITIAL_CLUSTER``), as containers expect; a flag on the command line
wins over the environment.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

ENV_PREFIX: Final = "RAFTSTORE_"


class ConfigError(Exception):
    """A flag value that cannot work; the process exits with the message and status 2."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    name: str
    data_dir: str
    listen_client_urls: list[str]
    advertise_client_urls: list[str]
    listen_peer_urls: list[str]
    initial_advertise_peer_urls: list[str]
    initial_cluster: dict[str, list[str]]
    initial_cluster_state: str
    initial_cluster_token: str
    peer_password: str | None
    snapshot_count: int
    listen_metrics_urls: list[str]
    unsafe_no_fsync: bool
    cert_file: str | None
    key_file: str | None
    heartbeat_interval_ms: int
    election_timeout_ms: int
    log_level: str


def _flag(parser: argparse.ArgumentParser, name: str, **kw: object) -> None:
    env = ENV_PREFIX + name.upper().replace("-", "_")
    default = kw.pop("default", None)
    if env in os.environ:
        raw = os.environ[env]
        if kw.get("action") == "store_true":
            default = raw.lower() in ("1", "true", "yes", "on")
        else:
            default = raw
    parser.add_argument("--" + name, default=default, **kw)  # type: ignore[arg-type]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="raftstore",
        description="A member of a Raft-replicated key-value store speaking the etcd v3 API.",
    )
    _flag(p, "name", default="default", help="human-readable name of this member")
    _flag(p, "data-dir", help="directory of the journal and snapshots (default: <name>.raftstore)")
    _flag(p, "listen-client-urls", default="http://localhost:2379",
          help="comma-separated URLs to serve clients on (https needs --cert-file/--key-file)")
    _flag(p, "advertise-client-urls", default=None,
          help="client URLs to advertise to the cluster (default: --listen-client-urls)")
    _flag(p, "listen-peer-urls", default="http://localhost:2380",
          help="URL to listen on for Raft peer traffic")
    _flag(p, "initial-advertise-peer-urls", default=None,
          help="this member's peer URL as the others reach it (default: --listen-peer-urls)")
    _flag(p, "initial-cluster", default=None,
          help="every member as name=peerURL, comma-separated (default: <name>=<peer URL>)")
    _flag(p, "initial-cluster-state", default="new", choices=["new", "existing"],
          help="new for a new cluster; existing to rejoin: with an empty --data-dir the member "
               "votes only once it has caught up from the leader")
    _flag(p, "initial-cluster-token", default="raftstore-cluster",
          help="cluster token, mixed into member and cluster ids")
    _flag(p, "peer-password-file",
          help="file holding the shared secret that authenticates and encrypts peer traffic; "
          "required when a peer URL is not loopback")
    _flag(p, "snapshot-count", default="10000",
          help="requests applied between snapshots (log entries, for a state without deltas)")
    _flag(p, "listen-metrics-urls", default="",
          help="comma-separated URLs serving /health and /metrics")
    _flag(p, "unsafe-no-fsync", action="store_true",
          help="never fsync the journal (tests and benchmarks only: a machine crash loses "
          "acknowledged writes)")
    _flag(p, "cert-file", help="TLS certificate for client URLs with https")
    _flag(p, "key-file", help="TLS key for client URLs with https")
    _flag(p, "heartbeat-interval", default="100", help="time (ms) of a heartbeat interval")
    _flag(p, "election-timeout", default="1000", help="time (ms) for an election to time out")
    _flag(p, "log-level", default="info", choices=["debug", "info", "warn", "error"],
          help="log level")
    return p


def _urls(raw: str | None) -> list[str]:
    return [u.strip() for u in (raw or "").split(",") if u.strip()]


def host_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.port is None:
        raise ConfigError(f"invalid URL {url!r}: want http(s)://host:port")
    return parts.hostname, parts.port


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        try:
            return all(
                ipaddress.ip_address(info[4][0]).is_loopback
                for info in socket.getaddrinfo(host, None)
            )
        except OSError:
            return False


_MAX_ELECTION_MS: Final = 50_000


def _int(name: str, raw: str, minimum: int) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"--{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ConfigError(f"--{name} must be at least {minimum}")
    return value


def parse(argv: Sequence[str] | None = None) -> Config:
    ns = build_parser().parse_args(argv)
    listen_client = _urls(ns.listen_client_urls)
    listen_peer = _urls(ns.listen_peer_urls)
    advertise_peer = _urls(ns.initial_advertise_peer_urls) or listen_peer
    if len(listen_peer) != 1 or len(advertise_peer) != 1:
        raise ConfigError("exactly one peer URL is supported per member")
    cluster: dict[str, list[str]] = {}
    for item in _urls(ns.initial_cluster) or [f"{ns.name}={advertise_peer[0]}"]:
        name, sep, url = item.partition("=")
        if not sep or not name or not url:
            raise ConfigError(f"--initial-cluster entry {item!r} is not name=URL")
        host_port(url)
        cluster.setdefault(name, []).append(url)
    if ns.name not in cluster:
        raise ConfigError(f"--initial-cluster has no member named {ns.name!r}")
    if sorted(cluster[ns.name]) != sorted(advertise_peer):
        raise ConfigError(
            f"--initial-cluster has {ns.name}={','.join(cluster[ns.name])} but "
            f"--initial-advertise-peer-urls is {','.join(advertise_peer)}"
        )
    for url in listen_client + listen_peer + _urls(ns.listen_metrics_urls):
        host_port(url)
    password = None
    if ns.peer_password_file:
        try:
            with open(ns.peer_password_file, encoding="utf-8") as f:
                password = f.read().strip()
        except OSError as e:
            raise ConfigError(f"cannot read --peer-password-file: {e.strerror}") from None
        if len(password) < 16:
            raise ConfigError("the peer password must be at least 16 characters")
    peer_hosts = [host_port(u)[0] for urls in cluster.values() for u in urls]
    peer_hosts.append(host_port(listen_peer[0])[0])
    if password is None and not all(is_loopback(h) for h in peer_hosts):
        raise ConfigError(
            "--peer-password-file is required when a peer URL is not loopback: peers "
            "authenticate and encrypt their traffic with it"
        )
    for url in listen_client + _urls(ns.listen_metrics_urls):
        host, _ = host_port(url)
        if url.startswith("http://") and not is_loopback(host):
            raise ConfigError(
                f"{url}: a listener that leaves loopback must use https (with --cert-file and "
                "--key-file)"
            )
    if any(u.startswith("https://") for u in listen_client) and not (
        ns.cert_file and ns.key_file
    ):
        raise ConfigError("https client URLs need --cert-file and --key-file")
    heartbeat_ms = _int("heartbeat-interval", ns.heartbeat_interval, 10)
    election_ms = _int("election-timeout", ns.election_timeout, 50)
    # etcd's checks and words (etcdmain's flag verification).
    if 5 * heartbeat_ms > election_ms:
        raise ConfigError(f"--election-timeout[{election_ms}ms] should be at least as 5 times "
                          f"as --heartbeat-interval[{heartbeat_ms}ms]")
    if election_ms > _MAX_ELECTION_MS:
        raise ConfigError(f"--election-timeout[{election_ms}ms] is too long, and should be "
                          f"set less than {_MAX_ELECTION_MS}ms")
    return Config(
        name=ns.name,
        data_dir=ns.data_dir or f"{ns.name}.raftstore",
        listen_client_urls=listen_client,
        advertise_client_urls=_urls(ns.advertise_client_urls) or listen_client,
        listen_peer_urls=listen_peer,
        initial_advertise_peer_urls=advertise_peer,
        initial_cluster=cluster,
        initial_cluster_state=ns.initial_cluster_state,
        initial_cluster_token=ns.initial_cluster_token,
        peer_password=password,
        snapshot_count=_int("snapshot-count", ns.snapshot_count, 10),
        listen_metrics_urls=_urls(ns.listen_metrics_urls),
        unsafe_no_fsync=bool(ns.unsafe_no_fsync),
        cert_file=ns.cert_file,
        key_file=ns.key_file,
        heartbeat_interval_ms=heartbeat_ms,
        election_timeout_ms=election_ms,
        log_level=ns.log_level,
    )

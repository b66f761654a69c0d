"""Start a local multi-member cluster of raftstore or of real etcd, on loopback.

Used by the tests (``tests/``, ``e2e/``), the benchmark (``bench/``) and by people who want
a cluster to poke at::

    python -m raftstore.launcher --nodes 3 --data-dir /tmp/rs
    python -m raftstore.launcher --nodes 3 --data-dir /tmp/etcd --etcd

Both kinds take etcd's flag names, so one :class:`Cluster` base builds the command lines;
the subclasses only differ in the program they run and in the flags etcd 3.4 lacks.

Ports: every member needs a client, a peer and a metrics port. They are picked by binding
port 0 on 127.0.0.1 (all of a cluster's sockets held open together so no two are equal) and
releasing them just before the members start. Another process can grab one in that window;
when a member then dies at start with "address already in use", the whole cluster is torn
down and started again on fresh ports (a member's ports cannot change alone: every peer's
``--initial-cluster`` names them). With ``peer_proxy=True`` a member also gets a fourth port:
it listens for its peers there and advertises its peer port, where a
:class:`~raftstore.testing.partition.PeerProxy` forwards, so that tests can cut the network
between members (``cluster.proxy.isolate(i)``, ``partition``, ``deafen``, ``heal``).

Member processes get SIGKILL when the thread that started them dies (``PR_SET_PDEATHSIG``,
only set when started from the main thread, because the signal follows the *thread*), so a
crashed test run leaves no orphans behind.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Final

from raftstore.testing import etcdctl
from raftstore.testing.partition import PeerProxy

ETCD_BIN: Final = os.environ.get("ETCD_BIN") or shutil.which("etcd") or "/usr/bin/etcd"
REPO_ROOT: Final = Path(__file__).resolve().parent.parent
_BIND_ERRORS: Final = ("address already in use", "eaddrinuse", "errno 98")
_START_ATTEMPTS: Final = 4


class ClusterError(RuntimeError):
    """A member failed to start or the cluster did not become ready in time."""


@dataclass(slots=True, kw_only=True)
class Member:
    """One member process; ``proc`` is None while it is not running."""

    index: int
    name: str
    client_port: int
    peer_port: int
    metrics_port: int
    data_dir: Path
    log_path: Path
    # The port the member listens on for its peers when that is not the one it advertises
    # (``peer_port``): a PeerProxy forwards between them (Cluster ``peer_proxy``).
    peer_listen_port: int | None = None
    proc: subprocess.Popen[bytes] | None = None
    log_file: IO[bytes] | None = field(default=None, repr=False)

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.client_port}"

    @property
    def client_url(self) -> str:
        return f"http://127.0.0.1:{self.client_port}"

    @property
    def peer_url(self) -> str:
        return f"http://127.0.0.1:{self.peer_port}"

    @property
    def peer_listen_url(self) -> str:
        return f"http://127.0.0.1:{self.peer_listen_port or self.peer_port}"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def free_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports that were free a moment ago."""
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def die_with_parent(argv: list[str]) -> list[str]:
    """``argv`` run so that the kernel kills it when the calling thread ends (the test run was
    killed, say): util-linux's ``setpriv --pdeathsig KILL``, which then execs it, so the pid is
    the program's own. Call it from the main thread only: the "parent" of PR_SET_PDEATHSIG is
    the thread that forked, and a worker thread's end would kill the child.

    Not a ``preexec_fn``: that makes subprocess fork the whole interpreter, and in a process
    whose gRPC event engine runs, gRPC's fork handlers restart its pollers in the child, where
    one aborted on a closed epoll descriptor before exec (a member "exited (-6)" at start, with
    "Epoll1Poller ... epoll_wait error: Bad file descriptor" in its log). Without one,
    subprocess uses vfork and exec at once."""
    setpriv = shutil.which("setpriv")
    if setpriv is None or threading.current_thread() is not threading.main_thread():
        return argv
    return [setpriv, "--pdeathsig", "KILL", "--", *argv]


class Cluster:
    """N members of one kind on loopback. Subclasses define :meth:`program` and flags.

    Not thread-safe: drive it from one thread (the tests' main thread)."""

    kind: str = "cluster"
    #: ``--initial-cluster-state`` given to a restarted member.
    restart_state: str = "new"

    def __init__(
        self,
        base_dir: str | os.PathLike[str],
        *,
        nodes: int = 3,
        unsafe_no_fsync: bool = False,
        snapshot_count: int | None = None,
        extra_args: list[str] | None = None,
        token: str | None = None,
        name_prefix: str = "m",
        peer_proxy: bool = False,
    ) -> None:
        if nodes < 1:
            raise ValueError("nodes must be >= 1")
        self.base_dir = Path(base_dir)
        self.nodes = nodes
        self.unsafe_no_fsync = unsafe_no_fsync
        self.snapshot_count = snapshot_count
        self.extra_args = list(extra_args or [])
        self.token = token or f"{self.kind}-{os.getpid()}-{int(time.time() * 1000)}"
        self.name_prefix = name_prefix
        self.members: list[Member] = []
        # With ``peer_proxy``, the members reach each other only through this proxy, which
        # can cut the network between them (raftstore/testing/partition.py).
        self.peer_proxy = peer_proxy
        self.proxy: PeerProxy | None = None

    # -- what differs per kind -------------------------------------------------------------

    def program(self) -> list[str]:
        raise NotImplementedError

    def kind_flags(self, member: Member) -> list[str]:
        return []

    @property
    def durability(self) -> str:
        return "--unsafe-no-fsync" if self.unsafe_no_fsync else "durable"

    # -- command line -------------------------------------------------------------------------

    def initial_cluster(self) -> str:
        return ",".join(f"{m.name}={m.peer_url}" for m in self.members)

    def command(self, member: Member, state: str = "new") -> list[str]:
        cmd = [
            *self.program(),
            "--name", member.name,
            "--data-dir", str(member.data_dir),
            "--listen-client-urls", member.client_url,
            "--advertise-client-urls", member.client_url,
            "--listen-peer-urls", member.peer_listen_url,
            "--initial-advertise-peer-urls", member.peer_url,
            "--initial-cluster", self.initial_cluster(),
            "--initial-cluster-state", state,
            "--initial-cluster-token", self.token,
            "--listen-metrics-urls", member.metrics_url,
        ]
        if self.snapshot_count is not None:
            cmd += ["--snapshot-count", str(self.snapshot_count)]
        return cmd + self.kind_flags(member) + self.extra_args

    def env(self) -> dict[str, str]:
        return dict(os.environ)

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def endpoints(self) -> list[str]:
        return [m.endpoint for m in self.members]

    @property
    def ctl(self) -> etcdctl.Etcdctl:
        return etcdctl.Etcdctl(self.endpoints)

    def _allocate(self) -> None:
        per = 4 if self.peer_proxy else 3
        ports = free_ports(per * self.nodes)
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.members = [
            Member(
                index=i,
                name=f"{self.name_prefix}{i}",
                client_port=ports[per * i],
                peer_port=ports[per * i + 1],
                metrics_port=ports[per * i + 2],
                peer_listen_port=ports[per * i + 3] if self.peer_proxy else None,
                data_dir=self.base_dir / f"{self.name_prefix}{i}.data",
                log_path=self.base_dir / f"{self.name_prefix}{i}.log",
            )
            for i in range(self.nodes)
        ]
        if self.proxy is not None:
            self.proxy.close()
            self.proxy = None
        if self.peer_proxy:
            self.proxy = PeerProxy()
            for m in self.members:
                assert m.peer_listen_port is not None
                self.proxy.add(m.index, ("127.0.0.1", m.peer_port),
                               ("127.0.0.1", m.peer_listen_port))

    def _spawn(self, member: Member, state: str) -> None:
        if member.alive():
            raise ClusterError(f"{member.name} is already running")
        if member.log_file is None or member.log_file.closed:
            member.log_file = open(member.log_path, "ab")  # noqa: SIM115 - kept for the process
        member.log_file.write(
            f"\n=== {time.strftime('%H:%M:%S')} start {member.name} ({state})\n".encode()
        )
        member.log_file.flush()
        member.proc = subprocess.Popen(
            die_with_parent(self.command(member, state)),
            stdin=subprocess.DEVNULL,
            stdout=member.log_file,
            stderr=subprocess.STDOUT,
            env=self.env(),
            cwd=str(self.base_dir),
        )

    def _bind_conflict(self) -> bool:
        for m in self.members:
            if m.proc is not None and m.proc.poll() is not None:
                tail = m.log_tail(60).lower()
                if any(e in tail for e in _BIND_ERRORS):
                    return True
        return False

    def start(self, timeout: float = 30.0) -> Cluster:
        """Start every member and wait until the cluster is ready (see :meth:`wait_ready`).

        Retries on fresh ports when a member could not bind. Raises :class:`ClusterError`
        with the members' log tails when it does not come up."""
        last: Exception | None = None
        for _attempt in range(_START_ATTEMPTS):
            try:
                self._allocate()
            except OSError as exc:  # the peer proxy could not bind a port taken meanwhile
                last = exc
                continue
            for m in self.members:
                if m.data_dir.exists():
                    shutil.rmtree(m.data_dir)
                self._spawn(m, "new")
            try:
                self.wait_ready(timeout)
                return self
            except ClusterError as exc:
                last = exc
                conflict = self._bind_conflict()
                self.stop()
                if not conflict:
                    raise
        raise ClusterError(f"could not start {self.kind} cluster: {last}")

    def wait_ready(self, timeout: float = 30.0) -> int:
        """Wait until every running member is healthy and all agree on one leader that is
        itself running; returns the leader's index. Raises :class:`ClusterError` if a member
        process exits meanwhile or the deadline passes."""
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        while True:
            for m in self.members:
                if m.proc is not None and (rc := m.proc.poll()) is not None:
                    raise ClusterError(self._report(f"{m.name} exited ({rc})"))
            try:
                # A short status timeout: a member that exits at start (a port taken) is
                # seen by the poll above, not after a long wait on whatever holds its port.
                leader = self._agreed_leader(status_timeout=2.0)
                if leader is not None and all(self._healthy(m) for m in self._running()):
                    return leader
                last = "no agreed leader" if leader is None else "a member is not healthy"
            except Exception as exc:  # noqa: BLE001 - keep polling until the deadline
                last = str(exc)
            if time.monotonic() > deadline:
                raise ClusterError(self._report(f"not ready after {timeout:.0f}s: {last}"))
            time.sleep(0.2)

    def _running(self) -> list[Member]:
        return [m for m in self.members if m.alive()]

    def _healthy(self, m: Member) -> bool:
        try:
            with urllib.request.urlopen(f"{m.metrics_url}/health", timeout=2) as resp:
                body = json.loads(resp.read() or b"{}")
                return resp.status == 200 and str(body.get("health")).lower() == "true"
        except (OSError, ValueError, urllib.error.URLError):
            return False

    def status(self, i: int, timeout: float = 5.0) -> dict[str, object]:
        """Member ``i``'s ``Maintenance.Status`` as ``etcdctl endpoint status -w json``
        prints it (``header``, ``leader``, ``raftIndex``, ``dbSize``, ...)."""
        res = etcdctl.run(
            [self.members[i].endpoint], "endpoint", "status", "-w", "json",
            f"--command-timeout={timeout:.0f}s", timeout=timeout + 2,
        )
        if res.rc != 0:
            raise ClusterError(f"status of {self.members[i].name}: {res.stderr.strip()}")
        entries = json.loads(res.stdout)
        return dict(entries[0]["Status"])

    def _agreed_leader(self, status_timeout: float = 5.0) -> int | None:
        ids: dict[int, int] = {}
        leaders: set[int] = set()
        for m in self._running():
            st = self.status(m.index, timeout=status_timeout)
            header = st["header"]
            assert isinstance(header, dict)
            ids[int(header["member_id"])] = m.index
            leaders.add(int(st.get("leader", 0)))  # type: ignore[call-overload]
        if len(leaders) != 1:
            return None
        (lid,) = leaders
        return ids.get(lid)

    def leader(self, timeout: float = 10.0) -> int:
        """Index of the member the running members agree is leader (waits up to
        ``timeout`` for an agreement)."""
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(ClusterError, KeyError, ValueError):
                found = self._agreed_leader()
                if found is not None:
                    return found
            if time.monotonic() > deadline:
                raise ClusterError(self._report("no agreed leader"))
            time.sleep(0.1)

    def kill(self, i: int, sig: int = signal.SIGKILL, timeout: float = 15.0) -> None:
        """Send ``sig`` to member ``i`` and wait for it to exit."""
        m = self.members[i]
        if m.proc is None:
            return
        if m.proc.poll() is None:
            m.proc.send_signal(sig)
            try:
                m.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                m.proc.kill()
                m.proc.wait()
        m.proc = None

    def restart(self, i: int, *, wait: bool = True, timeout: float = 30.0) -> None:
        """Start member ``i`` again with the same flags and data dir (killing it first if
        it still runs); with ``wait``, returns once the cluster is ready again."""
        self.kill(i)
        self._spawn(self.members[i], self.restart_state)
        if wait:
            self.wait_ready(timeout)

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM every member, SIGKILL those still alive after ``timeout``."""
        self._stop_members(self.members, timeout)
        if self.proxy is not None:
            self.proxy.close()
            self.proxy = None

    def _stop_members(self, members: list[Member], timeout: float) -> None:
        for m in members:
            if m.alive():
                assert m.proc is not None
                m.proc.terminate()
        deadline = time.monotonic() + timeout
        for m in members:
            if m.proc is not None:
                try:
                    m.proc.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    m.proc.kill()
                    m.proc.wait()
                m.proc = None
            if m.log_file is not None:
                m.log_file.close()
                m.log_file = None

    def pids(self) -> list[int]:
        return [m.pid for m in self.members if m.pid is not None]

    def rss_bytes(self) -> int:
        """Sum of VmRSS over the running members."""
        total = 0
        for pid in self.pids():
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        return total

    def _report(self, headline: str) -> str:
        parts = [f"{self.kind}: {headline}"]
        for m in self.members:
            state = "running" if m.alive() else "stopped"
            parts.append(f"--- {m.name} ({state}) {m.log_path}:\n{m.log_tail(15)}")
        return "\n".join(parts)

    def __enter__(self) -> Cluster:
        if not self.members or not any(m.alive() for m in self.members):
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class RaftstoreCluster(Cluster):
    """Members run ``python -m raftstore`` with this interpreter and this checkout."""

    kind = "raftstore"

    def program(self) -> list[str]:
        return [sys.executable, "-m", "raftstore"]

    def kind_flags(self, member: Member) -> list[str]:
        return ["--unsafe-no-fsync"] if self.unsafe_no_fsync else []

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        path = env.get("PYTHONPATH")
        env["PYTHONPATH"] = f"{REPO_ROOT}{os.pathsep}{path}" if path else str(REPO_ROOT)
        env.setdefault("PYTHONUNBUFFERED", "1")
        return env

    @staticmethod
    def available() -> bool:
        return (REPO_ROOT / "raftstore" / "__main__.py").exists()


class EtcdCluster(Cluster):
    """Members run the etcd binary (Debian's 3.4). etcd 3.4 has no ``--unsafe-no-fsync``
    (3.5 added it), so an EtcdCluster always fsyncs and refuses the option."""

    kind = "etcd"

    def __init__(self, base_dir: str | os.PathLike[str], **kwargs: object) -> None:
        if kwargs.get("unsafe_no_fsync"):
            raise ValueError("etcd 3.4 has no --unsafe-no-fsync; it always fsyncs")
        super().__init__(base_dir, **kwargs)  # type: ignore[arg-type]

    def program(self) -> list[str]:
        return [ETCD_BIN]

    def kind_flags(self, member: Member) -> list[str]:
        return ["--logger", "zap", "--log-outputs", "stderr"]

    def env(self) -> dict[str, str]:
        return {k: v for k, v in os.environ.items() if not k.startswith("ETCD")}

    @property
    def durability(self) -> str:
        return "durable"

    @staticmethod
    def available() -> bool:
        return os.access(ETCD_BIN, os.X_OK)

    def stop(self, timeout: float = 5.0) -> None:
        """The followers first, then the leader. An etcd leader told to stop first hands its
        leadership to a follower and waits for the hand-off; when the followers are stopping
        at the same moment it waits until that times out (about 7 s here) and is killed.
        Once it has seen its followers go, it has nobody to hand to and exits at once."""
        leader = self._leader_by_metrics()
        if leader is not None:
            self._stop_members([m for m in self.members if m.index != leader], timeout)
            deadline = time.monotonic() + min(timeout, 2.0)
            while time.monotonic() < deadline:
                active = self._metric_lines(self.members[leader], "etcd_network_active_peers")
                if active is None or all(float(v) <= 0 for v in active):
                    break
                time.sleep(0.02)
        super().stop(timeout)

    def _leader_by_metrics(self) -> int | None:
        """The running member whose metrics say it leads (``etcd_server_is_leader 1``), if
        one answers quickly; no agreement is needed here, only a good guess."""
        for m in self._running():
            if self._metric_lines(m, "etcd_server_is_leader") == ["1"]:
                return m.index
        return None

    @staticmethod
    def _metric_lines(m: Member, name: str) -> list[str] | None:
        """The values of metric ``name`` (one per label set) on member ``m``'s metrics
        endpoint, or None when it does not answer within a second."""
        if not m.alive():
            return None
        try:
            with urllib.request.urlopen(f"{m.metrics_url}/metrics", timeout=1) as resp:
                text = resp.read().decode("utf-8", "replace")
        except (OSError, ValueError, urllib.error.URLError):
            return None
        return [line.rsplit(" ", 1)[-1] for line in text.splitlines()
                if line.startswith(name) and line[len(name):len(name) + 1] in ("{", " ")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m raftstore.launcher",
        description="Start a local raftstore (or etcd) cluster on loopback until Ctrl-C.",
    )
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--data-dir", required=True,
                        help="base dir for the members' data dirs (wiped at start: the ports "
                             "are new every time) and their logs")
    parser.add_argument("--etcd", action="store_true", help="run real etcd instead")
    parser.add_argument("--unsafe-no-fsync", action="store_true")
    parser.add_argument("--snapshot-count", type=int)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to become ready")
    parser.add_argument("extra", nargs="*", help="extra member flags (after --)")
    args = parser.parse_args(argv)

    cls = EtcdCluster if args.etcd else RaftstoreCluster
    kwargs: dict[str, object] = {"nodes": args.nodes, "snapshot_count": args.snapshot_count,
                                 "extra_args": args.extra}
    if args.unsafe_no_fsync:
        kwargs["unsafe_no_fsync"] = True
    cluster = cls(args.data_dir, **kwargs)  # type: ignore[arg-type]

    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        cluster.start(timeout=args.timeout)
    except ClusterError as exc:
        print(exc, file=sys.stderr)
        return 1
    eps = ",".join(cluster.endpoints)
    print(f"{cluster.kind} cluster of {args.nodes} ({cluster.durability}) is ready")
    for m in cluster.members:
        print(f"  {m.name}: client {m.client_url}  peer {m.peer_url}  "
              f"metrics {m.metrics_url}  log {m.log_path}")
    print(f"endpoints: {eps}")
    print(f"try:  ETCDCTL_API=3 etcdctl --endpoints={eps} put foo bar")
    print("Ctrl-C stops the members.", flush=True)
    try:
        while not stop.wait(1.0):
            dead = [m.name for m in cluster.members if m.proc is not None and not m.alive()]
            if dead:
                print(f"member(s) exited: {', '.join(dead)}; stopping", file=sys.stderr)
                return 1
    finally:
        cluster.stop()
        print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How the launchers spawn members and API servers: killed with the process that started
them (``die_with_parent``), and without forking the interpreter (no ``preexec_fn``), which
in a process with a running gRPC event engine aborted children before exec."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

from raftstore.launcher import die_with_parent

pytestmark = pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_the_child_dies_with_the_process_that_started_it() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c",
         "import subprocess, sys, time\n"
         "from raftstore.launcher import die_with_parent\n"
         "p = subprocess.Popen(die_with_parent(['sleep', '60']))\n"
         "print(p.pid, flush=True)\n"
         "time.sleep(60)\n"],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # setpriv execs sleep under the same pid
            with open(f"/proc/{child}/cmdline", "rb") as f:
                if f.read().split(b"\0")[0].endswith(b"sleep"):
                    break
            time.sleep(0.02)
        assert _alive(child)
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child)
    finally:
        parent.kill()
        parent.wait(10)


def test_only_the_main_thread_asks_for_it() -> None:
    argv = ["true"]
    assert die_with_parent(argv)[-1] == "true" and die_with_parent(argv)[0].endswith("setpriv")
    seen: list[list[str]] = []
    t = threading.Thread(target=lambda: seen.append(die_with_parent(argv)))
    t.start()
    t.join()
    assert seen == [argv]  # a worker thread's end would kill the child


def test_spawning_does_not_fork_the_interpreter(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: object) -> None:
    from raftstore import launcher

    calls: list[dict[str, object]] = []
    real = subprocess.Popen

    class Spy(real):  # type: ignore[misc, valid-type]
        def __init__(self, *args: object, **kwargs: object) -> None:
            calls.append(kwargs)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(launcher.subprocess, "Popen", Spy)
    cluster = launcher.RaftstoreCluster(str(tmp_path), nodes=1)
    try:
        cluster.start(timeout=60)
    finally:
        cluster.stop()
    assert calls and all(c.get("preexec_fn") is None for c in calls)


def test_children_start_while_grpc_is_busy_in_this_process(tmp_path: object) -> None:
    """The failure behind the old flaky member start: with a preexec_fn, about one child in
    five aborted before exec while this process made gRPC calls from another thread (64 of
    300 in one run, none of 300 the way the launchers spawn now)."""
    import asyncio

    import grpc

    from raftstore.api.pb import rpc_pb2, rpc_pb2_grpc
    from raftstore.launcher import RaftstoreCluster

    cluster = RaftstoreCluster(str(tmp_path), nodes=1)
    cluster.start(timeout=60)
    stop = threading.Event()

    def load() -> None:
        async def run() -> None:
            async with grpc.aio.insecure_channel(cluster.endpoints[0].removeprefix("http://")) as ch:
                kv = rpc_pb2_grpc.KVStub(ch)  # type: ignore[no-untyped-call]
                while not stop.is_set():
                    await kv.Range(rpc_pb2.RangeRequest(key=b"k", serializable=True))

        asyncio.run(run())

    t = threading.Thread(target=load, daemon=True)
    t.start()
    try:
        time.sleep(0.5)
        codes = []
        for _ in range(100):
            p = subprocess.Popen(die_with_parent(["true"]), stderr=subprocess.DEVNULL)
            codes.append(p.wait(30))
        assert codes == [0] * 100
    finally:
        stop.set()
        t.join(10)
        cluster.stop()

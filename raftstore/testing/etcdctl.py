"""Run the stock ``etcdctl`` (API v3) against a set of endpoints.

Every call is bounded by a timeout: a hung member must fail a test, never hang it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from typing import Final, NamedTuple

ETCDCTL: Final = os.environ.get("ETCDCTL_BIN") or shutil.which("etcdctl") or "/usr/bin/etcdctl"
DEFAULT_TIMEOUT: Final = 20.0


class Result(NamedTuple):
    rc: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.rc == 0


def available() -> bool:
    return os.access(ETCDCTL, os.X_OK)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ETCDCTL_")}
    env["ETCDCTL_API"] = "3"
    return env


def command(endpoints: Sequence[str], *args: str) -> list[str]:
    return [ETCDCTL, f"--endpoints={','.join(endpoints)}", *args]


def run(
    endpoints: Sequence[str],
    *args: str,
    input: str | None = None,  # noqa: A002 - mirrors subprocess.run
    timeout: float = DEFAULT_TIMEOUT,
) -> Result:
    """Run ``etcdctl --endpoints=... ARGS``; returns (rc, stdout, stderr).

    A command still running after ``timeout`` seconds is killed and reported with rc -9
    and ``timed out`` appended to stderr (it does not raise)."""
    try:
        proc = subprocess.run(
            command(endpoints, *args),
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=_env(),
            stdin=None if input is not None else subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        return Result(-9, out, err + f"\ntimed out after {timeout}s")
    return Result(proc.returncode, proc.stdout, proc.stderr)


def spawn(endpoints: Sequence[str], *args: str) -> subprocess.Popen[str]:
    """Start a long-running etcdctl (``watch``, ``lease keep-alive``); the caller stops it
    with :func:`finish`."""
    return subprocess.Popen(
        command(endpoints, *args),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )


def finish(proc: subprocess.Popen[str], timeout: float = 5.0) -> Result:
    """Kill a spawned etcdctl and collect everything it printed."""
    if proc.poll() is None:
        proc.kill()
    out, err = proc.communicate(timeout=timeout)
    return Result(proc.returncode, out, err)


class Etcdctl:
    """etcdctl bound to a cluster's endpoints: ``ctl("put", "k", "v")``."""

    def __init__(self, endpoints: Sequence[str]) -> None:
        self.endpoints = list(endpoints)

    def __call__(
        self, *args: str, input: str | None = None, timeout: float = DEFAULT_TIMEOUT  # noqa: A002
    ) -> Result:
        return run(self.endpoints, *args, input=input, timeout=timeout)

    def check(self, *args: str, input: str | None = None,  # noqa: A002
              timeout: float = DEFAULT_TIMEOUT) -> str:
        """Like calling it, but a non-zero exit raises with etcdctl's stderr."""
        res = self(*args, input=input, timeout=timeout)
        if res.rc != 0:
            raise RuntimeError(f"etcdctl {' '.join(args)} failed ({res.rc}): {res.stderr.strip()}")
        return res.stdout

    def spawn(self, *args: str) -> subprocess.Popen[str]:
        return spawn(self.endpoints, *args)

    def only(self, i: int) -> Etcdctl:
        """The same tool bound to member ``i`` alone."""
        return Etcdctl([self.endpoints[i]])

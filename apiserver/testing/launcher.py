"""Start ``plat-server`` / ``plat-apiserver`` as real processes on loopback, wait until they
are ready, and hand out what clients need (kubeconfig path, base URL, an SSL context).

Used by the integration tests (``e2e/``), the benchmarks (``bench/``) and by hand::

    srv = ApiServerProcess(tmp_dir)                       # plat-server, embedded store
    srv = ApiServerProcess(tmp_dir, etcd_servers=[...])   # plat-server over raftstore / etcd
    with srv:
        subprocess.run(["kubectl", "--kubeconfig", srv.kubeconfig, "get", "ns"])
"""

from __future__ import annotations

import base64
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from raftstore.launcher import die_with_parent, free_ports


class ApiServerError(RuntimeError):
    pass


def _script(name: str) -> str:
    """The console script installed beside this interpreter (``pip install -e .``)."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        raise ApiServerError(f"{name} is not installed next to {sys.executable}")
    return str(path)


def ssl_context_for(kubeconfig: str) -> ssl.SSLContext:
    """An SSL context from a kubeconfig file: verifies the server with its CA and presents
    its client certificate (first cluster, first user)."""
    cfg = yaml.safe_load(Path(kubeconfig).read_text())
    cluster = cfg["clusters"][0]["cluster"]
    user = cfg["users"][0]["user"]
    ctx = ssl.create_default_context(
        cadata=base64.b64decode(cluster["certificate-authority-data"]).decode()
    )
    if "client-certificate-data" in user:
        with tempfile.TemporaryDirectory() as d:
            cert, key = Path(d) / "c.pem", Path(d) / "k.pem"
            cert.write_bytes(base64.b64decode(user["client-certificate-data"]))
            key.write_bytes(base64.b64decode(user["client-key-data"]))
            ctx.load_cert_chain(str(cert), str(key))
    return ctx


class ApiServerProcess:
    """One API server process. ``program`` is ``plat-server`` (all-in-one; creates its PKI and
    ``admin.kubeconfig`` under ``data_dir``) or ``plat-apiserver`` (a replica; pass the TLS and
    client-CA flags of an existing plat-server's PKI through ``extra_args``)."""

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        program: str = "plat-server",
        etcd_servers: list[str] | None = None,
        extra_args: list[str] | None = None,
        port: int | None = None,
        kubeconfig: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.program = program
        self.etcd_servers = list(etcd_servers or [])
        self.extra_args = list(extra_args or [])
        self.port = port or free_ports(1)[0]
        self._kubeconfig = kubeconfig
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.data_dir / f"{program}-{self.port}.log"

    # -- what clients need ---------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def kubeconfig(self) -> str:
        """A kubeconfig for this server: plat-server's own admin.kubeconfig, or (for a replica)
        a copy of the given one pointing at this server's port."""
        if self.program == "plat-server" and self._kubeconfig is None:
            return str(self.data_dir / "admin.kubeconfig")
        if self._kubeconfig is None:
            raise ApiServerError("a plat-apiserver replica needs kubeconfig=")
        own = self.data_dir / f"kubeconfig-{self.port}"
        if not own.exists():
            cfg = yaml.safe_load(Path(self._kubeconfig).read_text())
            for c in cfg.get("clusters", []):
                c["cluster"]["server"] = self.url
            own.write_text(yaml.safe_dump(cfg))
        return str(own)

    def kubeconfig_data(self) -> dict[str, Any]:
        data: dict[str, Any] = yaml.safe_load(Path(self.kubeconfig).read_text())
        return data

    def ssl_context(self) -> ssl.SSLContext:
        """Verifies the server with the kubeconfig's CA and presents its client certificate."""
        return ssl_context_for(self.kubeconfig)

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True,
                timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """Run stock kubectl against this server."""
        out = subprocess.run(
            ["kubectl", "--kubeconfig", self.kubeconfig, *args], input=stdin,
            capture_output=True, text=True, timeout=timeout,
        )
        if check and out.returncode != 0:
            raise ApiServerError(
                f"kubectl {' '.join(args)} failed ({out.returncode}):\n{out.stdout}{out.stderr}"
            )
        return out

    # -- lifecycle --------------------------------------------------------------------------------

    def command(self) -> list[str]:
        cmd = [_script(self.program), "--secure-port", str(self.port),
               "--bind-address", "127.0.0.1"]
        if self.program == "plat-server":
            cmd += ["--data-dir", str(self.data_dir)]
        if self.etcd_servers:
            cmd += ["--etcd-servers", ",".join(self.etcd_servers)]
        return cmd + self.extra_args

    def start(self, timeout: float = 60.0) -> ApiServerProcess:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child keeps it
        self.proc = subprocess.Popen(
            die_with_parent(self.command()), stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, env=self.env or dict(os.environ), cwd=str(self.data_dir),
        )
        log.close()
        self.wait_ready(timeout)
        return self

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        last = "no answer"
        while time.monotonic() < deadline:
            if self.proc is not None and (rc := self.proc.poll()) is not None:
                raise ApiServerError(f"{self.program} exited ({rc}):\n{self.log_tail()}")
            try:
                if Path(self.kubeconfig).exists():
                    req = urllib.request.Request(f"{self.url}/readyz")
                    with urllib.request.urlopen(req, context=self.ssl_context(), timeout=2) as r:
                        if r.status == 200:
                            return
            except (OSError, urllib.error.URLError, ssl.SSLError, KeyError, ValueError) as exc:
                last = str(exc)
            time.sleep(0.2)
        self.stop()
        raise ApiServerError(f"{self.program} not ready after {timeout:.0f}s ({last}):\n"
                             f"{self.log_tail()}")

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)

    def __enter__(self) -> ApiServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

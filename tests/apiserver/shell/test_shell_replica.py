"""plat-apiserver as a real process over a real etcd: TLS from its cert dir, readyz follows
the store (fails while it is unreachable, recovers when it is back)."""

from __future__ import annotations

import importlib.util
import ssl
import time
import urllib.error
import urllib.request

import pytest

from apiserver import certs
from apiserver.app import write_kubeconfig
from apiserver.testing.launcher import ApiServerProcess


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


pytestmark = pytest.mark.skipif(
    not (_has("apiserver.registry.catalog") and _has("storage.factory")),
    reason="needs the registry catalog and the storage factory")


def readyz(srv: ApiServerProcess) -> tuple[int, str]:
    req = urllib.request.Request(f"{srv.url}/readyz?verbose")
    try:
        with urllib.request.urlopen(req, context=srv.ssl_context(), timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def wait_status(srv: ApiServerProcess, code: int, deadline_s: float = 60) -> str:
    deadline = time.monotonic() + deadline_s
    last = (0, "")
    while time.monotonic() < deadline:
        try:
            last = readyz(srv)
        except (OSError, ssl.SSLError) as e:
            last = (0, str(e))
        if last[0] == code:
            return last[1]
        time.sleep(0.2)
    raise AssertionError(f"readyz never answered {code}; last {last}")


def test_replica_readyz_follows_the_store(cluster_factory, tmp_path):
    cluster = cluster_factory("etcd", nodes=1)
    pki = certs.ensure_pki(tmp_path / "pki")
    kubeconfig = tmp_path / "base.kubeconfig"
    write_kubeconfig(kubeconfig, server="https://127.0.0.1:1", pki=pki)
    srv = ApiServerProcess(tmp_path, program="plat-apiserver",
                           etcd_servers=[m.client_url for m in cluster.members],
                           extra_args=["--cert-dir", str(tmp_path / "pki")],
                           kubeconfig=str(kubeconfig))
    with srv:
        out = srv.kubectl("version", "-o", "json")
        assert '"gitVersion": "v1.33.0"' in out.stdout
        cluster.kill(0)
        text = wait_status(srv, 500)
        assert "[-]etcd failed: reason withheld" in text
        assert text.endswith("readyz check failed\n")
        cluster.restart(0)
        text = wait_status(srv, 200)
        assert "[+]etcd ok" in text

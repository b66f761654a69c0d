"""The commands as real processes: plat-server with stock kubectl (/usr/bin/kubectl), its
PKI and kubeconfig, graceful SIGTERM."""

from __future__ import annotations

import base64
import gzip
import importlib.util
import json
import shutil
import signal
import ssl
import stat
import subprocess
import urllib.error
import urllib.request

import pytest
import yaml

from apiserver.testing.launcher import ApiServerProcess

NEEDED = ("storage.factory", "apiserver.registry.catalog",
          "apiserver.registry.namespace_controller", "apiserver.endpoints")


def _missing() -> list[str]:
    out = []
    for m in NEEDED:
        try:
            if importlib.util.find_spec(m) is None:
                out.append(m)
        except ModuleNotFoundError:
            out.append(m)
    return out


pytestmark = [
    pytest.mark.skipif(bool(_missing()), reason=f"needs the other parts of the server: "
                                                f"{', '.join(_missing())} not in the tree yet"),
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = ApiServerProcess(tmp_path_factory.mktemp("plat-server"))
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def test_kubectl_version(server):
    out = server.kubectl("version", "-o", "json")
    info = json.loads(out.stdout)
    assert info["serverVersion"]["gitVersion"] == "v1.33.0"
    assert info["serverVersion"]["minor"] == "33"
    assert "WARNING" not in out.stderr


def test_kubectl_api_resources(server):
    out = server.kubectl("api-resources", "--no-headers")
    rows = {line.split()[0]: line.split() for line in out.stdout.splitlines() if line.strip()}
    for name in ("configmaps", "namespaces", "secrets", "statefulsets"):
        assert name in rows, out.stdout
    assert "cm" in rows["configmaps"] and "sts" in rows["statefulsets"]
    assert out.stderr.strip() == ""


def test_kubeconfig_and_pki(server):
    cfg = yaml.safe_load((server.data_dir / "admin.kubeconfig").read_text())
    assert cfg["current-context"] == cfg["contexts"][0]["name"]
    assert cfg["clusters"][0]["cluster"]["server"] == server.url
    assert "certificate-authority-data" in cfg["clusters"][0]["cluster"]
    assert {"client-certificate-data", "client-key-data"} <= set(cfg["users"][0]["user"])
    for key in ("ca.key", "apiserver.key", "admin.key"):
        mode = (server.data_dir / "pki" / key).stat().st_mode
        assert stat.S_IMODE(mode) == 0o600
    assert "admin.kubeconfig" in server.log_path.read_text()
    out = server.kubectl("auth", "whoami", "-o", "json", check=False)
    if out.returncode == 0:  # needs the selfsubjectreviews resource
        user = json.loads(out.stdout)["status"]["userInfo"]
        assert user["username"] == "platform-admin"


def test_system_namespaces(server):
    out = server.kubectl("get", "namespaces", "-o", "name")
    for ns in ("default", "platform-system", "platform-public", "platform-node-lease"):
        assert f"namespace/{ns}" in out.stdout.split()


def test_system_priority_classes(server):
    """Every apiserver creates upstream's two system priority classes (pods that name them,
    as cluster add-ons do, are admitted by their value)."""
    out = server.kubectl("get", "priorityclasses", "-o", "json")
    classes = {i["metadata"]["name"]: i for i in json.loads(out.stdout)["items"]}
    assert classes["system-node-critical"]["value"] == 2000001000
    assert classes["system-cluster-critical"]["value"] == 2000000000
    assert classes["system-cluster-critical"]["preemptionPolicy"] == "PreemptLowerPriority"
    assert not classes["system-node-critical"].get("globalDefault")


def test_sigterm_is_graceful(tmp_path):
    srv = ApiServerProcess(tmp_path)
    srv.start()
    assert srv.proc is not None
    # an open watch must not hold the shutdown
    watch = subprocess.Popen(["kubectl", "--kubeconfig", srv.kubeconfig, "get", "ns", "-w"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert watch.stdout is not None
        assert watch.stdout.readline()  # the watch is established: first row printed
        srv.proc.send_signal(signal.SIGTERM)
        try:
            rc = srv.proc.wait(30)
        except subprocess.TimeoutExpired:
            srv.kill()
            raise AssertionError(f"no exit after SIGTERM:\n{srv.log_tail()}") from None
        assert rc == 0, srv.log_tail()
    finally:
        if watch.poll() is None:
            watch.kill()
        watch.wait(10)
    assert "stopped" in srv.log_path.read_text()
    # a second start reuses the PKI and the store
    ca = (tmp_path / "pki" / "ca.crt").read_bytes()
    srv2 = ApiServerProcess(tmp_path, port=srv.port).start()
    try:
        assert (tmp_path / "pki" / "ca.crt").read_bytes() == ca
        srv2.kubectl("get", "--raw", "/readyz")
    finally:
        srv2.stop()


def test_kubectl_apply_through_the_assembled_server(server):
    # needs /openapi/v3 (kubectl's field-validation check) and the resource endpoints
    manifest = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shell-c1\n"
                "  namespace: default\ndata:\n  a: b\n")
    server.kubectl("apply", "-f", "-", stdin=manifest)
    out = server.kubectl("get", "configmap", "shell-c1", "-n", "default", "-o", "json")
    assert json.loads(out.stdout)["data"] == {"a": "b"}


def test_flags_reach_the_server(tmp_path):
    srv = ApiServerProcess(tmp_path, extra_args=["--watch-cache=false",
                                                 "--authorization-mode=AlwaysDeny"])
    with srv:
        # the admin is in system:masters: allowed whatever the mode; no watch cache needed
        out = srv.kubectl("get", "namespaces", "-o", "name")
        assert "namespace/default" in out.stdout.split()
        cfg = srv.kubeconfig_data()
        ca = base64.b64decode(cfg["clusters"][0]["cluster"]["certificate-authority-data"])
        anonymous = ssl.create_default_context(cadata=ca.decode())
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"{srv.url}/api/v1/namespaces", context=anonymous,
                                   timeout=10)
        assert e.value.code == 403
        body = json.loads(e.value.read())
        assert body["message"] == (
            'namespaces is forbidden: User "system:anonymous" cannot list resource '
            '"namespaces" in API group "" at the cluster scope: Everything is forbidden.')


def test_request_content_encoding_is_not_decoded(server):
    """Go's HTTP server does not decode a request's Content-Encoding: the bytes are the body.
    A plain body labelled gzip answered 500 (aiohttp failed to decompress it)."""
    ctx = server.ssl_context()
    url = f"{server.url}/api/v1/namespaces/default/configmaps"

    def post(body: bytes, encoding: str) -> tuple[int, dict]:
        req = urllib.request.Request(url, data=body, method="POST", headers={
            "Content-Type": "application/json", "Content-Encoding": encoding})
        try:
            with urllib.request.urlopen(req, context=ctx) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    for i, encoding in enumerate(("gzip", "deflate", "br")):
        code, body = post(json.dumps({"metadata": {"name": f"enc{i}"}}).encode(), encoding)
        assert code == 201, body
    code, body = post(gzip.compress(b'{"metadata":{"name":"zipped"}}'), "gzip")
    assert code == 400 and body["kind"] == "Status" and body["reason"] == "BadRequest", body


def test_long_request_lines_and_headers(server):
    """Up to 1 MiB of request line and headers, as upstream's MaxHeaderBytes: aiohttp's
    8 KiB refused long label selectors with a plain-text 400. Beyond that, the log line
    does not quote the header (it quoted the start of a bearer token)."""
    import socket

    ctx = server.ssl_context()
    selector = ",".join(f"k{i} notin (v{i})" for i in range(700))  # about 12 KB
    assert len(selector) > 9000
    url = f"{server.url}/api/v1/namespaces/default/configmaps?labelSelector=" + \
        urllib.request.quote(selector)
    with urllib.request.urlopen(url, context=ctx) as resp:
        assert resp.status == 200
        assert json.loads(resp.read())["kind"] == "ConfigMapList"

    host, port = server.url.removeprefix("https://").rsplit(":", 1)
    secret = "supersecret-" + "x" * (2 << 20)
    with socket.create_connection((host, int(port))) as raw, \
            ctx.wrap_socket(raw, server_hostname=host) as s:
        try:
            s.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                      + secret.encode() + b"\r\n\r\n")
        except OSError:
            pass  # the server may close before reading it all
        try:
            first = s.recv(100)
        except OSError:
            first = b""
    assert not first.startswith(b"HTTP/1.1 200")
    assert "supersecret" not in server.log_tail(200)


def test_events_expire_after_event_ttl(tmp_path):
    """--event-ttl (upstream default 1h): the store deletes an event that long after its last
    write (an etcd lease); other objects stay. Events used to pile up for ever."""
    import time

    srv = ApiServerProcess(tmp_path, extra_args=["--event-ttl=2s"])
    with srv:
        ctx = srv.ssl_context()
        base = f"{srv.url}/api/v1/namespaces/default"

        def call(method: str, path: str, body: dict | None = None) -> int:
            req = urllib.request.Request(
                base + path, method=method, headers={"Content-Type": "application/json"},
                data=json.dumps(body).encode() if body is not None else None)
            try:
                with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
                    return resp.status
            except urllib.error.HTTPError as e:
                return e.code

        event = {"metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "name": "p"},
                 "reason": "Tested", "message": "m", "type": "Normal"}
        assert call("POST", "/events", event) == 201
        assert call("POST", "/configmaps", {"metadata": {"name": "stays"}}) == 201
        deadline = time.monotonic() + 30
        while call("GET", "/events/e1") == 200 and time.monotonic() < deadline:
            time.sleep(0.25)
        assert call("GET", "/events/e1") == 404
        assert call("GET", "/configmaps/stays") == 200

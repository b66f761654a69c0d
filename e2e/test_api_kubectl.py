"""Stock kubectl against plat-server, on every storage backend (embedded, raftstore, etcd).

Each test works in its own namespace on a shared server (``api_server`` / ``namespace``
fixtures of apiserver.testing.fixtures).
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest
import yaml

from apiserver.testing.kubectl import get_json
from apiserver.testing.launcher import ApiServerProcess

pytestmark = [pytest.mark.timeout(180)]

CONFIGMAP = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels: {app: web, tier: front}
data:
  color: blue
  size: "3"
"""

SECRET = """
apiVersion: v1
kind: Secret
metadata:
  name: creds
stringData:
  password: s3cr3t
"""

STATEFULSET = """
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  serviceName: web
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports: [{containerPort: 80, name: http}]
"""



def test_version_and_api_resources(api_server: ApiServerProcess) -> None:
    out = api_server.kubectl("version", "-o", "json").stdout
    server = json.loads(out)["serverVersion"]
    assert (server["major"], server["minor"]) == ("1", "33")
    res = api_server.kubectl("api-resources", "--no-headers").stdout
    names = {line.split()[0] for line in res.splitlines() if line.strip()}
    assert {"configmaps", "secrets", "namespaces", "serviceaccounts", "events",
            "statefulsets", "leases"} <= names


def test_apply_and_get_manifests(api_server: ApiServerProcess, namespace: str) -> None:
    ns = ["-n", namespace]
    for manifest in (CONFIGMAP, SECRET, STATEFULSET):
        api_server.kubectl("apply", *ns, "-f", "-", stdin=manifest)

    cm = yaml.safe_load(api_server.kubectl("get", *ns, "configmap", "settings",
                                           "-o", "yaml").stdout)
    assert cm["data"] == {"color": "blue", "size": "3"}
    assert cm["metadata"]["namespace"] == namespace
    assert cm["metadata"]["uid"] and cm["metadata"]["creationTimestamp"]
    assert int(cm["metadata"]["resourceVersion"]) > 0

    secret = get_json(api_server, *ns, "secret", "creds")
    assert secret["type"] == "Opaque"
    assert secret["data"] == {"password": "czNjcjN0"}  # stringData folded into data

    sts = get_json(api_server, *ns, "statefulset", "web")
    spec = sts["spec"]
    assert spec["replicas"] == 1
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"]["type"] == "RollingUpdate"
    assert spec["revisionHistoryLimit"] == 10
    assert sts["metadata"]["generation"] == 1

    # spec change bumps generation; the scale sub-resource works through kubectl scale
    api_server.kubectl("scale", *ns, "statefulset", "web", "--replicas=3")
    sts2 = get_json(api_server, *ns, "statefulset", "web")
    assert sts2["spec"]["replicas"] == 3
    assert sts2["metadata"]["generation"] == 2

    # a label-only change does not bump generation (as a merge patch and as kubectl label's
    # strategic merge patch)
    api_server.kubectl("patch", *ns, "statefulset", "web", "--type", "merge",
                       "-p", '{"metadata":{"labels":{"team":"a"}}}')
    api_server.kubectl("label", *ns, "statefulset", "web", "tier=db")
    assert get_json(api_server, *ns, "statefulset", "web")["metadata"]["generation"] == 2


def test_get_watch_sees_changes(api_server: ApiServerProcess, namespace: str) -> None:
    watcher = subprocess.Popen(
        ["kubectl", "--kubeconfig", api_server.kubeconfig, "-n", namespace, "get",
         "configmaps", "-w", "-o", "name"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        time.sleep(1.0)  # let the watch open; correctness does not depend on it
        for i in range(3):
            api_server.kubectl("create", "-n", namespace, "configmap", f"w{i}",
                               "--from-literal=k=v")
        seen: set[str] = set()
        assert watcher.stdout is not None
        deadline = time.monotonic() + 30
        while len(seen) < 3 and time.monotonic() < deadline:
            line = watcher.stdout.readline()
            if not line:
                break
            seen.add(line.strip())
        assert {"configmap/w0", "configmap/w1", "configmap/w2"} <= seen
    finally:
        watcher.kill()
        watcher.wait(5)


def test_chunked_list_and_selectors(api_server: ApiServerProcess, namespace: str) -> None:
    items = []
    for i in range(23):
        env = ["dev", "prod", "test"][i % 3]
        items.append({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": f"c{i:02d}", "labels": {"env": env, "n": str(i)}},
                      "data": {"i": str(i)}})
    # a multi-document stream (a "kind: List" needs the full OpenAPI schemas for kubectl's
    # client-side validation, which arrive with the built-in types)
    api_server.kubectl("create", "-n", namespace, "-f", "-",
                       stdin="\n---\n".join(json.dumps(i) for i in items))

    out = api_server.kubectl("get", "-n", namespace, "configmaps", "--chunk-size=5",
                             "-o", "name", "-v=6")
    names = [ln for ln in out.stdout.splitlines() if ln.startswith("configmap/")]
    assert names == [f"configmap/c{i:02d}" for i in range(23)]
    assert "continue=" in out.stderr  # kubectl really paged

    def selected(selector: str) -> list[str]:
        o = api_server.kubectl("get", "-n", namespace, "configmaps", "-l", selector,
                               "-o", "name").stdout
        return sorted(o.split())

    assert len(selected("env=dev")) == 8
    assert len(selected("env!=dev")) == 15
    assert len(selected("env in (dev,test)")) == 15
    assert len(selected("env notin (dev,test)")) == 8
    assert len(selected("n")) == 23
    assert selected("!n") == []
    assert selected("env=prod,n=4") == ["configmap/c04"]
    bad = api_server.kubectl("get", "-n", namespace, "configmaps", "-l", "a b",
                             check=False)
    assert bad.returncode != 0

    by_field = api_server.kubectl("get", "-n", namespace, "configmaps",
                                  "--field-selector", "metadata.name=c07", "-o", "name")
    assert by_field.stdout.split() == ["configmap/c07"]


def test_patch_merge_and_json(api_server: ApiServerProcess, namespace: str) -> None:
    ns = ["-n", namespace]
    api_server.kubectl("create", *ns, "configmap", "p", "--from-literal=a=1",
                       "--from-literal=b=2")
    api_server.kubectl("patch", *ns, "configmap", "p", "--type", "merge",
                       "-p", '{"data":{"a":"10","b":null,"c":"3"}}')
    assert get_json(api_server, *ns, "configmap", "p")["data"] == {"a": "10", "c": "3"}

    api_server.kubectl("patch", *ns, "configmap", "p", "--type", "json", "-p",
                       '[{"op":"test","path":"/data/a","value":"10"},'
                       '{"op":"replace","path":"/data/a","value":"11"}]')
    assert get_json(api_server, *ns, "configmap", "p")["data"]["a"] == "11"

    failed = api_server.kubectl("patch", *ns, "configmap", "p", "--type", "json", "-p",
                                '[{"op":"test","path":"/data/a","value":"nope"},'
                                '{"op":"remove","path":"/data/a"}]', check=False)
    assert failed.returncode != 0
    assert get_json(api_server, *ns, "configmap", "p")["data"]["a"] == "11"

    # kubectl's default patch type is strategic (e2e/test_api_strategicpatch.py has more)
    api_server.kubectl("patch", *ns, "configmap", "p", "-p", '{"data":{"z":"1"}}')
    assert get_json(api_server, *ns, "configmap", "p")["data"] == {"a": "11", "c": "3",
                                                                   "z": "1"}


def test_delete_with_finalizer(api_server: ApiServerProcess, namespace: str) -> None:
    ns = ["-n", namespace]
    api_server.kubectl("apply", *ns, "-f", "-", stdin=json.dumps({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "held", "finalizers": ["example.com/hold"]},
        "data": {"a": "b"},
    }))
    api_server.kubectl("delete", *ns, "configmap", "held", "--wait=false")
    held = get_json(api_server, *ns, "configmap", "held")
    assert held["metadata"]["deletionTimestamp"]
    assert held["metadata"]["finalizers"] == ["example.com/hold"]

    api_server.kubectl("patch", *ns, "configmap", "held", "--type", "json",
                       "-p", '[{"op":"remove","path":"/metadata/finalizers"}]')
    gone = api_server.kubectl("get", *ns, "configmap", "held", check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr


def test_dry_run_server(api_server: ApiServerProcess, namespace: str) -> None:
    ns = ["-n", namespace]
    out = api_server.kubectl("create", *ns, "configmap", "dry", "--from-literal=a=b",
                             "--dry-run=server", "-o", "json")
    assert json.loads(out.stdout)["data"] == {"a": "b"}
    missing = api_server.kubectl("get", *ns, "configmap", "dry", check=False)
    assert missing.returncode != 0 and "NotFound" in missing.stderr

    api_server.kubectl("create", *ns, "configmap", "real", "--from-literal=a=b")
    api_server.kubectl("delete", *ns, "configmap", "real", "--dry-run=server")
    assert get_json(api_server, *ns, "configmap", "real")["data"] == {"a": "b"}


def test_errors_are_status(api_server: ApiServerProcess, namespace: str) -> None:
    ns = ["-n", namespace]
    missing = api_server.kubectl("get", *ns, "configmap", "nope", check=False)
    assert 'configmaps "nope" not found' in missing.stderr
    api_server.kubectl("create", *ns, "configmap", "dup")
    dup = api_server.kubectl("create", *ns, "configmap", "dup", check=False)
    assert 'configmaps "dup" already exists' in dup.stderr
    bad = api_server.kubectl("create", *ns, "configmap", "Bad_Name", check=False)
    assert "Invalid" in bad.stderr or "invalid" in bad.stderr


def test_namespace_deletion_removes_content(api_server: ApiServerProcess) -> None:
    api_server.kubectl("create", "namespace", "doomed-" + api_server.backend)  # type: ignore[attr-defined]
    ns = "doomed-" + api_server.backend  # type: ignore[attr-defined]
    api_server.kubectl("create", "-n", ns, "configmap", "a")
    api_server.kubectl("create", "-n", ns, "secret", "generic", "b", "--from-literal=x=y")
    api_server.kubectl("delete", "namespace", ns, "--timeout=60s")
    gone = api_server.kubectl("get", "namespace", ns, check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr
    left = api_server.kubectl("get", "-n", ns, "configmaps,secrets", "-o", "name",
                              check=False)
    assert left.stdout.strip() == ""


def test_deprecated_apis_warn(api_server: ApiServerProcess, namespace: str) -> None:
    """SPEC 6.3, as upstream v1.33: a request to v1 Endpoints carries a Warning (kubectl
    prints it) and sets apiserver_requested_deprecated_apis."""
    out = api_server.kubectl("get", "endpoints", "-n", namespace)
    assert ("Warning: v1 Endpoints is deprecated in v1.33+; use discovery.plat.io/v1 "
            "EndpointSlice") in out.stderr
    quiet = api_server.kubectl("get", "endpointslices", "-n", namespace)
    assert "deprecated" not in quiet.stderr
    metrics = api_server.kubectl("get", "--raw", "/metrics").stdout
    assert ('apiserver_requested_deprecated_apis{group="",removed_release="",'
            'resource="endpoints",subresource="",version="v1"} 1.0') in metrics


def test_field_selectors_upstream_offers(api_server: ApiServerProcess, namespace: str) -> None:
    """spec.clusterIP / spec.type on services (what kube-proxy and the kubelet watch with),
    spec.unschedulable=false for a node that never set it, spec.signerName on CSRs: 400s
    ("field label not supported") or empty answers before."""
    import base64

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    ns = ("-n", namespace)
    api_server.kubectl(*ns, "create", "service", "clusterip", "normal", "--tcp=80:80")
    api_server.kubectl(*ns, "create", "service", "clusterip", "headless", "--clusterip=None")
    api_server.kubectl(*ns, "create", "service", "nodeport", "np", "--tcp=80:80")
    names = api_server.kubectl(*ns, "get", "svc", "-o", "name",
                               "--field-selector", "spec.clusterIP!=None").stdout.split()
    assert sorted(names) == ["service/normal", "service/np"]
    names = api_server.kubectl(*ns, "get", "svc", "-o", "name",
                               "--field-selector", "spec.type=NodePort").stdout.split()
    assert names == ["service/np"]

    node = f"node-{namespace}"
    api_server.kubectl("apply", "-f", "-", stdin=f"apiVersion: v1\nkind: Node\n"
                       f"metadata: {{name: {node}}}\n")
    try:
        out = api_server.kubectl("get", "nodes", "-o", "name",
                                 "--field-selector", "spec.unschedulable=false").stdout
        assert f"node/{node}" in out.split()
    finally:
        api_server.kubectl("delete", "node", node, check=False)

    key = ec.generate_private_key(ec.SECP256R1())
    csr = x509.CertificateSigningRequestBuilder().subject_name(
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "someone")])).sign(
        key, hashes.SHA256())
    pem = base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode()
    name = f"csr-{namespace}"
    api_server.kubectl("apply", "-f", "-", stdin=(
        "apiVersion: certificates.plat.io/v1\nkind: CertificateSigningRequest\n"
        f"metadata: {{name: {name}}}\nspec:\n  request: {pem}\n"
        "  signerName: example.com/mine\n  usages: [client auth]\n"))
    try:
        out = api_server.kubectl("get", "csr", "-o", "name", "--field-selector",
                                 "spec.signerName=example.com/mine").stdout.split()
        assert out == [f"certificatesigningrequest.certificates.plat.io/{name}"]
    finally:
        api_server.kubectl("delete", "csr", name, check=False)


def test_responses_carry_audit_id_and_cache_control(api_server: ApiServerProcess,
                                                     namespace: str) -> None:
    """As upstream's ``kubectl -v=9`` shows them: every response has an ``Audit-Id`` and
    ``Cache-Control: no-cache, private``, a watch stream's included."""
    import re
    import urllib.request

    out = api_server.kubectl("get", "-n", namespace, "configmaps", "-v=9").stderr
    assert re.search(r"Audit-Id: [0-9a-f-]{36}", out), out[-2000:]
    assert "Cache-Control: no-cache, private" in out, out[-2000:]
    req = urllib.request.Request(
        f"{api_server.url}/api/v1/namespaces/{namespace}/configmaps?watch=1&timeoutSeconds=1",
        headers={"Audit-ID": "e2e-watch"})
    with urllib.request.urlopen(req, context=api_server.ssl_context(), timeout=30) as resp:
        assert resp.headers["Audit-Id"] == "e2e-watch"
        assert resp.headers["Cache-Control"] == "no-cache, private"
        assert resp.headers["Transfer-Encoding"] == "chunked"
        resp.read()

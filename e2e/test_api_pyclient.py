"""The official Python client (``kubernetes``) against plat-server on every backend: list +
watch from a resourceVersion, resume after a dropped connection, 410 after compaction
followed by a relist."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import urllib3
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from apiserver.testing.fixtures import start_api_server
from apiserver.testing.launcher import ApiServerProcess

pytestmark = [pytest.mark.timeout(180)]


def core(api: ApiServerProcess) -> client.CoreV1Api:
    cfg = client.Configuration()
    config.load_kube_config(config_file=api.kubeconfig, client_configuration=cfg)
    return client.CoreV1Api(client.ApiClient(cfg))


def cm(name: str, **data: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data=data)


def collect(v1: client.CoreV1Api, namespace: str, rv: str, want: int,
            timeout: int = 20) -> list[tuple[str, str, str]]:
    """(type, name, resourceVersion) of the first ``want`` events after ``rv``."""
    out: list[tuple[str, str, str]] = []
    w = watch.Watch()
    for ev in w.stream(v1.list_namespaced_config_map, namespace, resource_version=rv,
                       timeout_seconds=timeout):
        meta = ev["object"].metadata
        out.append((ev["type"], meta.name, meta.resource_version))
        if len(out) >= want:
            w.stop()
    return out


def test_list_then_watch_from_resource_version(api_server: ApiServerProcess,
                                               namespace: str) -> None:
    v1 = core(api_server)
    v1.create_namespaced_config_map(namespace, cm("before", a="1"))
    listed = v1.list_namespaced_config_map(namespace)
    assert [i.metadata.name for i in listed.items] == ["before"]
    rv = listed.metadata.resource_version

    v1.create_namespaced_config_map(namespace, cm("after", a="2"))
    v1.patch_namespaced_config_map("before", namespace, {"data": {"a": "3"}},
                                   _content_type="application/merge-patch+json")
    v1.delete_namespaced_config_map("after", namespace)

    events = collect(v1, namespace, rv, want=3)
    assert [(t, n) for t, n, _ in events] == [
        ("ADDED", "after"), ("MODIFIED", "before"), ("DELETED", "after"),
    ]
    rvs = [int(r) for _, _, r in events]
    assert rvs == sorted(rvs) and rvs[0] > int(rv)


def test_resume_after_dropped_connection(api_server: ApiServerProcess,
                                         namespace: str) -> None:
    v1 = core(api_server)
    rv = v1.list_namespaced_config_map(namespace).metadata.resource_version
    v1.create_namespaced_config_map(namespace, cm("one"))
    first = collect(v1, namespace, rv, want=1)  # then the connection is dropped
    assert [n for _, n, _ in first] == ["one"]
    last_rv = first[-1][2]

    # changes while nobody watches
    v1.create_namespaced_config_map(namespace, cm("two"))
    v1.create_namespaced_config_map(namespace, cm("three"))
    resumed = collect(v1, namespace, last_rv, want=2)
    assert [(t, n) for t, n, _ in resumed] == [("ADDED", "two"), ("ADDED", "three")]


@pytest.fixture(params=["embedded", "raftstore", "etcd"])
def compacting_server(request: pytest.FixtureRequest,
                      tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServerProcess]:
    """A private server that compacts every 2 s and keeps a tiny watch cache for
    configmaps, so old versions really become unavailable."""
    from apiserver.testing.fixtures import backends

    if request.param not in backends():
        pytest.skip(f"backend {request.param} not selected")
    srv = start_api_server(
        request, request.param, str(tmp_path_factory.mktemp(f"compact-{request.param}")),
        extra_args=["--etcd-compaction-interval=2s", "--watch-cache-sizes=configmaps#10"],
    )
    try:
        yield srv
    finally:
        srv.stop()


def test_410_after_compaction_then_relist(compacting_server: ApiServerProcess) -> None:
    api = compacting_server
    v1 = core(api)
    ns = f"compact-{int(time.time() * 1000) % 100000}"
    v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    for i in range(5):
        v1.create_namespaced_config_map(ns, cm(f"old{i}"))
    page = v1.list_namespaced_config_map(ns, limit=2)
    old_rv = page.metadata.resource_version
    token = page.metadata._continue
    assert token

    for i in range(30):  # push old_rv out of the watch cache window
        v1.create_namespaced_config_map(ns, cm(f"new{i}"))
    time.sleep(6)  # at least two compaction periods: old_rv is compacted in the store

    with pytest.raises(ApiException) as gone:
        v1.list_namespaced_config_map(ns, limit=2, _continue=token)
    assert gone.value.status == 410

    with pytest.raises(ApiException) as too_old:
        collect(v1, ns, old_rv, want=1, timeout=5)
    assert too_old.value.status == 410

    # the client's recovery: relist, then watch from the new version
    fresh = v1.list_namespaced_config_map(ns)
    assert len(fresh.items) == 35
    v1.create_namespaced_config_map(ns, cm("after-relist"))
    events = collect(v1, ns, fresh.metadata.resource_version, want=1)
    assert [(t, n) for t, n, _ in events] == [("ADDED", "after-relist")]


def test_client_sees_server_errors(api_server: ApiServerProcess, namespace: str) -> None:
    v1 = core(api_server)
    with pytest.raises(ApiException) as missing:
        v1.read_namespaced_config_map("absent", namespace)
    assert missing.value.status == 404
    created = v1.create_namespaced_config_map(namespace, cm("c", a="1"))
    stale = created.metadata.resource_version
    v1.patch_namespaced_config_map("c", namespace, {"data": {"a": "2"}},
                                   _content_type="application/merge-patch+json")
    body = cm("c", a="3")
    body.metadata.resource_version = stale
    with pytest.raises(ApiException) as conflict:
        v1.replace_namespaced_config_map("c", namespace, body)
    assert conflict.value.status == 409
    urllib3.disable_warnings()


def test_discovery_and_version_through_the_client(api_server: ApiServerProcess) -> None:
    """The client asks for /version/, /api/v1/ and /apis/<group>/ (a trailing slash): those
    were 404s."""
    v1 = core(api_server)
    api = v1.api_client
    assert client.VersionApi(api).get_code().git_version.startswith("v1.33")
    names = {r.name for r in v1.get_api_resources().resources}
    assert {"configmaps", "namespaces", "pods/status"} <= names
    assert client.AppsApi(api).get_api_group().name == "apps"
    assert "deployments" in {r.name for r in client.AppsV1Api(api).get_api_resources().resources}


def test_deletes_answer_as_the_generated_client_expects(api_server: ApiServerProcess,
                                                        namespace: str) -> None:
    """Upstream's pods, services, service accounts (and a few more) answer a DELETE with the
    deleted object (ReturnDeletedObject), and the client parses it as that kind: a Status
    there made delete_namespaced_pod raise although the pod was gone."""
    v1 = core(api_server)
    pod = client.V1Pod(metadata=client.V1ObjectMeta(name="p"), spec=client.V1PodSpec(
        containers=[client.V1Container(name="c", image="busybox")]))
    v1.create_namespaced_pod(namespace, pod)
    gone = v1.delete_namespaced_pod("p", namespace)
    assert isinstance(gone, client.V1Pod) and gone.metadata.name == "p"
    v1.create_namespaced_service_account(namespace, client.V1ServiceAccount(
        metadata=client.V1ObjectMeta(name="sa")))
    assert v1.delete_namespaced_service_account("sa", namespace).metadata.name == "sa"
    v1.create_namespaced_config_map(namespace, cm("c"))
    status = v1.delete_namespaced_config_map("c", namespace)  # typed "object": a dict
    assert status["kind"] == "Status" and status["status"] == "Success"


def test_put_creates_where_upstream_allows_it(api_server: ApiServerProcess,
                                              namespace: str) -> None:
    """AllowCreateOnUpdate: a PUT to a missing Service, Role or LimitRange creates it (201);
    a ConfigMap stays a 404."""
    v1 = core(api_server)
    svc = client.V1Service(metadata=client.V1ObjectMeta(name="s"), spec=client.V1ServiceSpec(
        ports=[client.V1ServicePort(port=80)]))
    _, code, _ = v1.replace_namespaced_service_with_http_info("s", namespace, svc)
    assert code == 201
    assert isinstance(v1.delete_namespaced_service("s", namespace), client.V1Service)
    # the generated RBAC client speaks rbac.authorization.k8s.io: kubectl replace (a PUT)
    role = ("apiVersion: rbac.authorization.plat.io/v1\nkind: Role\nmetadata:\n  name: r\n"
            "rules:\n- apiGroups: ['']\n  resources: [pods]\n  verbs: [get]\n")
    out = api_server.kubectl("-n", namespace, "replace", "-f", "-", stdin=role)
    assert "role.rbac.authorization.plat.io/r replaced" in out.stdout
    api_server.kubectl("-n", namespace, "get", "role", "r")
    with pytest.raises(ApiException) as e:
        v1.replace_namespaced_config_map("missing", namespace, cm("missing"))
    assert e.value.status == 404


def test_a_namespace_holding_a_job_is_deleted(api_server: ApiServerProcess) -> None:
    """Jobs orphan their dependents by default; the namespace's deletion deletes its
    content in the background, as upstream's does, or the Job kept an orphan finalizer
    that only a garbage collector removes and the namespace never went."""
    api_server.kubectl("create", "namespace", "with-job")
    api_server.kubectl("-n", "with-job", "create", "job", "j", "--image=busybox")
    api_server.kubectl("delete", "namespace", "with-job", "--timeout=60s", timeout=90)
    out = api_server.kubectl("get", "namespace", "with-job", check=False)
    assert "NotFound" in out.stderr


def _raw(api: ApiServerProcess, method: str, path: str, body: dict,
         content_type: str = "application/json") -> dict:
    import json
    import urllib.request

    req = urllib.request.Request(f"{api.url}{path}", method=method,
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": content_type})
    with urllib.request.urlopen(req, context=api.ssl_context(), timeout=30) as resp:
        return json.loads(resp.read())


def test_timestamps_and_nulls_come_back_as_upstream_writes_them(
        api_server: ApiServerProcess, namespace: str) -> None:
    """A Lease renewed with an offset (a Python client's isoformat gives ``+00:00``) reads
    back in UTC with ``Z``; a ConfigMap created with nulls has none of them, and another
    manager's apply of the same field does not conflict with its creator."""
    created = _raw(api_server, "POST",
                   f"/apis/coordination.plat.io/v1/namespaces/{namespace}/leases",
                   {"apiVersion": "coordination.plat.io/v1", "kind": "Lease",
                    "metadata": {"name": "l"},
                    "spec": {"holderIdentity": "me",
                             "renewTime": "2026-11-23T05:58:48.123456+02:00"}})
    assert created["spec"]["renewTime"] == "2026-11-23T03:58:48.123456Z"
    cm_path = f"/api/v1/namespaces/{namespace}/configmaps"
    made = _raw(api_server, "POST", cm_path + "?fieldManager=creator",
                {"metadata": {"name": "n", "labels": None}, "data": None, "immutable": None})
    assert "data" not in made and "immutable" not in made and "labels" not in made["metadata"]
    applied = _raw(api_server, "PATCH", cm_path + "/n?fieldManager=other",
                   {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n"},
                    "immutable": False}, content_type="application/apply-patch+yaml")
    assert applied["immutable"] is False

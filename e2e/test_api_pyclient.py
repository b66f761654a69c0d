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

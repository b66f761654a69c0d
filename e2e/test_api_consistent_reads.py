"""Consistent gets (no resourceVersion) through one replica right after writes through the
other: the watch cache serves them only once it has reached the store's revision read after
the get arrived (storage/cacher), so each sees the write, including while other resources are
written (the cache must then be told that nothing of its own changed in between)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client, config

from apiserver.testing.fixtures import backends, replica_pair
from apiserver.testing.launcher import ApiServerProcess

pytestmark = [pytest.mark.timeout(240)]


def core(api: ApiServerProcess) -> client.CoreV1Api:
    cfg = client.Configuration()
    config.load_kube_config(config_file=api.kubeconfig, client_configuration=cfg)
    return client.CoreV1Api(client.ApiClient(cfg))


@pytest.fixture(scope="module", params=["raftstore", "etcd"])
def replicas(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[tuple[ApiServerProcess, ApiServerProcess]]:
    if request.param not in backends():
        pytest.skip(f"backend {request.param} not selected")
    with replica_pair(request, request.param,
                      tmp_path_factory.mktemp(f"reads-{request.param}")) as pair:
        yield pair


def test_get_through_the_other_replica_sees_each_write(
        replicas: tuple[ApiServerProcess, ApiServerProcess]) -> None:
    a, b = (core(r) for r in replicas)
    ns = "consistent-reads"
    a.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    a.create_namespaced_config_map(ns, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="cm"), data={"n": "0"}))
    b.read_namespaced_config_map("cm", ns)  # b's cache has the object
    for i in range(1, 31):
        written = a.patch_namespaced_config_map(
            "cm", ns, {"data": {"n": str(i)}}, _content_type="application/merge-patch+json")
        if i % 2:
            # a write to another resource moves the store's revision past b's cache
            a.create_namespaced_secret(ns, client.V1Secret(
                metadata=client.V1ObjectMeta(name=f"s{i}"), string_data={"k": "v"}))
        got = b.read_namespaced_config_map("cm", ns)
        assert got.data == {"n": str(i)}, i
        assert got.metadata.resource_version == written.metadata.resource_version
        # and the other way round
        created = b.create_namespaced_config_map(ns, client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name=f"b{i}"), data={"i": str(i)}))
        seen = a.read_namespaced_config_map(f"b{i}", ns)
        assert seen.metadata.uid == created.metadata.uid
    a.delete_namespaced_config_map("cm", ns)
    with pytest.raises(client.exceptions.ApiException) as gone:
        b.read_namespaced_config_map("cm", ns)
    assert gone.value.status == 404

"""Node, PersistentVolumeClaim, PersistentVolume, Secret types, ConfigMap, ServiceAccount,
Lease: defaults and validation with upstream's messages."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from apiserver.registry.generic import GenericStore
from apiserver.registry.interface import WriteOptions
from apiserver.registry.strategies.configmaps import ConfigMapStrategy
from apiserver.registry.strategies.leases import LeaseStrategy
from apiserver.registry.strategies.nodes import NodeStrategy
from apiserver.registry.strategies.persistentvolumes import (
    PersistentVolumeClaimStrategy,
    PersistentVolumeStrategy,
)
from apiserver.registry.strategies.secrets import SecretStrategy
from apiserver.registry.strategies.serviceaccounts import ServiceAccountStrategy
from apiserver.status import APIError
from tests.apiserver.registry.conftest import ctx
from tests.apiserver.registry.kindstores import patch, store_for
from tests.apiserver.registry.memstore import MemStore

W = WriteOptions()


@pytest.fixture
def mem() -> MemStore:
    return MemStore()


def causes(e: APIError) -> list[tuple[str, str]]:
    return [(c["field"], c["message"]) for c in e.details["causes"]]


async def reject(store: GenericStore, body: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(APIError) as e:
        await store.create(ctx("ns1" if store.strategy.namespaced else ""), body, W)
    assert e.value.code == 422, e.value.message
    return causes(e.value)


def b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


# -- Node ------------------------------------------------------------------------------------

async def test_node_create_with_status_and_allocatable_default(mem: MemStore) -> None:
    nodes = store_for(NodeStrategy(), mem, "nodes", namespaced=False)
    out = await nodes.create(ctx(), {"metadata": {"name": "n1"}, "spec": {},
                                     "status": {"capacity": {"cpu": "4", "pods": "110"}}}, W)
    assert out["status"]["allocatable"] == {"cpu": "4", "pods": "110"}
    # the main resource keeps the stored status
    upd, _ = await nodes.update(ctx(), "n1", patch(lambda o: o.update(
        spec={"unschedulable": True}, status={"capacity": {"cpu": "1"}})), W)
    assert upd["spec"]["unschedulable"] is True and upd["status"]["capacity"]["cpu"] == "4"
    status = store_for(NodeStrategy(), mem, "nodes", namespaced=False, subresource="status")
    upd, _ = await status.update(ctx(), "n1", patch(lambda o: o["status"].update(
        conditions=[{"type": "Ready", "status": "True"}])), W)
    assert upd["status"]["conditions"][0]["type"] == "Ready"


async def test_node_taints(mem: MemStore) -> None:
    nodes = store_for(NodeStrategy(), mem, "nodes", namespaced=False)
    ok = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    await nodes.create(ctx(), {"metadata": {"name": "n1"}, "spec": {"taints": [ok]}}, W)
    got = await reject(nodes, {"metadata": {"name": "n2"}, "spec": {"taints": [
        {"key": "a", "effect": "Sometimes"}]}})
    assert got == [("spec.taints[0].effect", 'Unsupported value: "Sometimes": supported '
                    'values: "NoSchedule", "PreferNoSchedule", "NoExecute"')]
    got = await reject(nodes, {"metadata": {"name": "n2"}, "spec": {"taints": [{"key": "a"}]}})
    assert got == [("spec.taints[0].effect", "Required value")]
    got = await reject(nodes, {"metadata": {"name": "n2"}, "spec": {"taints": [ok, ok]}})
    assert got == [("spec.taints[1]", 'Duplicate value: core.Taint{Key:"dedicated", '
                    'Value:"gpu", Effect:"NoSchedule", TimeAdded:(*v1.Time)(nil)}: taints '
                    "must be unique by key and effect pair")]
    got = await reject(nodes, {"metadata": {"name": "n2"}, "spec": {"taints": [
        {"key": "bad key", "effect": "NoExecute"}]}})
    assert got[0][0] == "spec.taints[0].key"
    got = await reject(nodes, {"metadata": {"name": "n2"}, "spec": {"podCIDRs": ["10.0.0.0"]}})
    assert got == [("spec.podCIDRs[0]", 'Invalid value: "10.0.0.0": must be a valid CIDR '
                    "value, (e.g. 10.9.8.0/24 or 2001:db8::/64)")]


async def test_node_pod_cidr_set_once(mem: MemStore) -> None:
    nodes = store_for(NodeStrategy(), mem, "nodes", namespaced=False)
    await nodes.create(ctx(), {"metadata": {"name": "n1"}, "spec": {}}, W)
    await nodes.update(ctx(), "n1", patch(lambda o: o["spec"].update(
        podCIDR="10.244.0.0/24", podCIDRs=["10.244.0.0/24"])), W)
    with pytest.raises(APIError) as e:
        await nodes.update(ctx(), "n1", patch(lambda o: o["spec"].update(
            podCIDR="10.244.1.0/24", podCIDRs=["10.244.1.0/24"])), W)
    assert ("spec.podCIDRs", 'Forbidden: node updates may not change podCIDR except from "" '
            "to valid") in causes(e.value)


# -- PersistentVolumeClaim -------------------------------------------------------------------

def pvc(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "1Gi"}}}
    base.update(spec)
    return {"metadata": {"name": "data"}, "spec": base}


async def test_pvc_defaults_and_validation(mem: MemStore) -> None:
    claims = store_for(PersistentVolumeClaimStrategy(), mem, "persistentvolumeclaims")
    out = await claims.create(ctx("ns1"), pvc(), W)
    assert out["spec"]["volumeMode"] == "Filesystem"
    assert out["status"] == {"phase": "Pending"}
    assert await reject(claims, pvc(accessModes=[])) == [
        ("spec.accessModes", "Required value: at least 1 access mode is required")]
    assert await reject(claims, pvc(resources={})) == [
        ("spec.resources[storage]", "Required value")]
    assert await reject(claims, pvc(resources={"requests": {"storage": "0"}})) == [
        ("spec.resources[storage]", 'Invalid value: "0": must be greater than zero')]
    assert await reject(claims, pvc(accessModes=["ReadWriteSometimes"])) == [
        ("spec.accessModes", 'Unsupported value: "ReadWriteSometimes": supported values: '
         '"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"')]
    assert await reject(claims, pvc(accessModes=["ReadWriteOncePod", "ReadOnlyMany"])) == [
        ("spec.accessModes", "Forbidden: may not use ReadWriteOncePod with other access modes")]
    assert await reject(claims, pvc(volumeMode="Raw")) == [
        ("spec.volumeMode", 'Unsupported value: "Raw": supported values: "Block", '
         '"Filesystem"')]


async def test_pvc_spec_immutable(mem: MemStore) -> None:
    claims = store_for(PersistentVolumeClaimStrategy(), mem, "persistentvolumeclaims")
    await claims.create(ctx("ns1"), pvc(), W)
    with pytest.raises(APIError) as e:
        await claims.update(ctx("ns1"), "data", patch(lambda o: o["spec"].update(
            accessModes=["ReadWriteMany"])), W)
    assert causes(e.value) == [("spec", "Forbidden: spec is immutable after creation except "
                                "resources.requests and volumeAttributesClassName for bound "
                                "claims")]
    # status through the status sub-resource; a bound claim may grow
    status = store_for(PersistentVolumeClaimStrategy(), mem, "persistentvolumeclaims",
                       subresource="status")
    await status.update(ctx("ns1"), "data", patch(lambda o: o.update(status={
        "phase": "Bound", "capacity": {"storage": "1Gi"}})), W)
    upd, _ = await claims.update(ctx("ns1"), "data", patch(
        lambda o: o["spec"]["resources"]["requests"].update(storage="2Gi")), W)
    assert upd["spec"]["resources"]["requests"]["storage"] == "2Gi"
    assert upd["status"]["phase"] == "Bound"


# -- PersistentVolume ------------------------------------------------------------------------

def pv(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "5Gi"},
                            "hostPath": {"path": "/data/pv1"}}
    base.update(spec)
    return {"metadata": {"name": "pv1"}, "spec": base}


async def test_pv_defaults_and_validation(mem: MemStore) -> None:
    vols = store_for(PersistentVolumeStrategy(), mem, "persistentvolumes", namespaced=False)
    out = await vols.create(ctx(), pv(), W)
    spec = out["spec"]
    assert spec["persistentVolumeReclaimPolicy"] == "Retain"
    assert spec["volumeMode"] == "Filesystem" and spec["hostPath"] == {"path": "/data/pv1",
                                                                       "type": ""}
    assert out["status"] == {"phase": "Pending"}
    body = pv()
    body["spec"].pop("hostPath")
    assert await reject(vols, body) == [("spec", "Required value: must specify a volume type")]
    assert await reject(vols, pv(capacity={})) == [("spec.capacity", "Required value")]
    assert await reject(vols, pv(accessModes=[])) == [("spec.accessModes", "Required value")]
    assert await reject(vols, pv(persistentVolumeReclaimPolicy="Keep")) == [
        ("spec.persistentVolumeReclaimPolicy", 'Unsupported value: "Keep": supported values: '
         '"Delete", "Recycle", "Retain"')]
    assert await reject(vols, pv(nfs={"server": "nfs", "path": "/x"})) == [
        ("spec.nfs", "Forbidden: may not specify more than 1 volume type")]


async def test_pv_source_immutable(mem: MemStore) -> None:
    vols = store_for(PersistentVolumeStrategy(), mem, "persistentvolumes", namespaced=False)
    await vols.create(ctx(), pv(), W)
    with pytest.raises(APIError) as e:
        await vols.update(ctx(), "pv1", patch(lambda o: o["spec"].update(
            hostPath={"path": "/other"})), W)
    assert ("spec.persistentvolumesource", "Forbidden: spec.persistentvolumesource is "
            "immutable after creation") in causes(e.value)
    upd, _ = await vols.update(ctx(), "pv1", patch(lambda o: o["spec"].update(
        persistentVolumeReclaimPolicy="Delete")), W)
    assert upd["spec"]["persistentVolumeReclaimPolicy"] == "Delete"


# -- Secret types ----------------------------------------------------------------------------

def secret(stype: str, name: str = "s", **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "type": stype,
            "data": {k.replace("_", "-"): b64(val) for k, val in data.items()}}


@pytest.mark.parametrize("body,expected", [
    (secret("platform.io/tls", **{"tls.crt": "c"}),
     [("data[tls.key]", "Required value")]),
    (secret("platform.io/basic-auth"),
     [("data[username]", "Required value"), ("data[password]", "Required value")]),
    (secret("platform.io/ssh-auth", **{"ssh-privatekey": ""}),
     [("data[ssh-privatekey]", "Required value")]),
    (secret("platform.io/dockerconfigjson"), [("data[.dockerconfigjson]", "Required value")]),
    (secret("platform.io/dockerconfigjson", **{".dockerconfigjson": "{nope"}),
     [("data[.dockerconfigjson]", 'Invalid value: "<secret contents redacted>": invalid '
       "character 'n' looking for beginning of object key string")]),
    (secret("platform.io/service-account-token"),
     [("metadata.annotations[platform.io/service-account.name]", "Required value")]),
])
async def test_secret_type_rules(mem: MemStore, body: dict[str, Any],
                                 expected: list[tuple[str, str]]) -> None:
    secrets = store_for(SecretStrategy(), mem, "secrets")
    assert await reject(secrets, body) == expected


async def test_secret_types_accepted(mem: MemStore) -> None:
    secrets = store_for(SecretStrategy(), mem, "secrets")
    for i, body in enumerate([
            secret("platform.io/tls", **{"tls.crt": "c", "tls.key": "k"}),
            secret("platform.io/basic-auth", username="u"),
            secret("platform.io/ssh-auth", **{"ssh-privatekey": "k"}),
            secret("platform.io/dockerconfigjson", **{".dockerconfigjson": '{"auths":{}}'}),
            secret("platform.io/dockercfg", **{".dockercfg": "{}"})]):
        body["metadata"]["name"] = f"s{i}"
        await secrets.create(ctx("ns1"), body, W)
    sa = secret("platform.io/service-account-token", "sa-token")
    sa["metadata"]["annotations"] = {"platform.io/service-account.name": "default"}
    await secrets.create(ctx("ns1"), sa, W)


async def test_secret_type_immutable(mem: MemStore) -> None:
    secrets = store_for(SecretStrategy(), mem, "secrets")
    await secrets.create(ctx("ns1"), {"metadata": {"name": "s"}, "data": {}}, W)
    with pytest.raises(APIError) as e:
        await secrets.update(ctx("ns1"), "s", patch(lambda o: o.update(
            type="platform.io/basic-auth", data={"username": b64("u")})), W)
    assert causes(e.value) == [("type", 'Invalid value: "platform.io/basic-auth": field is '
                                "immutable")]


def token(name: str = "bootstrap-token-abcdef", **data: str) -> dict[str, Any]:
    base = {"token_id": "abcdef", "token_secret": "0123456789abcdef"}
    base.update(data)
    body = secret("bootstrap.platform.io/token", name, **base)
    return body


async def test_bootstrap_token_secret(mem: MemStore) -> None:
    secrets = store_for(SecretStrategy(), mem, "secrets")
    await secrets.create(ctx("ns1"), token(
        auth_extra_groups="system:bootstrappers:worker,system:bootstrappers:ingress",
        expiration="2030-01-01T00:00:00Z", usage_bootstrap_authentication="true"), W)
    assert await reject(secrets, token("bootstrap-token-zzzzzz")) == [
        ("metadata.name", 'Invalid value: "bootstrap-token-zzzzzz": must be '
         '"bootstrap-token-<token-id>" for a Secret of type "bootstrap.platform.io/token"')]
    assert await reject(secrets, token(token_secret="short")) == [
        ("data[token-secret]", 'Invalid value: "<secret contents redacted>": must match the '
         "regular expression '[a-z0-9]{16}'")]
    assert await reject(secrets, token(auth_extra_groups="system:masters")) == [
        ("data[auth-extra-groups]", 'Invalid value: "system:masters": bootstrap group '
         '"system:masters" is invalid (must match '
         r"\Asystem:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]\z)")]
    body = token()
    body["data"].pop("token-id")
    got = await reject(secrets, body)
    assert ("data[token-id]", "Required value") in got


# -- ConfigMap / ServiceAccount / Lease ------------------------------------------------------

async def test_config_map_rules(mem: MemStore) -> None:
    cms = store_for(ConfigMapStrategy(), mem, "configmaps")
    await cms.create(ctx("ns1"), {"metadata": {"name": "c"}, "data": {"a.b-c_d": "x"},
                                  "immutable": True}, W)
    got = await reject(cms, {"metadata": {"name": "d"}, "data": {"a b": "x"}})
    assert got[0][0] == "data[a b]"
    assert "a valid config key must consist of alphanumeric characters" in got[0][1]
    got = await reject(cms, {"metadata": {"name": "e"}, "data": {"k": "x" * (1024 * 1024 + 1)}})
    assert got == [("", "Too long: may not be more than 1048576 bytes")]
    with pytest.raises(APIError) as e:
        await cms.update(ctx("ns1"), "c", patch(lambda o: o["data"].update(a="y")), W)
    assert causes(e.value) == [("data", "Forbidden: field is immutable when `immutable` is "
                                "set")]


async def test_service_account_and_lease(mem: MemStore) -> None:
    sas = store_for(ServiceAccountStrategy(), mem, "serviceaccounts")
    out = await sas.create(ctx("ns1"), {"metadata": {"name": "builder"}}, W)
    assert out["metadata"]["name"] == "builder"
    leases = store_for(LeaseStrategy(), mem, "leases")
    out = await leases.create(ctx("ns1"), {"metadata": {"name": "l"}, "spec": {
        "holderIdentity": "a", "leaseDurationSeconds": 15}}, W)
    assert out["spec"]["holderIdentity"] == "a"
    got = await reject(leases, {"metadata": {"name": "m"}, "spec": {
        "leaseDurationSeconds": 0}})
    assert got == [("spec.leaseDurationSeconds", "Invalid value: 0: must be greater than 0")]
    # CoordinatedLeaderElection (off in v1.33): its fields are dropped, even invalid ones
    out = await leases.create(ctx("ns1"), {"metadata": {"name": "g"}, "spec": {
        "holderIdentity": "a", "strategy": "Bogus", "preferredHolder": "x"}}, W)
    assert out["spec"] == {"holderIdentity": "a"}
    upd, _ = await leases.update(ctx("ns1"), "g", patch(lambda o: o["spec"].update(
        strategy="OldestEmulationVersion")), W)
    assert "strategy" not in upd["spec"]


async def test_node_pod_cidr_fields_in_step(mem: MemStore) -> None:
    nodes = store_for(NodeStrategy(), mem, "nodes", namespaced=False)
    out = await nodes.create(ctx(), {"metadata": {"name": "n1"},
                                     "spec": {"podCIDR": "10.244.0.0/24"}}, W)
    assert out["spec"]["podCIDRs"] == ["10.244.0.0/24"]
    assert out["status"]["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 0}}
    assert out["status"]["nodeInfo"]["kubeletVersion"] == ""


async def test_pvc_class_and_volume_set_once(mem: MemStore) -> None:
    claims = store_for(PersistentVolumeClaimStrategy(), mem, "persistentvolumeclaims")
    await claims.create(ctx("ns1"), pvc(), W)
    upd, _ = await claims.update(ctx("ns1"), "data", patch(lambda o: o["spec"].update(
        storageClassName="standard", volumeName="pv-1")), W)
    assert upd["spec"]["storageClassName"] == "standard"
    with pytest.raises(APIError) as e:
        await claims.update(ctx("ns1"), "data", patch(lambda o: o["spec"].update(
            storageClassName="fast")), W)
    assert causes(e.value)[0][0] == "spec"


async def test_endpoints(mem: MemStore) -> None:
    from apiserver.registry.strategies.endpoints import EndpointsStrategy
    eps = store_for(EndpointsStrategy(), mem, "endpoints")
    out = await eps.create(ctx("ns1"), {"metadata": {"name": "web"}, "subsets": [
        {"addresses": [{"ip": "10.244.0.5"}], "ports": [{"port": 8080}]}]}, W)
    assert out["subsets"][0]["ports"] == [{"port": 8080, "protocol": "TCP"}]
    got = await reject(eps, {"metadata": {"name": "bad"}, "subsets": [
        {"addresses": [{"ip": "127.0.0.1"}], "ports": [{"port": 80}, {"port": 81}]},
        {"ports": [{"port": 70000}]}]})
    assert got == [
        ("subsets[0].addresses[0].ip", 'Invalid value: "127.0.0.1": may not be in the '
         "loopback range (127.0.0.0/8, ::1/128)"),
        ("subsets[0].ports[0].name", "Required value"),
        ("subsets[0].ports[1].name", "Required value"),
        ("subsets[1]", "Required value: must specify `addresses` or `notReadyAddresses`"),
        ("subsets[1].ports[0].port", "Invalid value: 70000: must be between 1 and 65535, "
         "inclusive")]

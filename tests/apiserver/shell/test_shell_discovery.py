"""Discovery documents, aggregated discovery, /version, /metrics."""

from __future__ import annotations

import yaml

AGG = "application/json;g=apidiscovery.plat.io;v=v2;as=APIGroupDiscoveryList"


async def test_api_versions(make_client):
    client, _ = await make_client()
    r = await client.get("/api")
    assert r.status == 200
    body = await r.json()
    assert body["kind"] == "APIVersions"
    assert body["versions"] == ["v1"]
    (addr,) = body["serverAddressByClientCIDRs"]
    assert addr["clientCIDR"] == "0.0.0.0/0" and addr["serverAddress"]


async def test_core_resource_list(make_client):
    client, _ = await make_client()
    body = await (await client.get("/api/v1")).json()
    assert body["kind"] == "APIResourceList" and body["groupVersion"] == "v1"
    assert "apiVersion" not in body
    names = [r["name"] for r in body["resources"]]
    assert names == ["configmaps", "namespaces", "namespaces/status"]
    cm = body["resources"][0]
    assert cm == {"name": "configmaps", "singularName": "configmap", "namespaced": True,
                  "kind": "ConfigMap",
                  "verbs": ["create", "delete", "deletecollection", "get", "list", "patch",
                            "update", "watch"],
                  "shortNames": ["cm"], "storageVersionHash": "qFsyl6wFWjQ="}
    assert body["resources"][2] == {"name": "namespaces/status", "singularName": "",
                                    "namespaced": False, "kind": "Namespace",
                                    "verbs": ["get", "patch", "update"]}


async def test_group_resource_list_with_subresources(make_client):
    client, _ = await make_client()
    body = await (await client.get("/apis/apps/v1")).json()
    assert (body["kind"], body["apiVersion"], body["groupVersion"]) == \
        ("APIResourceList", "v1", "apps/v1")
    by_name = {r["name"]: r for r in body["resources"]}
    assert list(by_name) == ["statefulsets", "statefulsets/scale", "statefulsets/status"]
    assert by_name["statefulsets"]["categories"] == ["all"]
    assert by_name["statefulsets/scale"]["group"] == "autoscaling"
    assert by_name["statefulsets/scale"]["kind"] == "Scale"
    assert by_name["statefulsets/status"]["kind"] == "StatefulSet"
    assert (await client.get("/apis/apps/v2")).status == 404
    assert (await client.get("/apis/nosuch/v1")).status == 404


async def test_groups(make_client):
    client, _ = await make_client()
    body = await (await client.get("/apis")).json()
    assert body["kind"] == "APIGroupList" and body["apiVersion"] == "v1"
    groups = {g["name"]: g for g in body["groups"]}
    assert list(groups) == ["apps", "coordination.plat.io"]
    coord = groups["coordination.plat.io"]
    assert coord["versions"] == [
        {"groupVersion": "coordination.plat.io/v1", "version": "v1"},
        {"groupVersion": "coordination.plat.io/v1beta1", "version": "v1beta1"}]
    assert coord["preferredVersion"] == coord["versions"][0]
    one = await (await client.get("/apis/apps")).json()
    assert one == {"kind": "APIGroup", "apiVersion": "v1", "name": "apps",
                   "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
                   "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}}
    assert (await client.get("/apis/nosuch")).status == 404


async def test_aggregated(make_client):
    client, _ = await make_client()
    accept = f"{AGG},application/json;q=0.9"
    r = await client.get("/apis", headers={"Accept": accept})
    assert r.headers["Content-Type"] == AGG
    assert "Accept" in r.headers["Vary"]
    body = await r.json()
    assert (body["kind"], body["apiVersion"]) == ("APIGroupDiscoveryList",
                                                  "apidiscovery.plat.io/v2")
    apps = body["items"][0]
    assert apps["metadata"]["name"] == "apps"
    (v1,) = apps["versions"]
    assert v1["version"] == "v1" and v1["freshness"] == "Current"
    (sts,) = v1["resources"]
    assert sts["resource"] == "statefulsets"
    # upstream leaves group and version empty when they are the listed group version's
    assert sts["responseKind"] == {"group": "", "version": "", "kind": "StatefulSet"}
    assert sts["scope"] == "Namespaced" and sts["singularResource"] == "statefulset"
    assert sts["shortNames"] == ["sts"] and sts["categories"] == ["all"]
    assert sts["subresources"] == [
        {"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1",
                                                  "kind": "Scale"},
         "verbs": ["get", "patch", "update"]},
        {"subresource": "status", "responseKind": {"group": "", "version": "",
                                                   "kind": "StatefulSet"},
         "verbs": ["get", "patch", "update"]}]
    coord = body["items"][1]
    assert [v["version"] for v in coord["versions"]] == ["v1", "v1beta1"]

    core = await (await client.get("/api", headers={"Accept": accept})).json()
    (item,) = core["items"]
    assert "name" not in item["metadata"]
    ns = next(r for r in item["versions"][0]["resources"] if r["resource"] == "namespaces")
    assert ns["scope"] == "Cluster"
    assert ns["responseKind"] == {"group": "", "version": "", "kind": "Namespace"}


async def test_aggregated_etag_and_not_modified(make_client):
    """Upstream's ServeHTTPWithETag: a quoted ETag, Cache-Control public, and 304 for a
    matching If-None-Match (kubectl's HTTP cache revalidates discovery that way)."""
    client, _ = await make_client()
    accept = {"Accept": AGG}
    for path in ("/api", "/apis"):
        r = await client.get(path, headers=accept)
        etag = r.headers["ETag"]
        assert etag.startswith('"') and etag.endswith('"') and len(etag) == 130
        assert r.headers["Cache-Control"] == "public"
        r2 = await client.get(path, headers={**accept, "If-None-Match": etag})
        assert r2.status == 304 and await r2.read() == b""
        r3 = await client.get(path, headers={**accept, "If-None-Match": '"other"'})
        assert r3.status == 200 and await r3.read() == await r.read()
    r = await client.get("/apis")  # the legacy document: no ETag, as upstream
    assert "ETag" not in r.headers


async def test_negotiation_fallbacks(make_client):
    client, _ = await make_client()
    # unrenamed or unknown aggregated types fall back to the legacy form
    r = await client.get("/apis", headers={
        "Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                  "application/json"})
    assert r.headers["Content-Type"].startswith("application/json")
    assert (await r.json())["kind"] == "APIGroupList"
    r = await client.get("/apis/apps/v1", headers={"Accept": "application/yaml"})
    assert yaml.safe_load(await r.text())["groupVersion"] == "apps/v1"
    r = await client.get("/api", headers={"Accept": "text/html"})
    assert r.status == 406
    assert (await r.json())["reason"] == "NotAcceptable"


async def test_version_and_metrics(make_client):
    client, _ = await make_client()
    body = await (await client.get("/version")).json()
    assert (body["major"], body["minor"], body["gitVersion"]) == ("1", "33", "v1.33.0")
    for k in ("gitCommit", "gitTreeState", "buildDate", "goVersion", "compiler", "platform"):
        assert body[k]
    r = await client.get("/metrics")
    assert r.status == 200
    assert r.headers["Content-Type"].startswith("text/plain")
    text = await r.text()
    assert "apiserver_request_total" in text
    assert "_created" not in text  # upstream exposes no *_created series


async def test_paths_with_a_trailing_slash(make_client):
    """go-restful serves discovery and /version with a trailing slash too; the official
    Python client asks for /version/, /api/v1/ and /apis/<group>/."""
    client, _ = await make_client()
    for path in ("/version", "/api/v1", "/apis/apps", "/apis/apps/v1",
                 "/apis/coordination.plat.io/v1beta1"):
        plain = await client.get(path)
        slash = await client.get(path + "/")
        assert (plain.status, slash.status) == (200, 200), path
        assert await plain.read() == await slash.read()
    assert (await client.get("/apis/nosuch/")).status == 404


async def test_index_lists_the_paths(make_client):
    client, _ = await make_client()
    r = await client.get("/")
    assert r.status == 200
    paths = (await r.json())["paths"]
    assert paths == sorted(paths)
    for p in ("/api", "/api/v1", "/apis", "/apis/", "/apis/apps", "/apis/apps/v1",
              "/apis/coordination.plat.io/v1beta1", "/healthz", "/healthz/ping", "/livez",
              "/readyz", "/readyz/etcd", "/readyz/shutdown", "/metrics", "/version"):
        assert p in paths, p
    assert not any("{" in p for p in paths)


async def _catalog_client():
    from aiohttp import web
    from aiohttp.test_utils import TestClient, TestServer

    from apiserver.discovery import Discovery
    from apiserver.registry.catalog import builtin_resources
    app = web.Application()
    Discovery(builtin_resources()).install(app)
    client = TestClient(TestServer(app))
    await client.start_server()
    return client


async def test_catalog_discovery_v133():
    """The real catalog: upstream v1.33's default groups, in upstream's order."""
    client = await _catalog_client()
    try:
        body = await (await client.get("/apis")).json()
        assert [g["name"] for g in body["groups"]] == [
            "apiregistration.plat.io", "apps", "events.plat.io", "authentication.plat.io",
            "authorization.plat.io", "autoscaling", "batch", "certificates.plat.io",
            "networking.plat.io", "policy", "rbac.authorization.plat.io", "storage.plat.io",
            "admissionregistration.plat.io", "apiextensions.plat.io", "scheduling.plat.io",
            "coordination.plat.io", "node.plat.io", "discovery.plat.io",
            "flowcontrol.apiserver.plat.io"]
        auto = next(g for g in body["groups"] if g["name"] == "autoscaling")
        assert [v["version"] for v in auto["versions"]] == ["v2", "v1"]
        assert auto["preferredVersion"]["version"] == "v2"
        core = await (await client.get("/api/v1")).json()
        by_name = {r["name"]: r for r in core["resources"]}
        assert by_name["pods/eviction"] == {
            "name": "pods/eviction", "singularName": "", "namespaced": True, "group": "policy",
            "version": "v1", "kind": "Eviction", "verbs": ["create"]}
        assert by_name["pods/binding"] == {"name": "pods/binding", "singularName": "",
                                           "namespaced": True, "kind": "Binding",
                                           "verbs": ["create"]}
        assert by_name["bindings"] == {"name": "bindings", "singularName": "binding",
                                       "namespaced": True, "kind": "Binding",
                                       "verbs": ["create"]}
        assert by_name["serviceaccounts/token"]["group"] == "authentication.plat.io"
        assert by_name["replicationcontrollers/scale"]["group"] == "autoscaling"
        assert by_name["pods"]["storageVersionHash"] == "xPOwRZ+Yhw8="
        assert by_name["componentstatuses"]["verbs"] == ["get", "list"]
        assert "storageVersionHash" not in by_name["componentstatuses"]
        for removed in ("/apis/batch/v1beta1", "/apis/policy/v1beta1",
                        "/apis/flowcontrol.apiserver.plat.io/v1beta3",
                        "/apis/autoscaling/v2beta2", "/apis/events.plat.io/v1beta1"):
            assert (await client.get(removed)).status == 404, removed
        agg = await (await client.get("/api", headers={"Accept": AGG})).json()
        (item,) = agg["items"]
        pods = next(r for r in item["versions"][0]["resources"] if r["resource"] == "pods")
        subs = {s["subresource"]: s for s in pods["subresources"]}
        assert subs["binding"]["responseKind"] == {"group": "", "version": "",
                                                   "kind": "Binding"}
        assert subs["eviction"]["responseKind"] == {"group": "policy", "version": "v1",
                                                    "kind": "Eviction"}
        named = await (await client.get("/apis", headers={"Accept": AGG})).json()
        rbac = next(i for i in named["items"]
                    if i["metadata"]["name"] == "rbac.authorization.plat.io")
        assert [r["resource"] for r in rbac["versions"][0]["resources"]] == [
            "clusterrolebindings", "clusterroles", "rolebindings", "roles"]
    finally:
        await client.close()

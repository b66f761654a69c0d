"""Routing: every verb reaches its handler; unknown paths 404 and unrouted methods 405 as
upstream's go-restful routes answer."""

from __future__ import annotations

from tests.apiserver.endpoints.conftest import CM, create_cm


async def test_every_verb(client) -> None:
    created = await create_cm(client, "a")
    assert created["metadata"]["namespace"] == "ns1"
    r = await client.get(f"{CM}/a")
    assert r.status == 200 and (await r.json())["data"] == {"k": "v"}
    r = await client.get(CM)
    body = await r.json()
    assert r.status == 200 and body["kind"] == "ConfigMapList"
    assert [i["metadata"]["name"] for i in body["items"]] == ["a"]
    r = await client.get("/api/v1/configmaps")  # across namespaces
    assert r.status == 200
    created["data"] = {"k": "w"}
    r = await client.put(f"{CM}/a", json=created)
    assert r.status == 200 and (await r.json())["data"] == {"k": "w"}
    r = await client.put(f"{CM}/b", json={"metadata": {"name": "b"}})
    assert r.status == 201
    r = await client.patch(f"{CM}/a", data=b'{"data":{"x":"y"}}',
                           headers={"Content-Type": "application/merge-patch+json"})
    assert r.status == 200 and (await r.json())["data"] == {"k": "w", "x": "y"}
    r = await client.delete(f"{CM}/a")
    body = await r.json()
    assert r.status == 200 and body["status"] == "Success"
    r = await client.delete(CM)
    body = await r.json()
    assert r.status == 200 and body["kind"] == "ConfigMapList"
    assert [i["metadata"]["name"] for i in body["items"]] == ["b"]
    r = await client.get(f"{CM}/b")
    assert r.status == 404
    assert (await r.json())["message"] == 'configmaps "b" not found'


async def test_head_is_get(client) -> None:
    await create_cm(client, "a")
    r = await client.head(f"{CM}/a")
    assert r.status == 200


async def test_unknown_resource_404(client) -> None:
    for path in ("/api/v1/widgets", "/api/v1/namespaces/ns1/widgets/x",
                 "/apis/apps/v2/statefulsets", "/apis/nope.io/v1/things",
                 f"{CM}/a/nosuchsub"):
        r = await client.get(path)
        assert r.status == 404, path
        body = await r.json()
        assert body["kind"] == "Status" and body["reason"] == "NotFound"
        assert body["message"] == "the server could not find the requested resource"
        assert body["code"] == 404
        assert body["details"] == {}  # upstream's NewGenericServerResponse
        assert list(body)[-1] == "code"


async def test_cluster_scoped_under_namespace_404(client) -> None:
    r = await client.get("/apis/authentication.plat.io/v1/namespaces/x/selfsubjectreviews")
    assert r.status == 404


async def test_namespaced_item_without_namespace_404(client) -> None:
    r = await client.get("/api/v1/configmaps/a")
    assert r.status == 404


async def test_create_without_namespace_405(client) -> None:
    r = await client.post("/api/v1/configmaps", json={"metadata": {"name": "a"}})
    assert r.status == 405
    body = await r.json()
    assert body["reason"] == "MethodNotAllowed"
    assert body["message"] == "the server does not allow this method on the requested resource"
    r = await client.delete("/api/v1/configmaps")
    assert r.status == 405


async def test_verb_not_served_405(client) -> None:
    # selfsubjectreviews: create only; the collection path exists, GET there does not.
    r = await client.get("/apis/authentication.plat.io/v1/selfsubjectreviews")
    assert r.status == 405
    # no item route at all -> 404
    r = await client.get("/apis/authentication.plat.io/v1/selfsubjectreviews/x")
    assert r.status == 404
    # PUT on a collection path, POST on an item path
    r = await client.put(CM, json={})
    assert r.status == 405
    r = await client.post(f"{CM}/a", json={})
    assert r.status == 405
    # status sub-resource: get/update/patch only
    r = await client.delete("/apis/apps/v1/namespaces/ns1/statefulsets/s/status")
    assert r.status == 405


async def test_subresources(client, stores) -> None:
    r = await client.post("/api/v1/namespaces", json={"metadata": {"name": "n1"}})
    assert r.status == 201
    r = await client.get("/api/v1/namespaces/n1/status")
    assert r.status == 200 and (await r.json())["metadata"]["name"] == "n1"
    r = await client.post("/apis/apps/v1/namespaces/ns1/statefulsets",
                          json={"apiVersion": "apps/v1", "kind": "StatefulSet",
                                "metadata": {"name": "s"}, "spec": {"replicas": 1}})
    assert r.status == 201, await r.text()
    r = await client.patch("/apis/apps/v1/namespaces/ns1/statefulsets/s/status",
                           data=b'{"status":{"replicas":1}}',
                           headers={"Content-Type": "application/merge-patch+json"})
    assert r.status == 200
    assert (await r.json())["status"] == {"replicas": 1}
    assert stores[("apps", "v1", "statefulsets/status")].calls[-1][0] == "update"


async def test_create_on_subresource(client, stores) -> None:
    path = "/api/v1/namespaces/ns1/serviceaccounts/bot/token"
    r = await client.post(path, json={"apiVersion": "authentication.plat.io/v1",
                                      "kind": "TokenRequest", "metadata": {"name": "bot"},
                                      "spec": {"audiences": ["x"]}})
    assert r.status == 201, await r.text()
    assert stores[("", "v1", "serviceaccounts/token")].calls[-1][0] == "create"
    r = await client.post(path, json={"apiVersion": "v1", "kind": "ServiceAccount"})
    assert r.status == 400
    r = await client.get(path)
    assert r.status == 405


async def test_namespaces_are_not_a_resource_inside_a_namespace(client, stores) -> None:
    """``/api/v1/namespaces/a/namespaces[/b]`` is no route upstream (404); it was served, and
    a POST there created a namespace under the authorization of namespace ``a``."""
    r = await client.post("/api/v1/namespaces", json={"metadata": {"name": "a"}})
    assert r.status == 201
    r = await client.post("/api/v1/namespaces", json={"metadata": {"name": "namespaces"}})
    assert r.status == 201
    for method, path in (("GET", "/api/v1/namespaces/a/namespaces"),
                         ("GET", "/api/v1/namespaces/a/namespaces/a"),
                         ("GET", "/api/v1/namespaces/a/namespaces/namespaces"),
                         ("DELETE", "/api/v1/namespaces/a/namespaces/a"),
                         ("POST", "/api/v1/namespaces/missing/namespaces")):
        r = await client.request(method, path, json={"metadata": {"name": "x"}})
        assert r.status == 404, (method, path, await r.text())
    assert (await client.get("/api/v1/namespaces/x")).status == 404  # nothing was created
    for path in ("/api/v1/namespaces/a", "/api/v1/namespaces/a/status",
                 "/api/v1/namespaces/namespaces", "/api/v1/namespaces"):
        r = await client.get(path)
        assert r.status == 200, (path, await r.text())

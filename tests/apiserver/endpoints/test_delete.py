"""DELETE and deletecollection: options from body or query, SPEC 4.6, 200/202."""

from __future__ import annotations

import pytest

from tests.apiserver.endpoints.conftest import CM, create_cm


async def test_delete_query_options(client, stores) -> None:
    await create_cm(client, "a")
    r = await client.delete(f"{CM}/a?gracePeriodSeconds=5&propagationPolicy=Foreground")
    assert r.status == 200
    opts = stores[("", "v1", "configmaps")].calls[-1][1]
    assert (opts.grace_period_seconds, opts.propagation_policy) == (5, "Foreground")


async def test_delete_body_options(client, stores) -> None:
    await create_cm(client, "a")
    body = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
            "preconditions": {"uid": "u1", "resourceVersion": "3"}, "dryRun": ["All"]}
    # the body replaces the query form entirely
    r = await client.delete(f"{CM}/a?gracePeriodSeconds=30", json=body)
    assert r.status == 200, await r.text()
    opts = stores[("", "v1", "configmaps")].calls[-1][1]
    assert opts.grace_period_seconds == 0 and opts.dry_run
    assert (opts.precondition_uid, opts.precondition_resource_version) == ("u1", "3")
    for av in ("meta.plat.io/v1", "meta.k8s.io/v1"):
        r = await client.delete(f"{CM}/a", json={"kind": "DeleteOptions", "apiVersion": av,
                                                 "dryRun": ["All"]})
        assert r.status == 200, av
    r = await client.delete(f"{CM}/a", json={"kind": "ConfigMap", "apiVersion": "v1"})
    assert r.status == 400
    r = await client.delete(f"{CM}/a", json={"gracePeriodSeconds": "soon"})
    assert r.status == 400


@pytest.mark.parametrize("extra", [
    {"dryRun": ["All"]}, {"gracePeriodSeconds": 0}, {"orphanDependents": False},
    {"preconditions": {"uid": "x"}}, {"propagationPolicy": "Background"}])
async def test_unsafe_delete_stands_alone(client, stores, extra) -> None:
    await create_cm(client, "a")
    body = {"kind": "DeleteOptions", "apiVersion": "v1",
            "ignoreStoreReadErrorWithClusterBreakingPotential": True, **extra}
    r = await client.delete(f"{CM}/a", json=body)
    out = await r.json()
    assert r.status == 422 and out["reason"] == "Invalid"
    field = next(iter(extra))
    assert out["message"].startswith(f'DeleteOptions.meta.plat.io "" is invalid: {field}: '
                                     "Invalid value: ")
    assert out["message"].endswith("can not be set together with "
                                   "ignoreStoreReadErrorWithClusterBreakingPotential")
    assert stores[("", "v1", "configmaps")].calls[-1][0] == "create"


async def test_unsafe_delete_alone_passes(client, stores) -> None:
    await create_cm(client, "a")
    r = await client.delete(f"{CM}/a?ignoreStoreReadErrorWithClusterBreakingPotential=true")
    assert r.status == 200
    assert stores[("", "v1", "configmaps")].calls[-1][1].ignore_store_read_error
    r = await client.delete(f"{CM}?ignoreStoreReadErrorWithClusterBreakingPotential=true")
    assert r.status == 422
    assert "is not allowed with DELETECOLLECTION" in (await r.json())["message"]


async def test_delete_option_rules(client) -> None:
    await create_cm(client, "a")
    r = await client.delete(f"{CM}/a?propagationPolicy=Sideways")
    assert r.status == 422
    assert (await r.json())["message"] == (
        'DeleteOptions.meta.plat.io "" is invalid: propagationPolicy: Unsupported value: '
        '"Sideways": supported values: "Foreground", "Background", "Orphan", "nil"')
    r = await client.delete(f"{CM}/a?propagationPolicy=Orphan&orphanDependents=true")
    assert r.status == 422
    assert "orphanDependents and deletionPropagation cannot be both set" in (
        await r.json())["message"]
    r = await client.delete(f"{CM}/a?dryRun=Nope")
    assert r.status == 422
    r = await client.delete(f"{CM}/a?gracePeriodSeconds=x")
    assert r.status == 400


async def test_delete_202_with_finalizers(client) -> None:
    await create_cm(client, "f", metadata={"name": "f", "finalizers": ["x/y"]})
    r = await client.delete(f"{CM}/f")
    body = await r.json()
    assert r.status == 200 and body["metadata"]["deletionTimestamp"]
    r = await client.delete(f"{CM}/f?orphanDependents=false")
    assert r.status == 202
    r = await client.delete(f"{CM}/f?orphanDependents=true")
    assert r.status == 200


async def test_deletecollection(client, stores) -> None:
    await create_cm(client, "a", metadata={"name": "a", "labels": {"t": "1"}})
    await create_cm(client, "b", metadata={"name": "b", "labels": {"t": "2"}})
    r = await client.delete(f"{CM}?labelSelector=t%3D1&dryRun=All")
    body = await r.json()
    assert r.status == 200 and [i["metadata"]["name"] for i in body["items"]] == ["a"]
    opts, list_opts = next(c[1] for c in stores[("", "v1", "configmaps")].calls
                           if c[0] == "deletecollection")
    assert opts.dry_run and list_opts.label_selector == "t=1"
    r = await client.delete(f"{CM}?resourceVersionMatch=Exact")
    assert r.status == 422


async def test_unsafe_delete_dropped_while_gate_off(stores) -> None:
    from aiohttp import web
    from aiohttp.test_utils import TestClient, TestServer

    from apiserver.endpoints import install

    app = web.Application()
    install(app, stores)  # gates default: AllowUnsafeMalformedObjectDeletion off
    async with TestClient(TestServer(app)) as c:
        await create_cm(c, "a")
        r = await c.delete(f"{CM}/a?ignoreStoreReadErrorWithClusterBreakingPotential=true"
                           "&gracePeriodSeconds=0")
        assert r.status == 200
        opts = stores[("", "v1", "configmaps")].calls[-1][1]
        assert not opts.ignore_store_read_error and opts.grace_period_seconds == 0

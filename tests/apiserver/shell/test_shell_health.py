"""/livez, /readyz, /healthz as SPEC 4.7 and upstream."""

from __future__ import annotations

from apiserver.app import HEALTH_KEY

from .conftest import FakeCache, FakeStore

READY_LINES = ["[+]ping ok", "[+]log ok", "[+]etcd ok", "[+]etcd-readiness ok",
               "[+]informer-sync ok", "[+]shutdown ok"]


async def test_plain_and_verbose(make_client):
    client, _ = await make_client()
    for name in ("livez", "readyz", "healthz"):
        r = await client.get(f"/{name}")
        assert r.status == 200
        assert await r.text() == "ok"
        assert r.headers["Content-Type"] == "text/plain; charset=utf-8"
        assert r.headers["X-Content-Type-Options"] == "nosniff"
    r = await client.get("/readyz?verbose")
    assert await r.text() == "\n".join(READY_LINES) + "\nreadyz check passed\n"
    r = await client.get("/livez?verbose=1")
    assert await r.text() == "[+]ping ok\n[+]log ok\n[+]etcd ok\nlivez check passed\n"
    r = await client.get("/healthz?verbose")
    assert (await r.text()).endswith("healthz check passed\n")


async def test_exclude(make_client):
    store = FakeStore()
    client, _ = await make_client(store=store)
    store.up = False
    r = await client.get("/readyz?verbose&exclude=etcd&exclude=etcd-readiness")
    assert r.status == 200
    text = await r.text()
    assert "[+]etcd excluded: ok\n" in text
    assert "[+]etcd-readiness excluded: ok\n" in text
    assert text.endswith("readyz check passed\n")
    r = await client.get("/livez?exclude=etcd")
    assert (r.status, await r.text()) == (200, "ok")
    r = await client.get("/livez?verbose&exclude=etcd&exclude=nosuch")
    assert 'warn: some health checks cannot be excluded: no matches for "nosuch"\n' in \
        await r.text()
    # sorted, as upstream's set
    r = await client.get("/livez?verbose&exclude=zz&exclude=aa&exclude=zz")
    assert 'no matches for "aa","zz"\n' in await r.text()


async def test_single_check(make_client):
    store = FakeStore()
    client, _ = await make_client(store=store)
    r = await client.get("/readyz/ping")
    assert (r.status, await r.text()) == (200, "ok")
    r = await client.get("/livez/etcd")
    assert (r.status, await r.text()) == (200, "ok")
    r = await client.get("/readyz/nosuch")
    assert r.status == 404
    assert (await r.json())["reason"] == "NotFound"
    r = await client.get("/livez/shutdown")  # readyz only
    assert r.status == 404
    store.up = False
    r = await client.get("/readyz/etcd")
    assert r.status == 500
    assert (await r.text()).startswith("internal server error: ")


async def test_readyz_fails_while_store_down(make_client):
    store = FakeStore()
    client, _ = await make_client(store=store)
    store.up = False
    r = await client.get("/readyz")
    assert r.status == 500
    text = await r.text()
    assert "[-]etcd failed: reason withheld\n" in text
    assert "connection refused" not in text
    assert text.endswith("readyz check failed\n")
    assert (await client.get("/livez")).status == 500
    store.up = True
    assert (await client.get("/readyz")).status == 200


async def test_readyz_fails_when_store_hangs(make_client):
    store = FakeStore()
    client, app_state = await make_client(store=store)
    app_state["app"][HEALTH_KEY].etcd_timeout = 0.1
    store.hang = True
    r = await client.get("/readyz")
    assert r.status == 500


async def test_informer_sync_and_shutdown(make_client):
    cache = FakeCache(ready=False)
    client, state = await make_client(caches=(cache,))
    r = await client.get("/readyz?verbose")
    assert r.status == 500
    assert "[-]informer-sync failed: reason withheld\n" in await r.text()
    assert (await client.get("/livez")).status == 200  # livez does not wait for caches
    cache.ready = True
    assert (await client.get("/readyz")).status == 200
    state["app"][HEALTH_KEY].shutting_down = True
    r = await client.get("/readyz")
    assert r.status == 500
    assert "[-]shutdown failed: reason withheld\n" in await r.text()
    assert (await client.get("/livez")).status == 200

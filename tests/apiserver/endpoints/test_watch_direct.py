"""Watch delivery straight from the watch cache's dispatcher to idle connections
(endpoints/watch.py ``_Direct``), over the real registry and the embedded store: events in
order for every watcher, the iterator taking over for a slow client (which is closed, never
given a gap), a client that goes away, selector transitions and Table output."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from apiserver.endpoints import error_middleware, install
from apiserver.endpoints import watch as watch_endpoint
from apiserver.registry.catalog import build_stores, ensure_system_namespaces
from storage.cacher import Cacher
from storage.factory import StorageConfig, open_storage
from storage.keys import resource_prefix

CM = "/api/v1/namespaces/ns1/configmaps"
CM_PREFIX = resource_prefix("", "configmaps")


class App:
    def __init__(self, client: TestClient[Any, Any], caches: dict[str, Cacher]) -> None:
        self.client = client
        self.caches = caches

    def watchers(self) -> int:
        return sum(len(b) for b in self.caches[CM_PREFIX]._watchers.values())


async def _app(tmp_path: Any, capacity: int) -> AsyncIterator[App]:
    storage = await open_storage(StorageConfig(backend="embedded", data_dir=str(tmp_path),
                                               compaction_interval=0, fsync=False))
    caches: dict[str, Cacher] = {}

    def storage_for(info: Any) -> Any:
        prefix = resource_prefix(info.group, info.resource)
        if prefix not in caches:
            caches[prefix] = Cacher(storage, prefix, resource=info.resource,
                                    watcher_capacity=capacity)
        return caches[prefix]

    try:
        stores = build_stores(storage_for)
        for c in caches.values():
            await c.start()
        await ensure_system_namespaces(stores)
        app = web.Application(middlewares=[error_middleware])
        install(app, stores)
        async with TestClient(TestServer(app)) as client:
            r = await client.post("/api/v1/namespaces", json={"metadata": {"name": "ns1"}})
            assert r.status == 201
            yield App(client, caches)
    finally:
        for c in caches.values():
            await c.close()
        await storage.close()


@pytest.fixture
async def app(tmp_path: Any) -> AsyncIterator[App]:
    async for a in _app(tmp_path, 1024):
        yield a


@pytest.fixture
async def small(tmp_path: Any) -> AsyncIterator[App]:
    """Watchers hold at most 4 queued events."""
    async for a in _app(tmp_path, 4):
        yield a


@pytest.fixture
def pushes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The types of the events the direct way took."""
    taken: list[str] = []
    push = watch_endpoint._Direct.push

    def counting(self: Any, type_: str, obj: Any) -> bool:
        ok = push(self, type_, obj)
        if ok:
            taken.append(type_)
        return ok

    monkeypatch.setattr(watch_endpoint._Direct, "push", counting)
    return taken


async def _current_rv(client: TestClient[Any, Any]) -> str:
    r = await client.post(CM, json={"metadata": {"name": "seed"}})
    assert r.status == 201
    rv: str = (await r.json())["metadata"]["resourceVersion"]
    return rv


async def _read(resp: Any, n: int) -> list[dict[str, Any]]:
    out = []
    for _ in range(n):
        line = await asyncio.wait_for(resp.content.readline(), 60)
        assert line.endswith(b"\n"), line
        out.append(orjson.loads(line))
    return out


async def _update(client: TestClient[Any, Any], name: str, value: str, **meta: Any) -> str:
    r = await client.patch(f"{CM}/{name}", data=orjson.dumps(
        {"metadata": meta, "data": {"v": value}}),
        headers={"Content-Type": "application/merge-patch+json"})
    assert r.status == 200, await r.text()
    rv: str = (await r.json())["metadata"]["resourceVersion"]
    return rv


async def test_every_watcher_gets_every_event_in_order(app: App, pushes: list[str]) -> None:
    client = app.client
    rv0 = await _current_rv(client)
    watches = [await client.get(f"{CM}?watch=1&resourceVersion={rv0}") for _ in range(20)]
    r = await client.post(CM, json={"metadata": {"name": "x"}, "data": {"v": "0"}})
    want = [(await r.json())["metadata"]["resourceVersion"]]
    writes = [asyncio.create_task(_update(client, "x", str(i))) for i in range(1, 31)]
    want += sorted(await asyncio.gather(*writes), key=int)
    for resp in watches:
        got = await _read(resp, len(want))
        assert [e["object"]["metadata"]["resourceVersion"] for e in got] == want
        assert [e["type"] for e in got] == ["ADDED"] + ["MODIFIED"] * 30
        assert all(e["object"]["kind"] == "ConfigMap" for e in got)
        resp.close()
    # the direct way carried some of them (how many depends on the machine's load: an event
    # that finds its watcher busy is queued instead, which the order checks above cover)
    assert pushes


async def test_selector_transitions_and_bookmarks(app: App, pushes: list[str]) -> None:
    client = app.client
    rv0 = await _current_rv(client)
    resp = await client.get(f"{CM}?watch=1&resourceVersion={rv0}&labelSelector=team%3Da")
    r = await client.post(CM, json={"metadata": {"name": "s", "labels": {"team": "a"}}})
    assert r.status == 201
    rv_b = await _update(client, "s", "1", labels={"team": "b"})
    await _update(client, "s", "2")  # not for this watcher
    rv_a = await _update(client, "s", "3", labels={"team": "a"})
    r = await client.delete(f"{CM}/s")
    assert r.status == 200
    got = await _read(resp, 4)
    assert [e["type"] for e in got] == ["ADDED", "DELETED", "ADDED", "DELETED"]
    gone = got[1]["object"]
    assert gone["metadata"]["resourceVersion"] == rv_b  # the state it had, at the change
    assert gone["metadata"]["labels"] == {"team": "a"} and gone["kind"] == "ConfigMap"
    assert got[2]["object"]["metadata"]["resourceVersion"] == rv_a
    assert pushes.count("DELETED") == 2 and pushes.count("ADDED") == 2
    resp.close()


async def test_table_events_through_the_direct_way(app: App, pushes: list[str]) -> None:
    client = app.client
    rv0 = await _current_rv(client)
    resp = await client.get(f"{CM}?watch=1&resourceVersion={rv0}", headers={
        "Accept": "application/json;as=Table;g=meta.plat.io;v=v1"})
    assert resp.status == 200
    await client.post(CM, json={"metadata": {"name": "t1"}})
    await client.post(CM, json={"metadata": {"name": "t2"}})
    e1, e2 = await _read(resp, 2)
    assert pushes == ["ADDED", "ADDED"]
    assert e1["object"]["kind"] == "Table"
    assert [c["name"] for c in e1["object"]["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert e1["object"]["rows"][0]["cells"][0] == "t1"
    assert e2["object"]["columnDefinitions"] is None  # headers only in the first table
    assert e2["object"]["rows"][0]["cells"][0] == "t2"
    resp.close()


async def test_client_gone_stops_the_store_watch(app: App, pushes: list[str]) -> None:
    client = app.client
    rv0 = await _current_rv(client)
    resp = await client.get(f"{CM}?watch=1&resourceVersion={rv0}")
    await client.post(CM, json={"metadata": {"name": "g"}})
    (ev,) = await _read(resp, 1)
    assert ev["object"]["metadata"]["name"] == "g" and pushes == ["ADDED"]
    assert app.watchers() == 1
    resp.close()
    for i in range(60):  # events to a closed connection are refused, never an error
        if app.watchers() == 0:
            break
        await _update(client, "g", str(i))
        await asyncio.sleep(0.05)
    assert app.watchers() == 0


async def test_a_client_that_stops_reading_is_closed_without_a_gap(
        small: App, pushes: list[str]) -> None:
    client = small.client
    rv0 = await _current_rv(client)
    fast = await client.get(f"{CM}?watch=1&resourceVersion={rv0}")
    slow = await client.get(f"{CM}?watch=1&resourceVersion={rv0}")  # never read until the end
    big = "x" * 400_000
    r = await client.post(CM, json={"metadata": {"name": "b"}, "data": {"v": big}})
    want = [(await r.json())["metadata"]["resourceVersion"]]
    got_fast = [e["object"]["metadata"]["resourceVersion"] for e in await _read(fast, 1)]
    for i in range(80):
        want.append(await _update(client, "b", f"{i}{big}"))
        got_fast += [e["object"]["metadata"]["resourceVersion"] for e in await _read(fast, 1)]
        if small.watchers() == 1:
            break
    assert small.watchers() == 1  # the slow one was closed; the fast one reads on
    assert got_fast == want
    body = await asyncio.wait_for(slow.read(), 30)  # what it had, then the end of the stream
    rvs = [orjson.loads(x)["object"]["metadata"]["resourceVersion"] for x in body.splitlines()]
    assert rvs and rvs == want[:len(rvs)]  # a prefix: in order, no gap
    assert "MODIFIED" in pushes
    fast.close()


async def test_order_when_flush_rounds_span_many_slices(
        app: App, pushes: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Rounds written 3 connections per callback, with events arriving mid-round."""
    monkeypatch.setattr(watch_endpoint, "_SLICE", 3)
    await test_every_watcher_gets_every_event_in_order(app, pushes)


class _FakeTransport:
    """Records writes; pauses its protocol once ``limit`` bytes are buffered."""

    def __init__(self, protocol: Any, limit: int) -> None:
        self.protocol = protocol
        self.limit = limit
        self.buffered = 0
        self.written: list[bytes] = []
        self.closing = False

    def is_closing(self) -> bool:
        return self.closing

    def write(self, data: bytes) -> None:
        self.written.append(data)
        self.buffered += len(data)
        if self.buffered > self.limit:
            self.protocol._paused = True


async def test_direct_way_stops_taking_events_once_a_flush_finds_the_client_behind() -> None:
    """push tests one attribute; the flush tests the connection: a paused connection (or a
    closed one) gets no more direct events until the handler's own write resumes it."""
    from types import SimpleNamespace

    from aiohttp.base_protocol import BaseProtocol

    loop = asyncio.get_running_loop()
    protocol = BaseProtocol(loop)
    transport = _FakeTransport(protocol, limit=100)
    scope: Any = SimpleNamespace(output=SimpleNamespace(convert=None, media_type="application/json"))
    flusher = watch_endpoint._Flusher(loop)
    out = watch_endpoint._Direct(scope, transport, protocol, flusher)  # type: ignore[arg-type]

    def obj(rv: int) -> dict[str, Any]:
        return {"kind": "ConfigMap", "metadata": {"name": "x", "resourceVersion": str(rv)}}

    assert out.push("ADDED", obj(1)) and out.push("MODIFIED", obj(2))
    out.flush()  # one write for both, over the limit: the protocol is now paused
    assert len(transport.written) == 1 and transport.written[0].count(b'"resourceVersion"') == 2
    assert protocol.writing_paused
    assert not out.push("MODIFIED", obj(3))  # refused: the store queues it for the handler
    out.resume()  # the handler wrote, but the client still has not read
    assert not out.push("MODIFIED", obj(3))
    protocol._paused = False  # the client read
    out.resume()
    assert out.push("MODIFIED", obj(3))
    transport.closing = True  # the client went away before the next round
    out.flush()
    assert len(transport.written) == 1  # nothing written to a closing transport
    assert not out.push("MODIFIED", obj(4))
    out.resume()
    assert not out.push("MODIFIED", obj(4))  # still gone
    transport.closing = False
    out.close()
    out.resume()
    assert not out.push("MODIFIED", obj(5))  # closed for good

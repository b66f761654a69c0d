"""Watch framing: chunked newline-delimited JSON events, timeoutSeconds, ERROR events,
Table and PartialObjectMetadata events, disconnect stops the store's stream."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from tests.apiserver.endpoints.conftest import CM, create_cm


async def _read_events(resp: Any, n: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    while len(events) < n:
        line = await asyncio.wait_for(resp.content.readline(), 10)
        assert line.endswith(b"\n"), line
        events.append(orjson.loads(line))
    return events


async def test_watch_stream(client, stores) -> None:
    await create_cm(client, "a")
    resp = await client.get(f"{CM}?watch=1&allowWatchBookmarks=true")
    assert resp.status == 200
    assert resp.headers["Content-Type"] == "application/json"
    assert resp.headers["Transfer-Encoding"] == "chunked"
    first = await _read_events(resp, 2)
    assert [e["type"] for e in first] == ["ADDED", "BOOKMARK"]
    assert first[0]["object"]["metadata"]["name"] == "a"
    await create_cm(client, "b")
    r = await client.patch(f"{CM}/b", data=b'{"data":{"k":"2"}}',
                           headers={"Content-Type": "application/merge-patch+json"})
    assert r.status == 200
    await client.delete(f"{CM}/a")
    events = await _read_events(resp, 3)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "b"), ("MODIFIED", "b"), ("DELETED", "a")]
    resp.close()
    store = stores[("", "v1", "configmaps")]
    for _ in range(100):  # the handler notices the disconnect and stops the stream
        if not store.watchers:
            break
        await asyncio.sleep(0.05)
    assert not store.watchers


async def test_watch_timeout_seconds_ends_stream(client, stores) -> None:
    await create_cm(client, "a")
    resp = await client.get(f"{CM}?watch=true&timeoutSeconds=1")
    body = await asyncio.wait_for(resp.read(), 10)  # the stream ends by itself
    lines = body.splitlines()
    assert [orjson.loads(x)["type"] for x in lines] == ["ADDED"]
    assert stores[("", "v1", "configmaps")].calls[-1][1].timeout_seconds == 1
    assert not stores[("", "v1", "configmaps")].watchers


async def test_watch_error_event(client) -> None:
    resp = await client.get(f"{CM}?watch=1&resourceVersion=1")
    assert resp.status == 200
    (event,) = [orjson.loads(x) for x in (await asyncio.wait_for(resp.read(), 10)).splitlines()]
    assert event["type"] == "ERROR"
    assert event["object"]["kind"] == "Status" and event["object"]["code"] == 410
    assert event["object"]["reason"] == "Expired"


async def test_watch_table(client) -> None:
    await create_cm(client, "a")
    resp = await client.get(f"{CM}?watch=1", headers={
        "Accept": "application/json;as=Table;g=meta.plat.io;v=v1"})
    assert resp.status == 200
    (e1,) = await _read_events(resp, 1)
    assert e1["object"]["kind"] == "Table"
    assert [c["name"] for c in e1["object"]["columnDefinitions"]] == ["Name", "Created At"]
    assert e1["object"]["rows"][0]["cells"][0] == "a"
    await create_cm(client, "b")
    (e2,) = await _read_events(resp, 1)
    assert e2["object"]["columnDefinitions"] is None  # headers only in the first table
    assert e2["object"]["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    resp.close()


async def test_watch_partial_metadata(client) -> None:
    await create_cm(client, "a")
    resp = await client.get(f"{CM}?watch=1&timeoutSeconds=1", headers={
        "Accept": "application/json;as=PartialObjectMetadataList;g=meta.plat.io;v=v1"})
    (line,) = (await asyncio.wait_for(resp.read(), 10)).splitlines()
    obj = orjson.loads(line)["object"]
    assert obj["kind"] == "PartialObjectMetadata" and "data" not in obj


async def test_named_watch(client) -> None:
    await create_cm(client, "a")
    await create_cm(client, "b")
    resp = await client.get(f"{CM}/b?watch=1&timeoutSeconds=1")
    lines = (await asyncio.wait_for(resp.read(), 10)).splitlines()
    assert [orjson.loads(x)["object"]["metadata"]["name"] for x in lines] == ["b"]


async def test_watch_failure_mid_stream_is_an_error_event(client) -> None:
    resp = await client.get(f"{CM}?watch=1&resourceVersion=99")
    assert resp.status == 200
    (event,) = [orjson.loads(x) for x in (await asyncio.wait_for(resp.read(), 10)).splitlines()]
    assert event["type"] == "ERROR" and event["object"]["code"] == 410


async def test_event_that_fails_to_encode_ends_the_stream(client, monkeypatch) -> None:
    """After the 200 and its headers, a failure can only end the stream: no second HTTP
    response may be written into the body (it was: a 500's status line and headers)."""
    from apiserver.endpoints import watch

    frame = watch._frame

    def failing(scope: Any, type_: str, obj: Any, first: bool) -> bytes:
        if obj.get("metadata", {}).get("name") == "b-bad":
            raise ValueError("cannot encode")
        return frame(scope, type_, obj, first)

    monkeypatch.setattr(watch, "_frame", failing)
    await create_cm(client, "a-good")
    await create_cm(client, "b-bad")
    resp = await client.get(f"{CM}?watch=1")
    assert resp.status == 200
    body = await asyncio.wait_for(resp.read(), 10)  # ends, and cleanly (chunked framing)
    assert b"HTTP/1.1" not in body
    assert [orjson.loads(x)["object"]["metadata"]["name"] for x in body.splitlines()] == [
        "a-good"]


async def test_deprecated_watch_paths(client) -> None:
    """Upstream v1.33 still serves the /watch/ paths (deprecated in favour of ?watch=1):
    a collection, a named object, across namespaces. They were 404s."""
    await create_cm(client, "a")
    await create_cm(client, "b")
    watch_cm = CM.replace("/api/v1/", "/api/v1/watch/")
    for path, names in ((f"{watch_cm}?timeoutSeconds=1", {"a", "b"}),
                        (f"{watch_cm}/b?timeoutSeconds=1", {"b"}),
                        ("/api/v1/watch/configmaps?timeoutSeconds=1", {"a", "b"})):
        resp = await client.get(path)
        assert resp.status == 200, path
        events = [orjson.loads(x) for x in (await asyncio.wait_for(resp.read(), 10)).splitlines()]
        assert {e["object"]["metadata"]["name"] for e in events} == names, path
        assert {e["type"] for e in events} == {"ADDED"}
    assert (await client.post(watch_cm, data=b"{}")).status == 405
    assert (await client.get("/api/v1/watch")).status == 404
    assert (await client.get("/api/v1/watch/nosuch")).status == 404

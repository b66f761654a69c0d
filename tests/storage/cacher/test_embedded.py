"""The cacher over the real embedded store (raftstore MVCC in process)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from storage.cacher import Cacher
from storage.errors import Code
from storage.interface import GetOptions, Interface, ListOptions, Predicate, WatchEvent

PREFIX = "/registry/configmaps"


def cm(ns: str, name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"namespace": ns, "name": name, "labels": dict(labels)}, "data": {"k": "v"}}


def key(ns: str, name: str) -> str:
    return f"{PREFIX}/{ns}/{name}"


async def open_backend(data_dir: Path) -> Interface:
    try:
        from storage.factory import StorageConfig, open_storage
    except ImportError:  # the factory lands separately
        from storage.embedded import open_embedded

        return await open_embedded(str(data_dir), fsync=False)
    return await open_storage(StorageConfig(backend="embedded", data_dir=str(data_dir), compaction_interval=0))


@pytest.fixture
async def backend(tmp_path: Path) -> AsyncIterator[Interface]:
    b = await open_backend(tmp_path / "data")
    yield b
    await b.close()


@pytest.fixture
async def cacher(backend: Interface) -> AsyncIterator[Cacher]:
    c = Cacher(backend, PREFIX, resource="configmaps", max_events=8)
    await c.start()
    assert await c.wait_ready(10)
    yield c
    await c.close()


async def nxt(w: Any) -> WatchEvent:
    return await asyncio.wait_for(w.__anext__(), 10)


async def test_list_get_watch_through_real_store(backend: Interface, cacher: Cacher) -> None:
    created = [await cacher.create(key("ns1", f"o{i}"), cm("ns1", f"o{i}")) for i in range(5)]
    await cacher.create(key("ns10", "z"), cm("ns10", "z"))
    last_rv = created[-1]["metadata"]["resourceVersion"]
    # consistent list: reflects every write acknowledged before it
    res = await cacher.get_list(PREFIX, ListOptions())
    assert [o["metadata"]["name"] for o in res.items] == ["o0", "o1", "o2", "o3", "o4", "z"]
    res = await cacher.get_list(f"{PREFIX}/ns1", ListOptions(resource_version=last_rv, resource_version_match="NotOlderThan"))
    assert len(res.items) == 5
    got = await cacher.get(key("ns1", "o3"), GetOptions(resource_version=last_rv))
    assert got is not None and got["data"] == {"k": "v"}
    w = await cacher.watch(PREFIX, ListOptions(resource_version=last_rv))
    ev = await nxt(w)  # the ns10 create came after last_rv
    assert ev.type == "ADDED" and ev.object["metadata"]["name"] == "z"

    async def upd(cur: dict[str, Any] | None) -> dict[str, Any]:
        assert cur is not None
        cur["data"] = {"k": "w"}
        return cur

    out = await cacher.guaranteed_update(key("ns1", "o0"), upd)
    ev = await nxt(w)
    assert ev.type == "MODIFIED" and ev.object["metadata"]["resourceVersion"] == out["metadata"]["resourceVersion"]
    gone = await cacher.delete(key("ns1", "o0"))
    ev = await nxt(w)
    assert ev.type == "DELETED" and ev.object["metadata"]["resourceVersion"] == gone["metadata"]["resourceVersion"]
    w.stop()


async def test_consistent_list_after_writes_elsewhere(backend: Interface, cacher: Cacher) -> None:
    await cacher.create(key("a", "x"), cm("a", "x"))
    for i in range(3):
        await backend.create(f"/registry/secrets/a/s{i}", cm("a", f"s{i}"))
    res = await cacher.get_list(PREFIX, ListOptions())
    assert [o["metadata"]["name"] for o in res.items] == ["x"]
    assert res.resource_version == await backend.current_revision()


async def test_paging_continues_on_backend(backend: Interface, cacher: Cacher) -> None:
    for i in range(7):
        await cacher.create(key("a", f"o{i}"), cm("a", f"o{i}", even="y" if i % 2 == 0 else "n"))
    page = await cacher.get_list(PREFIX, ListOptions(limit=3))
    assert page.remaining_item_count == 4
    rv = page.resource_version
    await cacher.create(key("a", "o35"), cm("a", "o35"))
    names = [o["metadata"]["name"] for o in page.items]
    while page.continue_token:
        page = await cacher.get_list(PREFIX, ListOptions(limit=3, continue_token=page.continue_token))
        assert page.resource_version == rv
        names += [o["metadata"]["name"] for o in page.items]
    assert names == [f"o{i}" for i in range(7)]
    pred = Predicate(matches=lambda o: o["metadata"]["labels"].get("even") == "y", everything=False)
    page = await cacher.get_list(PREFIX, ListOptions(limit=2, predicate=pred, resource_version=str(rv), resource_version_match="NotOlderThan"))
    assert [o["metadata"]["name"] for o in page.items] == ["o0", "o2"] and page.continue_token


async def test_watch_below_window_or_compaction_gets_410(backend: Interface, cacher: Cacher) -> None:
    first = await cacher.create(key("a", "x"), cm("a", "x"))
    rv0 = int(first["metadata"]["resourceVersion"])
    made = [await cacher.create(key("a", f"o{i:02}"), cm("a", f"o{i:02}")) for i in range(12)]
    rvs = [int(o["metadata"]["resourceVersion"]) for o in made]
    await cacher.get_list(PREFIX, ListOptions())  # the cache has caught up
    # below the window (8 events): 410 with the oldest revision the window serves
    w = await cacher.watch(PREFIX, ListOptions(resource_version=str(rv0)))
    ev = await nxt(w)
    assert ev.type == "ERROR" and ev.error is not None and ev.error.code == Code.RESOURCE_EXPIRED
    assert ev.error.message == f"too old resource version: {rv0} ({rvs[3]})"
    # in the window but compacted in the store: the store's history decides
    await backend.compact(rvs[6])
    w = await cacher.watch(PREFIX, ListOptions(resource_version=str(rvs[5])))
    ev = await nxt(w)
    assert ev.type == "ERROR" and ev.error is not None
    assert ev.error.message == f"too old resource version: {rvs[5]} ({rvs[6]})"
    # in the window and retained: resumes with no gap
    w = await cacher.watch(PREFIX, ListOptions(resource_version=str(rvs[7])))
    evs = [await nxt(w) for _ in range(4)]
    assert [e.object["metadata"]["name"] for e in evs] == ["o08", "o09", "o10", "o11"]
    w.stop()


async def test_initial_events_end_bookmark(backend: Interface, cacher: Cacher) -> None:
    await cacher.create(key("a", "x"), cm("a", "x"))
    # a write elsewhere: the bookmark must still carry the store's current revision
    await backend.create("/registry/secrets/a/s", cm("a", "s"))
    w = await cacher.watch(
        PREFIX,
        ListOptions(resource_version="", resource_version_match="NotOlderThan",
                    send_initial_events=True, allow_watch_bookmarks=True),
    )
    it = w.__aiter__()  # the backend's watcher (the fallback) iterates through a generator
    ev = await nxt(it)
    assert ev.type == "ADDED"
    ev = await nxt(it)
    assert ev.type == "BOOKMARK"
    assert ev.object["metadata"]["annotations"] == {"plat.io/initial-events-end": "true"}
    assert int(ev.object["metadata"]["resourceVersion"]) == await backend.current_revision()
    w.stop()


async def test_consistent_list_served_from_memory_via_progress(
    backend: Interface, cacher: Cacher, monkeypatch: pytest.MonkeyPatch
) -> None:
    await cacher.create(key("a", "x"), cm("a", "x"))
    await backend.create("/registry/secrets/a/s", cm("a", "s"))  # the store moves on elsewhere
    calls: list[str] = []
    real = backend.get_list

    async def spy(k: str, opts: ListOptions) -> Any:
        calls.append(k)
        return await real(k, opts)

    monkeypatch.setattr(backend, "get_list", spy)
    res = await cacher.get_list(PREFIX, ListOptions())
    assert [o["metadata"]["name"] for o in res.items] == ["x"]
    assert res.resource_version == await backend.current_revision()
    assert calls == []  # a progress request brought the cache up to date


async def test_version_of_another_resource_is_reached_without_504(
    backend: Interface, cacher: Cacher
) -> None:
    """A client that wrote a namespace (rv N) and then lists or watches configmaps "not older
    than N" must not get 504: no configmap event will ever carry N, a progress notification
    (or, without progress support, a read from the store) gets there."""
    other = await backend.create("/registry/namespaces/x", {"metadata": {"name": "x"}})
    rv = other["metadata"]["resourceVersion"]
    res = await cacher.get_list(PREFIX + "/", ListOptions(
        resource_version=rv, resource_version_match="NotOlderThan"))
    assert res.resource_version >= int(rv) and res.items == []
    w = await cacher.watch(PREFIX + "/", ListOptions(resource_version=rv))
    try:
        await backend.create(key("ns", "after"), cm("ns", "after"))
        ev = await nxt(w)
        assert (ev.type, ev.object["metadata"]["name"]) == ("ADDED", "after")
    finally:
        w.stop()
    got = await cacher.get(key("ns", "after"), GetOptions(resource_version=rv))
    assert got is not None

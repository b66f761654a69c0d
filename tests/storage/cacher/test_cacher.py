"""Cacher-specific behaviour over the in-memory fake backend (fakestore.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from storage.cacher import Cacher
from storage.errors import Code, StorageError
from storage.interface import GetOptions, ListOptions, Predicate, WatchEvent
from storage.metrics import TERMINATED_WATCHERS
from tests.storage.cacher.fakestore import FakeStore

PREFIX = "/registry/configmaps"


def cm(ns: str, name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"namespace": ns, "name": name, "labels": dict(labels)}, "data": {}}


def key(ns: str, name: str) -> str:
    return f"{PREFIX}/{ns}/{name}"


def names(items: list[dict[str, Any]]) -> list[str]:
    return [o["metadata"]["name"] for o in items]


async def nxt(w: Any, timeout: float = 5.0) -> WatchEvent:
    return await asyncio.wait_for(w.__anext__(), timeout)


async def take(w: Any, n: int) -> list[WatchEvent]:
    return [await nxt(w) for _ in range(n)]


async def settle(cacher: Cacher, store: FakeStore) -> None:
    """Wait until the cache has seen every write of the store's prefix."""
    for _ in range(500):
        if cacher.resource_version >= max((h[0] for h in store.history), default=0):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("cache did not catch up")


@pytest.fixture
async def store() -> FakeStore:
    return FakeStore()


@pytest.fixture
async def cacher(store: FakeStore) -> AsyncIterator[Cacher]:
    c = Cacher(store, PREFIX, resource="configmaps", bookmark_interval=0.05, watcher_capacity=16)
    await c.start()
    assert await c.wait_ready(5)
    yield c
    await c.close()


async def test_not_ready_until_listed() -> None:
    store = FakeStore()
    store.fail_lists = 2
    c = Cacher(store, PREFIX, resource="configmaps")
    assert not c.ready
    # Before the first list, reads go to the backend.
    await store.create(key("a", "x"), cm("a", "x"))
    await c.start()
    assert await c.wait_ready(10)
    res = await c.get_list(PREFIX, ListOptions(resource_version="0"))
    assert names(res.items) == ["x"]
    await c.close()


async def test_list_from_memory_sorted_and_shared(store: FakeStore, cacher: Cacher) -> None:
    for ns, n in [("b", "2"), ("a", "9"), ("a", "1"), ("ns10", "z"), ("ns1", "y")]:
        await store.create(key(ns, n), cm(ns, n))
    await settle(cacher, store)
    calls = store.list_calls
    res = await cacher.get_list(PREFIX, ListOptions(resource_version="0"))
    assert names(res.items) == ["1", "9", "2", "y", "z"]
    assert res.resource_version == store.rev
    # namespace prefix isolation
    res = await cacher.get_list(f"{PREFIX}/ns1", ListOptions(resource_version="0"))
    assert names(res.items) == ["y"]
    assert store.list_calls == calls  # never reached the backend
    again = await cacher.get_list(PREFIX, ListOptions(resource_version="0"))
    assert again.items[0] is res.items[0] or again.items[0] is not None


async def test_get_versions(store: FakeStore, cacher: Cacher) -> None:
    obj = await store.create(key("a", "x"), cm("a", "x"))
    rv = int(obj["metadata"]["resourceVersion"])
    got = await cacher.get(key("a", "x"), GetOptions(resource_version=str(rv)))
    assert got is not None and got["metadata"]["resourceVersion"] == str(rv)
    assert await cacher.get(key("a", "nope"), GetOptions(resource_version="0", ignore_not_found=True)) is None
    with pytest.raises(StorageError) as ei:
        await cacher.get(key("a", "nope"), GetOptions(resource_version="0"))
    assert ei.value.code == Code.KEY_NOT_FOUND
    with pytest.raises(StorageError) as ei:
        await cacher.get(key("a", "x"), GetOptions(resource_version="abc"))
    assert ei.value.code == Code.INVALID
    # Past an unsigned 64-bit number: invalid as upstream's strconv.ParseUint, not too large.
    with pytest.raises(StorageError) as ei:
        await cacher.get(key("a", "x"), GetOptions(resource_version=str(1 << 64)))
    assert ei.value.code == Code.INVALID
    assert ei.value.message.endswith(f'parsing "{1 << 64}": value out of range')


async def test_too_large_resource_version(store: FakeStore) -> None:
    cacher = Cacher(store, PREFIX, resource="configmaps", wait_timeout=0.05)
    await cacher.start()
    assert await cacher.wait_ready(5)
    await store.create(key("a", "x"), cm("a", "x"))
    await settle(cacher, store)
    want = store.rev + 100
    for call in (
        cacher.get(key("a", "x"), GetOptions(resource_version=str(want))),
        cacher.get_list(PREFIX, ListOptions(resource_version=str(want), resource_version_match="NotOlderThan")),
    ):
        with pytest.raises(StorageError) as ei:
            await call
        assert ei.value.code == Code.TOO_LARGE_RESOURCE_VERSION
        assert ei.value.message == f"Too large resource version: {want}, current: {store.rev}"
        assert ei.value.retry_after_seconds == 1
    # A watch owed the state as of that revision fails in its stream (upstream's cacher:
    # an ERROR event, after the 200)...
    w = await cacher.watch(PREFIX, ListOptions(resource_version=str(want), send_initial_events=True,
                                               resource_version_match="NotOlderThan",
                                               allow_watch_bookmarks=True))
    ev = await nxt(w)
    assert ev.type == "ERROR" and ev.error is not None
    assert ev.error.code == Code.TOO_LARGE_RESOURCE_VERSION
    # ...any other starts, and delivers only the changes after it.
    w = await cacher.watch(PREFIX, ListOptions(resource_version=str(store.rev + 2)))
    await store.create(key("a", "y1"), cm("a", "y1"))
    await store.create(key("a", "y2"), cm("a", "y2"))
    third = await store.create(key("a", "y3"), cm("a", "y3"))
    ev = await nxt(w)
    assert (ev.type, ev.object["metadata"]["name"]) == ("ADDED", "y3")
    assert ev.object["metadata"]["resourceVersion"] == third["metadata"]["resourceVersion"]
    w.stop()
    await cacher.close()


async def test_not_older_than_waits_for_cache(store: FakeStore, cacher: Cacher) -> None:
    store.progress = False
    obj = await store.create(key("a", "x"), cm("a", "x"))
    res = await cacher.get_list(
        PREFIX, ListOptions(resource_version=obj["metadata"]["resourceVersion"], resource_version_match="NotOlderThan")
    )
    assert names(res.items) == ["x"]


async def test_consistent_list_waits_for_cache_with_progress(store: FakeStore, cacher: Cacher) -> None:
    await store.create(key("a", "x"), cm("a", "x"))
    await settle(cacher, store)
    store.bump_other()  # writes to other resources move the store's revision on
    store.bump_other()
    calls = store.list_calls
    res = await cacher.get_list(PREFIX, ListOptions())
    assert names(res.items) == ["x"]
    assert res.resource_version == store.rev
    assert store.list_calls == calls
    assert store.progress_requests >= 1


async def test_consistent_list_falls_back_without_progress() -> None:
    store = FakeStore(progress=False)
    c = Cacher(store, PREFIX, resource="configmaps")
    await c.start()
    assert await c.wait_ready(5)
    await store.create(key("a", "x"), cm("a", "x"))
    await settle(c, store)
    store.bump_other()
    calls = store.list_calls
    res = await c.get_list(PREFIX, ListOptions())
    assert names(res.items) == ["x"] and res.resource_version == store.rev
    assert store.list_calls == calls + 1
    await c.close()


@pytest.mark.timeout(20)
async def test_version_of_another_resource_goes_to_the_store_without_progress() -> None:
    """Without progress support (etcd before 3.4.31) the cache never reaches a version
    written elsewhere: reads and watches at it go to the store at once instead of waiting
    out wait_timeout (60 s here: the test's own timeout would end it first)."""
    store = FakeStore(progress=False)
    c = Cacher(store, PREFIX, resource="configmaps", wait_timeout=60.0)
    await c.start()
    assert await c.wait_ready(5)
    store.bump_other()
    rv = str(store.rev)
    res = await c.get_list(PREFIX, ListOptions(resource_version=rv,
                                               resource_version_match="NotOlderThan"))
    assert res.resource_version == store.rev
    assert await c.get(key("a", "none"), GetOptions(resource_version=rv,
                                                    ignore_not_found=True)) is None
    w = await c.watch(PREFIX, ListOptions(resource_version=rv))
    await store.create(key("a", "later"), cm("a", "later"))
    assert (await nxt(w)).object["metadata"]["name"] == "later"
    w.stop()
    await c.close()


async def test_consistent_list_sees_own_write(store: FakeStore, cacher: Cacher) -> None:
    for i in range(20):
        await store.create(key("a", f"o{i:02}"), cm("a", f"o{i:02}"))
        res = await cacher.get_list(PREFIX, ListOptions())
        assert len(res.items) == i + 1


async def test_paging_first_page_from_memory(store: FakeStore, cacher: Cacher) -> None:
    for i in range(7):
        await store.create(key("a", f"o{i}"), cm("a", f"o{i}"))
    await settle(cacher, store)
    calls = store.list_calls
    page = await cacher.get_list(PREFIX, ListOptions(limit=3))
    assert store.list_calls == calls
    assert names(page.items) == ["o0", "o1", "o2"]
    assert page.remaining_item_count == 4
    rv = page.resource_version
    # a write after the first page must not show in the next pages
    await store.create(key("a", "o25"), cm("a", "o25"))
    seen = names(page.items)
    while page.continue_token:
        page = await cacher.get_list(PREFIX, ListOptions(limit=3, continue_token=page.continue_token))
        assert page.resource_version == rv
        seen += names(page.items)
    assert seen == [f"o{i}" for i in range(7)]
    assert page.remaining_item_count is None


async def test_limit_ignored_for_rv_zero_and_legacy_exact_delegated(store: FakeStore, cacher: Cacher) -> None:
    for i in range(5):
        await store.create(key("a", f"o{i}"), cm("a", f"o{i}"))
    await settle(cacher, store)
    res = await cacher.get_list(PREFIX, ListOptions(resource_version="0", limit=2))
    assert len(res.items) == 5 and not res.continue_token
    calls = store.list_calls
    res = await cacher.get_list(PREFIX, ListOptions(resource_version=str(store.rev - 1), limit=2))
    assert store.list_calls == calls + 1  # legacy exact -> backend
    res = await cacher.get_list(
        PREFIX, ListOptions(resource_version=str(store.rev), resource_version_match="Exact")
    )
    assert store.list_calls == calls + 2
    res = await cacher.get_list(
        PREFIX, ListOptions(resource_version=str(store.rev), resource_version_match="NotOlderThan", limit=2)
    )
    assert store.list_calls == calls + 2 and names(res.items) == ["o0", "o1"] and res.continue_token


async def test_predicate_paging_never_empty(store: FakeStore, cacher: Cacher) -> None:
    for i in range(10):
        await store.create(key("a", f"o{i}"), cm("a", f"o{i}", keep="yes" if i in (0, 8, 9) else "no"))
    await settle(cacher, store)
    pred = Predicate(matches=lambda o: o["metadata"]["labels"].get("keep") == "yes", everything=False,
                     label_selector="keep=yes")
    page = await cacher.get_list(PREFIX, ListOptions(limit=2, predicate=pred))
    assert names(page.items) == ["o0", "o8"]
    assert page.remaining_item_count is None
    assert page.continue_token
    page = await cacher.get_list(PREFIX, ListOptions(limit=2, predicate=pred, continue_token=page.continue_token))
    assert names(page.items) == ["o9"]


async def test_watch_rv_zero_and_unset_then_changes(store: FakeStore, cacher: Cacher) -> None:
    await store.create(key("a", "x"), cm("a", "x"))
    await store.create(key("b", "y"), cm("b", "y"))
    await settle(cacher, store)
    for rv in ("", "0"):
        w = await cacher.watch(PREFIX, ListOptions(resource_version=rv))
        evs = await take(w, 2)
        assert [e.type for e in evs] == ["ADDED", "ADDED"]
        assert names([e.object for e in evs]) == ["x", "y"]
        w.stop()
    w = await cacher.watch(PREFIX, ListOptions(resource_version="0"))
    await take(w, 2)
    await store.delete(key("a", "x"))
    ev = await nxt(w)
    assert ev.type == "DELETED" and ev.object["metadata"]["resourceVersion"] == str(store.rev)
    w.stop()
    with pytest.raises(StopAsyncIteration):
        await nxt(w)


async def test_watch_from_now_behind_a_lagging_cache_goes_to_the_store(store: FakeStore) -> None:
    """sendInitialEvents=false with rv "" watches from a revision read after the request: a
    cache that cannot catch up must not show an acknowledged write as a new event."""
    c = Cacher(store, PREFIX, resource="configmaps", wait_timeout=0.2)
    await c.start()
    assert await c.wait_ready(5)
    try:
        store.hold()
        await store.create(key("a", "seen"), cm("a", "seen"))
        w = await c.watch(PREFIX, ListOptions(resource_version="", send_initial_events=False))
        store.release()
        await store.create(key("a", "new"), cm("a", "new"))
        ev = await nxt(w)
        assert (ev.type, ev.object["metadata"]["name"]) == ("ADDED", "new")
        w.stop()
    finally:
        await c.close()


async def test_watch_resume_within_window_and_410_below(store: FakeStore) -> None:
    c = Cacher(store, PREFIX, resource="configmaps", max_events=5)
    await c.start()
    assert await c.wait_ready(5)
    start = store.rev
    rvs = []
    for i in range(8):
        obj = await store.create(key("a", f"o{i}"), cm("a", f"o{i}"))
        rvs.append(int(obj["metadata"]["resourceVersion"]))
    await settle(c, store)
    # the window holds the last 5 events: resuming after rvs[2] works with no gap
    w = await c.watch(PREFIX, ListOptions(resource_version=str(rvs[2])))
    evs = await take(w, 5)
    assert names([e.object for e in evs]) == ["o3", "o4", "o5", "o6", "o7"]
    assert all(e.type == "ADDED" for e in evs)
    w.stop()
    # below the window: one ERROR event with upstream's wording, then the end
    w = await c.watch(PREFIX, ListOptions(resource_version=str(start)))
    ev = await nxt(w)
    assert ev.type == "ERROR" and ev.error is not None
    assert ev.error.code == Code.RESOURCE_EXPIRED
    assert ev.error.message == f"too old resource version: {start} ({rvs[2]})"
    with pytest.raises(StopAsyncIteration):
        await nxt(w)
    await c.close()


async def test_resume_after_idle_within_history(store: FakeStore, cacher: Cacher) -> None:
    obj = await store.create(key("a", "x"), cm("a", "x"))
    rv = obj["metadata"]["resourceVersion"]
    await settle(cacher, store)
    store.bump_other()
    w = await cacher.watch(PREFIX, ListOptions(resource_version=rv))
    await store.create(key("a", "y"), cm("a", "y"))
    ev = await nxt(w)
    assert ev.type == "ADDED" and ev.object["metadata"]["name"] == "y"
    w.stop()


async def test_slow_watcher_closed_without_gap(store: FakeStore, cacher: Cacher) -> None:
    before = TERMINATED_WATCHERS.labels("configmaps")._value.get()
    slow = await cacher.watch(PREFIX, ListOptions(resource_version=str(store.rev)))
    fast = await cacher.watch(PREFIX, ListOptions(resource_version=str(store.rev)))
    got_fast: list[str] = []

    async def consume() -> None:
        async for ev in fast:
            got_fast.append(ev.object["metadata"]["name"])
            if len(got_fast) == 60:
                return

    task = asyncio.create_task(consume())
    for i in range(60):
        await store.create(key("a", f"o{i:02}"), cm("a", f"o{i:02}"))
        await asyncio.sleep(0)
    await asyncio.wait_for(task, 10)
    assert got_fast == [f"o{i:02}" for i in range(60)]
    got_slow = [ev.object["metadata"]["name"] async for ev in slow]
    # a prefix of the stream, no gap and no ERROR, then the end
    assert 0 < len(got_slow) < 60
    assert got_slow == [f"o{i:02}" for i in range(len(got_slow))]
    assert TERMINATED_WATCHERS.labels("configmaps")._value.get() == before + 1
    fast.stop()


async def test_bookmarks(store: FakeStore, cacher: Cacher) -> None:
    await store.create(key("a", "x"), cm("a", "x"))
    await settle(cacher, store)
    w = await cacher.watch(PREFIX, ListOptions(resource_version=str(store.rev), allow_watch_bookmarks=True))
    store.bump_other()
    await cacher.get_list(PREFIX, ListOptions())  # a consistent read pulls a progress notification
    ev = await nxt(w)
    assert ev.type == "BOOKMARK"
    assert ev.object == {"metadata": {"resourceVersion": str(store.rev)}}
    w.stop()
    # no bookmarks without allow_watch_bookmarks
    w = await cacher.watch(PREFIX, ListOptions(resource_version=str(store.rev)))
    store.bump_other()
    await cacher.get_list(PREFIX, ListOptions())
    await store.create(key("a", "y"), cm("a", "y"))
    ev = await nxt(w)
    assert ev.type == "ADDED"
    w.stop()


async def test_send_initial_events_end_bookmark(store: FakeStore, cacher: Cacher) -> None:
    await store.create(key("a", "x"), cm("a", "x"))
    await store.create(key("a", "y"), cm("a", "y"))
    await settle(cacher, store)
    for rv in ("", "0", str(store.rev)):
        w = await cacher.watch(
            PREFIX,
            ListOptions(resource_version=rv, resource_version_match="NotOlderThan",
                        send_initial_events=True, allow_watch_bookmarks=True),
        )
        evs = await take(w, 3)
        assert [e.type for e in evs] == ["ADDED", "ADDED", "BOOKMARK"]
        assert evs[2].object["metadata"] == {
            "resourceVersion": str(store.rev),
            "annotations": {"plat.io/initial-events-end": "true"},
        }
        w.stop()
    # sendInitialEvents=false: no synthetic events, just changes
    w = await cacher.watch(PREFIX, ListOptions(resource_version="", send_initial_events=False))
    await store.create(key("a", "z"), cm("a", "z"))
    ev = await nxt(w)
    assert ev.type == "ADDED" and ev.object["metadata"]["name"] == "z"
    w.stop()


async def test_selector_transitions(store: FakeStore, cacher: Cacher) -> None:
    pred = Predicate(matches=lambda o: o["metadata"]["labels"].get("app") == "web", everything=False)
    w = await cacher.watch(PREFIX, ListOptions(resource_version=str(store.rev), predicate=pred))

    def relabel(app: str) -> Any:
        async def fn(cur: dict[str, Any] | None) -> dict[str, Any]:
            assert cur is not None
            cur["metadata"]["labels"] = {"app": app}
            return cur
        return fn

    await store.create(key("a", "x"), cm("a", "x", app="db"))  # not seen
    await store.guaranteed_update(key("a", "x"), relabel("web"))  # starts matching -> ADDED
    await store.guaranteed_update(key("a", "x"), relabel("web"))  # MODIFIED
    await store.guaranteed_update(key("a", "x"), relabel("db"))  # stops matching -> DELETED
    rv_gone = store.rev
    await store.delete(key("a", "x"))  # not seen
    await store.create(key("a", "y"), cm("a", "y", app="web"))
    evs = await take(w, 4)
    assert [e.type for e in evs] == ["ADDED", "MODIFIED", "DELETED", "ADDED"]
    # the DELETED carries the last matching state at the transition's revision
    assert evs[2].object["metadata"]["labels"] == {"app": "web"}
    assert evs[2].object["metadata"]["resourceVersion"] == str(rv_gone)
    w.stop()


async def test_many_concurrent_watchers(store: FakeStore) -> None:
    c = Cacher(store, PREFIX, resource="configmaps", watcher_capacity=1000)
    await c.start()
    assert await c.wait_ready(5)
    watchers = [
        await c.watch(f"{PREFIX}/a" if i % 2 else PREFIX, ListOptions(resource_version=str(store.rev)))
        for i in range(300)
    ]
    for i in range(30):
        await store.create(key("a" if i % 3 else "b", f"o{i:02}"), cm("a" if i % 3 else "b", f"o{i:02}"))

    async def drain(i: int, w: Any) -> list[str]:
        n = 20 if i % 2 else 30
        return [e.object["metadata"]["name"] for e in await take(w, n)]

    results = await asyncio.gather(*(drain(i, w) for i, w in enumerate(watchers)))
    for i, got in enumerate(results):
        want = [f"o{j:02}" for j in range(30) if not i % 2 or j % 3]
        assert got == want
    for w in watchers:
        w.stop()
    await c.close()


async def test_dropped_backend_watch_resumes(store: FakeStore, cacher: Cacher) -> None:
    w = await cacher.watch(PREFIX, ListOptions(resource_version=str(store.rev)))
    await store.create(key("a", "x"), cm("a", "x"))
    await nxt(w)
    calls = store.list_calls
    store.drop_watches()
    await store.create(key("a", "y"), cm("a", "y"))
    ev = await nxt(w)
    assert ev.object["metadata"]["name"] == "y"
    assert store.list_calls == calls  # resumed, no re-list
    w.stop()


async def test_backend_410_relists_and_closes_watchers(store: FakeStore, cacher: Cacher) -> None:
    await store.create(key("a", "x"), cm("a", "x"))
    await settle(cacher, store)
    w = await cacher.watch(PREFIX, ListOptions(resource_version=str(store.rev)))
    calls = store.list_calls
    store.expire_watches()
    # the watcher ends without an ERROR event
    assert [e async for e in w] == []
    for _ in range(300):
        if store.list_calls > calls and store.watches:
            break
        await asyncio.sleep(0.01)
    assert store.list_calls > calls
    await store.create(key("a", "y"), cm("a", "y"))
    await settle(cacher, store)
    res = await cacher.get_list(PREFIX, ListOptions(resource_version="0"))
    assert names(res.items) == ["x", "y"]


async def test_writes_pass_cached_existing(store: FakeStore, cacher: Cacher) -> None:
    await store.create(key("a", "x"), cm("a", "x"))
    await settle(cacher, store)
    seen: dict[str, Any] = {}
    orig = store.guaranteed_update

    async def spy(k: str, update: Any, **kw: Any) -> Any:
        seen.update(kw)
        return await orig(k, update, **kw)

    store.guaranteed_update = spy  # type: ignore[method-assign]

    async def fn(cur: dict[str, Any] | None) -> dict[str, Any]:
        assert cur is not None
        cur["data"] = {"k": "v"}
        return cur

    out = await cacher.guaranteed_update(key("a", "x"), fn)
    assert out["data"] == {"k": "v"}
    assert seen["cached_existing"]["metadata"]["name"] == "x"


async def test_backend_watch_error_rewatches_without_relist(store: FakeStore, cacher: Cacher) -> None:
    w = await cacher.watch(PREFIX, ListOptions(resource_version=str(store.rev)))
    calls = store.list_calls
    store.fail_watches()
    await store.create(key("a", "x"), cm("a", "x"))
    ev = await nxt(w)
    assert ev.type == "ADDED" and ev.object["metadata"]["name"] == "x"
    assert store.list_calls == calls
    w.stop()


async def test_watch_single_key_and_namespace(store: FakeStore, cacher: Cacher) -> None:
    one = await cacher.watch(key("a", "x"), ListOptions(resource_version=str(store.rev), recursive=False))
    ns = await cacher.watch(f"{PREFIX}/a", ListOptions(resource_version=str(store.rev)))
    await store.create(key("a", "y"), cm("a", "y"))
    await store.create(key("ab", "x"), cm("ab", "x"))
    await store.create(key("a", "x"), cm("a", "x"))
    ev = await nxt(one)
    assert ev.object["metadata"]["name"] == "x" and ev.object["metadata"]["namespace"] == "a"
    evs = await take(ns, 2)
    assert [(e.object["metadata"]["namespace"], e.object["metadata"]["name"]) for e in evs] == [("a", "y"), ("a", "x")]
    one.stop()
    ns.stop()


async def test_keys_outside_prefix_go_to_backend(store: FakeStore, cacher: Cacher) -> None:
    await store.create("/registry/secrets/a/s", cm("a", "s"))
    res = await cacher.get_list("/registry/secrets", ListOptions(resource_version="0"))
    assert names(res.items) == ["s"]


async def test_consistent_get_from_memory_sees_every_acknowledged_write(
        store: FakeStore, cacher: Cacher) -> None:
    """A get without resourceVersion is served from memory once the cache has reached a
    revision read after the get arrived: a write acknowledged before it is always seen."""
    calls = store.get_calls
    for i in range(20):
        await store.create(key("a", f"o{i:02}"), cm("a", f"o{i:02}", v=str(i)))
        got = await cacher.get(key("a", f"o{i:02}"), GetOptions())
        assert got is not None and got["metadata"]["labels"] == {"v": str(i)}
        await store.guaranteed_update(key("a", f"o{i:02}"),
                                      _relabel(f"{i}-2"))
        got = await cacher.get(key("a", f"o{i:02}"), GetOptions())
        assert got is not None and got["metadata"]["labels"] == {"v": f"{i}-2"}
    await store.delete(key("a", "o00"))
    assert await cacher.get(key("a", "o00"), GetOptions(ignore_not_found=True)) is None
    with pytest.raises(StorageError) as ei:
        await cacher.get(key("a", "o00"), GetOptions())
    assert ei.value.code == Code.KEY_NOT_FOUND
    assert ei.value.message == f"key not found: {key('a', 'o00')}"
    assert store.get_calls == calls  # all from memory


def _relabel(value: str) -> Any:
    async def update(cur: dict[str, Any] | None) -> dict[str, Any]:
        assert cur is not None
        cur["metadata"]["labels"] = {"v": value}
        return cur
    return update


async def test_consistent_gets_share_revision_reads_and_progress_requests(
        store: FakeStore, cacher: Cacher) -> None:
    await store.create(key("a", "x"), cm("a", "x"))
    await settle(cacher, store)
    store.bump_other()  # the cache needs a progress notification to be fresh
    revs, progress = store.revision_calls, store.progress_requests
    got = await asyncio.gather(*(cacher.get(key("a", "x"), GetOptions()) for _ in range(50)))
    assert all(g is not None and g["metadata"]["name"] == "x" for g in got)
    assert store.get_calls == 0
    assert store.revision_calls - revs <= 2
    assert store.progress_requests - progress <= 2
    assert cacher.resource_version == store.rev


async def test_consistent_get_without_progress_reads_the_store() -> None:
    store = FakeStore(progress=False)
    c = Cacher(store, PREFIX, resource="configmaps")
    await c.start()
    assert await c.wait_ready(5)
    await store.create(key("a", "x"), cm("a", "x"))
    await settle(c, store)
    assert (await c.get(key("a", "x"), GetOptions())) is not None
    assert store.get_calls == 0  # fresh: from memory
    store.bump_other()  # the cache cannot know it is fresh now
    revs = store.revision_calls
    got = await c.get(key("a", "x"), GetOptions())
    assert got is not None and store.get_calls == 1
    # for a while, gets go to the store at once (no revision read first)
    got = await c.get(key("a", "x"), GetOptions())
    assert store.get_calls == 2 and store.revision_calls == revs + 1
    await c.close()


async def test_next_call_waits_for_a_call_started_after_it() -> None:
    from storage.cacher.nextcall import NextCall

    started: list[int] = []
    gate = asyncio.Event()
    counter = 0

    async def fn() -> int:
        nonlocal counter
        counter += 1
        n = counter
        started.append(n)
        if n == 1:
            await gate.wait()
        return n

    call = NextCall(fn)
    a = asyncio.create_task(call())
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert started == [1]
    # b and c arrive while call 1 is in flight: they must not get its answer
    b = asyncio.create_task(call())
    c = asyncio.create_task(call())
    await asyncio.sleep(0)
    gate.set()
    assert await a == 1
    assert await b == 2 and await c == 2
    assert started == [1, 2]

    async def boom() -> int:
        raise StorageError(Code.UNREACHABLE, "down")

    failing = NextCall(boom)
    with pytest.raises(StorageError):
        await failing()
    # a cancelled caller leaves the shared call alone
    gate.clear()
    counter = 0
    started.clear()
    call2 = NextCall(fn)
    x = asyncio.create_task(call2())
    await asyncio.sleep(0)
    y = asyncio.create_task(call2())
    await asyncio.sleep(0)
    y.cancel()
    gate.set()
    assert await x == 1
    await call2.close()


async def test_next_call_gathers_callers_after_a_shared_call() -> None:
    """After a call shared by several callers, the next one waits a few loop turns so that
    callers arriving meanwhile share it; a lone caller is never kept waiting."""
    from storage.cacher.nextcall import NextCall

    gate = asyncio.Event()
    starts: list[int] = []

    async def fn() -> int:
        starts.append(len(starts) + 1)
        if len(starts) == 2:
            await gate.wait()
        return len(starts)

    async def arrive_later(turns: int) -> int:
        for _ in range(turns):
            await asyncio.sleep(0)
        return await call()

    call = NextCall(fn, gather_turns=8, gather_limit=10.0)
    # a lone caller: its call starts at once
    lone = asyncio.create_task(call())
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert starts == [1]
    assert await lone == 1
    # two callers share call 2; three more arrive while it is in flight (call 3), and two
    # more a few turns after it ended: with gathering they share call 3 too
    first = [asyncio.create_task(call()) for _ in range(2)]
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert starts == [1, 2]
    during = [asyncio.create_task(call()) for _ in range(3)]
    await asyncio.sleep(0)
    gate.set()
    late = [asyncio.create_task(arrive_later(3)) for _ in range(2)]
    assert [await t for t in first] == [2, 2]
    assert [await t for t in during + late] == [3] * 5
    assert starts == [1, 2, 3]

    # without gathering the late callers need a call of their own
    starts.clear()
    gate.clear()
    call = NextCall(fn)
    lone = asyncio.create_task(call())
    await asyncio.sleep(0)
    assert await lone == 1
    first = [asyncio.create_task(call()) for _ in range(2)]
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    during = [asyncio.create_task(call()) for _ in range(3)]
    await asyncio.sleep(0)
    gate.set()
    late = [asyncio.create_task(arrive_later(3)) for _ in range(2)]
    assert [await t for t in first] == [2, 2]
    assert [await t for t in during] == [3] * 3
    assert [await t for t in late] == [4, 4]


async def test_next_call_gathering_is_bounded_in_time() -> None:
    from storage.cacher.nextcall import NextCall

    calls = 0

    async def fn() -> int:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.01)
        return calls

    call = NextCall(fn, gather_turns=1_000_000, gather_limit=0.05)
    assert await asyncio.gather(call(), call()) == [1, 1]
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    assert await asyncio.gather(call(), call()) == [2, 2]
    # the turns' limit would take far longer than the time limit
    assert loop.time() - t0 < 5.0
    await call.close()


async def test_bookmark_two_seconds_before_the_watch_deadline(store: FakeStore) -> None:
    """Upstream's cacheWatcher sends a bookmark two seconds before the watch's deadline (and
    otherwise about once a minute), so that a client whose watch times out resumes from a
    recent revision instead of the last event it saw."""
    c = Cacher(store, PREFIX, resource="configmaps", bookmark_interval=60.0)
    await c.start()
    assert await c.wait_ready(5)
    try:
        await store.create(key("a", "x"), cm("a", "x"))
        await settle(c, store)
        started = time.monotonic()
        w = await c.watch(PREFIX, ListOptions(resource_version=str(store.rev),
                                              allow_watch_bookmarks=True, timeout_seconds=3.5))
        store.bump_other()
        await c.get_list(PREFIX, ListOptions())  # the cache learns the newer revision
        ev = await asyncio.wait_for(nxt(w), 10)
        assert ev.type == "BOOKMARK"
        assert ev.object == {"metadata": {"resourceVersion": str(store.rev)}}
        assert time.monotonic() - started < 3.5  # before the deadline, not a minute later
        w.stop()
    finally:
        await c.close()


async def _idle_until(cond: Any) -> None:
    for _ in range(500):
        if cond():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


async def test_direct_watchers_share_one_transform_run_per_event(store: FakeStore,
                                                                cacher: Cacher) -> None:
    """Watchers given the same sink transform get one result of it per event, the
    dispatcher's inline path (no selector) and CacheWatcher's own (a selector) alike, and a
    transform that fails sends the event through the iterator instead."""
    rv = str(cacher.resource_version)
    calls: list[tuple[str, str]] = []
    fail = {"on": "never"}

    def transform(type_: str, obj: dict[str, Any]) -> dict[str, Any]:
        name = obj["metadata"]["name"]
        calls.append((type_, name))
        if name == fail["on"]:
            raise ValueError("cannot decorate")
        return {**obj, "kind": "ConfigMap"}

    pred = Predicate(matches=lambda o: o["metadata"]["labels"].get("app") == "web",
                     everything=False)
    plain = [await cacher.watch(PREFIX, ListOptions(resource_version=rv)) for _ in range(3)]
    selective = await cacher.watch(PREFIX, ListOptions(resource_version=rv, predicate=pred))
    got: dict[int, list[dict[str, Any]]] = {i: [] for i in range(4)}
    watchers = [*plain, selective]
    for i, w in enumerate(watchers):
        w.attach_sink(lambda t, o, i=i: got[i].append(o) is None, transform)
    waiting = [asyncio.ensure_future(nxt(w)) for w in watchers]  # idle: direct on
    await asyncio.sleep(0.05)

    await store.create(key("a", "one"), cm("a", "one", app="web"))
    await _idle_until(lambda: all(len(v) == 1 for v in got.values()))
    assert calls == [("ADDED", "one"), ("ADDED", "one")]  # once inline, once for the selector
    assert got[0][0] is got[1][0] is got[2][0]  # one object for the three
    assert got[0][0]["kind"] == "ConfigMap"
    assert not any(f.done() for f in waiting)  # nobody's task was woken

    fail["on"] = "two"
    await store.create(key("a", "two"), cm("a", "two", app="web"))
    events = [await asyncio.wait_for(f, 5) for f in waiting]  # through the iterators
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [("ADDED", "two")] * 4
    assert "kind" not in events[0].object  # the iterator's consumer decorates its own
    assert [len(v) for v in got.values()] == [1, 1, 1, 1]
    assert calls.count(("ADDED", "two")) == 2  # the failure was not retried per watcher
    for w in watchers:
        w.stop()

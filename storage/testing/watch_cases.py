"""Watch cases of the conformance suite (upstream ``storage/testing/watcher_tests.go``).
See ``storage.testing.conformance`` for how to run them."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from storage.cacher.cacher import Cacher
from storage.errors import Code, StorageError
from storage.interface import ListOptions, Object, Predicate
from storage.testing.harness import Events, Harness, name, obj, rv

INITIAL_EVENTS_END = "plat.io/initial-events-end"


async def _watch(h: Harness, ns_or_prefix: str, opts: ListOptions) -> Events:
    w = await h.store.watch(ns_or_prefix, opts)
    h.watchers.append(w)
    return Events(w)


async def _set_label(h: Harness, ns: str, n: str, value: str) -> Object:
    async def upd(o: Object | None) -> Object:
        assert o is not None
        new = dict(o)
        new["metadata"] = dict(o["metadata"], labels={"pick": value})
        return new

    return await h.store.guaranteed_update(h.key(ns, n), upd)


async def case_watch_from_zero(h: Harness) -> None:
    """rv "0" and unset: synthetic ADDED for the current state, then every change."""
    for ns, rv_opt in (("ns1", "0"), ("ns2", "")):
        a = await h.put(ns, "a")
        b = await h.put(ns, "b")
        ev = await _watch(h, h.ns_prefix(ns), ListOptions(resource_version=rv_opt))
        first = await ev.take(2)
        assert sorted((e.type, name(e.object), rv(e.object)) for e in first) == [
            ("ADDED", "a", rv(a)), ("ADDED", "b", rv(b))]
        c = await h.put(ns, "c")
        got = await ev.next_non_bookmark()
        assert (got.type, name(got.object), rv(got.object)) == ("ADDED", "c", rv(c))
        ev.w.stop()


async def case_watch_from_version(h: Harness) -> None:
    """rv N: exactly the changes after N, in order, with DELETED carrying the last state at
    the deletion's revision."""
    a = await h.put("ns1", "a", data={"v": "1"})
    ev = await _watch(h, h.ns_prefix("ns1"), ListOptions(resource_version=str(rv(a))))

    async def upd(o: Object | None) -> Object:
        assert o is not None
        return dict(o, data={"v": "2"})

    a2 = await h.store.guaranteed_update(h.key("ns1", "a"), upd)
    b = await h.put("ns1", "b")
    gone = await h.store.delete(h.key("ns1", "a"))
    got = await ev.take(3)
    assert [(e.type, name(e.object), rv(e.object)) for e in got] == [
        ("MODIFIED", "a", rv(a2)), ("ADDED", "b", rv(b)), ("DELETED", "a", rv(gone))]
    assert got[0].object["data"] == {"v": "2"}
    assert got[2].object["data"] == {"v": "2"}
    # Starting from an older version replays history.
    ev2 = await _watch(h, h.ns_prefix("ns1"), ListOptions(resource_version=str(rv(a) - 1)))
    replay = await ev2.take(4)
    assert [e.type for e in replay] == ["ADDED", "MODIFIED", "ADDED", "DELETED"]


async def case_watch_compacted(h: Harness) -> None:
    a = await h.put("ns1", "a")
    await h.put("ns1", "b")
    last = await h.put("ns1", "c")
    await h.compact(rv(last))
    ev = await _watch(h, h.ns_prefix("ns1"), ListOptions(resource_version=str(rv(a))))
    got = await ev.next()
    assert got.type == "ERROR"
    assert got.error is not None and got.error.code is Code.RESOURCE_EXPIRED
    assert await ev.ended()


async def case_watch_predicate(h: Harness) -> None:
    """An object that starts matching arrives as ADDED, one that stops as DELETED."""
    await h.put("ns1", "a", labels={"pick": "no"})
    start = await h.put("ns1", "marker0", labels={"pick": "no"})

    def yes(o: Object) -> bool:
        return bool((o["metadata"].get("labels") or {}).get("pick") == "yes")

    pred = Predicate(matches=yes, everything=False, label_selector="pick=yes")
    ev = await _watch(h, h.ns_prefix("ns1"),
                      ListOptions(resource_version=str(rv(start)), predicate=pred))
    on = await _set_label(h, "ns1", "a", "yes")
    await _set_label(h, "ns1", "a", "yes2")
    await h.put("ns1", "b", labels={"pick": "no"})
    last = await h.put("ns1", "c", labels={"pick": "yes"})
    got = await ev.take(3)
    assert [(e.type, name(e.object)) for e in got] == [
        ("ADDED", "a"), ("DELETED", "a"), ("ADDED", "c")]
    assert rv(got[0].object) == rv(on)
    assert got[1].object["metadata"]["labels"] == {"pick": "yes"}  # the old state
    assert rv(got[2].object) == rv(last)


async def case_watch_namespace_isolation(h: Harness) -> None:
    start = await h.put("ns1", "start")
    ev = await _watch(h, h.ns_prefix("ns1"), ListOptions(resource_version=str(rv(start))))
    await h.put("ns10", "other")
    await h.put("ns1x", "other")
    mine = await h.put("ns1", "mine")
    got = await ev.next_non_bookmark()
    assert (got.type, name(got.object), rv(got.object)) == ("ADDED", "mine", rv(mine))


async def case_watch_single_key(h: Harness) -> None:
    a = await h.put("ns1", "a")
    ev = await _watch(h, h.key("ns1", "a"),
                      ListOptions(resource_version=str(rv(a)), recursive=False))
    await h.put("ns1", "ab")
    gone = await h.store.delete(h.key("ns1", "a"))
    got = await ev.next_non_bookmark()
    assert (got.type, rv(got.object)) == ("DELETED", rv(gone))


async def case_watch_initial_events_end(h: Harness) -> None:
    """sendInitialEvents with NotOlderThan: ADDED for the state, then a BOOKMARK annotated
    initial-events-end at the list's revision, then changes."""
    await h.put("ns1", "a")
    b = await h.put("ns1", "b")
    ev = await _watch(h, h.ns_prefix("ns1"), ListOptions(
        resource_version=str(rv(b)), resource_version_match="NotOlderThan",
        send_initial_events=True, allow_watch_bookmarks=True))
    got = [await ev.next(), await ev.next()]
    assert sorted((e.type, name(e.object)) for e in got) == [("ADDED", "a"), ("ADDED", "b")]
    mark = await ev.next()
    assert mark.type == "BOOKMARK"
    assert mark.object["metadata"]["annotations"] == {INITIAL_EVENTS_END: "true"}
    assert rv(mark.object) >= rv(b)
    c = await h.put("ns1", "c")
    nxt = await ev.next_non_bookmark()
    assert (nxt.type, name(nxt.object), rv(nxt.object)) == ("ADDED", "c", rv(c))
    # sendInitialEvents=false with rv "": only changes from now on.
    ev2 = await _watch(h, h.ns_prefix("ns1"), ListOptions(send_initial_events=False))
    d = await h.put("ns1", "d")
    first = await ev2.next_non_bookmark()
    assert (first.type, name(first.object), rv(first.object)) == ("ADDED", "d", rv(d))


async def case_watch_stop(h: Harness) -> None:
    start = await h.put("ns1", "a")
    ev = await _watch(h, h.ns_prefix("ns1"), ListOptions(resource_version=str(rv(start))))
    ev.w.stop()
    ev.w.stop()  # idempotent
    assert await ev.ended()
    await h.store.create(h.key("ns1", "after"), obj("ns1", "after"))


async def case_watch_no_gaps(h: Harness) -> None:
    """Concurrent writers: a watch sees every change exactly once, in revision order."""
    start = await h.put("ns1", "start")
    ev = await _watch(h, h.ns_prefix("ns1"), ListOptions(resource_version=str(rv(start))))

    async def writer(i: int) -> list[int]:
        o = await h.put("ns1", f"w{i:02d}")
        out = [rv(o)]

        async def upd(cur: Object | None) -> Object:
            assert cur is not None
            return dict(cur, data={"i": str(i)})

        out.append(rv(await h.store.guaranteed_update(h.key("ns1", f"w{i:02d}"), upd)))
        return out

    written = sorted(r for rs in await asyncio.gather(*(writer(i) for i in range(20)))
                     for r in rs)
    got = await ev.take(len(written))
    assert [rv(e.object) for e in got] == written
    assert sorted(e.type for e in got) == ["ADDED"] * 20 + ["MODIFIED"] * 20


async def case_watch_too_large(h: Harness) -> None:
    """A version the store has not reached (and does not reach within a few seconds): a
    store refuses the watch (504); a watch cache starts it, as upstream's cacher does, and
    delivers only what comes after that version (tests/storage/cacher/test_cacher.py checks
    which)."""
    cur = await h.store.current_revision()
    try:
        w = await h.store.watch(h.ns_prefix("ns1"),
                                ListOptions(resource_version=str(cur + 1000)))
    except StorageError as err:
        assert err.code is Code.TOO_LARGE_RESOURCE_VERSION
        assert err.retry_after_seconds == 1
        assert err.message.startswith(f"Too large resource version: {cur + 1000}, current: ")
    else:
        assert isinstance(h.store, Cacher), "only a watch cache starts such a watch"
        await h.put("ns1", "after")  # far below cur + 1000: not this watcher's
        w.stop()


WATCH_CASES: dict[str, Callable[[Harness], Awaitable[None]]] = {
    "watch_from_zero": case_watch_from_zero,
    "watch_from_version": case_watch_from_version,
    "watch_compacted": case_watch_compacted,
    "watch_predicate": case_watch_predicate,
    "watch_namespace_isolation": case_watch_namespace_isolation,
    "watch_single_key": case_watch_single_key,
    "watch_initial_events_end": case_watch_initial_events_end,
    "watch_stop": case_watch_stop,
    "watch_too_large": case_watch_too_large,
    "watch_no_gaps": case_watch_no_gaps,
}

"""CacheWatcher's direct delivery (attach_sink): the sink takes events only while the
consumer is idle, a refusal sends the rest through the queue, and every event reaches the
consumer side exactly once and in order."""

from __future__ import annotations

import asyncio
from typing import Any

from storage.cacher.cache_watcher import CacheWatcher
from storage.cacher.watch_cache import CacheEvent
from storage.interface import DirectWatcher, Predicate, WatchEvent


def _obj(name: str, rv: int, team: str = "a") -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": str(rv), "labels": {"team": team}}}


def _event(rv: int, *, prev_team: str | None = "a", team: str = "a") -> CacheEvent:
    prev = _obj("x", rv - 1, prev_team) if prev_team is not None else None
    return CacheEvent(type="MODIFIED" if prev else "ADDED", key="/r/ns/x",
                      obj=_obj("x", rv, team), prev=prev, rv=rv, received=0.0)


def _watcher(capacity: int = 100, **kw: Any) -> CacheWatcher:
    return CacheWatcher(key="/r/ns/", recursive=True, predicate=Predicate(),
                        allow_bookmarks=True, capacity=capacity, start_rv=1, **kw)


def _rv(ev: WatchEvent) -> int:
    return int(ev.object["metadata"]["resourceVersion"])


def _collect(taken: list[WatchEvent]) -> Any:
    """A sink that takes everything, kept as WatchEvents."""
    def sink(type_: str, obj: dict[str, Any]) -> bool:
        taken.append(WatchEvent(type=type_, object=obj))  # type: ignore[arg-type]
        return True
    return sink


async def _idle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_sink_takes_events_only_while_the_consumer_waits() -> None:
    w = _watcher(initial_objects=[_obj("a", 1)])
    assert isinstance(w, DirectWatcher)
    taken: list[WatchEvent] = []
    w.attach_sink(_collect(taken))
    w.offer(_event(2))  # the consumer has not asked yet: queued
    assert taken == []
    first = await anext(w)  # the initial object
    assert (first.type, first.object["metadata"]["name"]) == ("ADDED", "a")
    assert _rv(await anext(w)) == 2  # queued before the consumer was idle
    nxt = asyncio.ensure_future(anext(w))
    await _idle()  # the consumer now waits with nothing queued
    w.offer(_event(3))
    w.offer(_event(4))
    assert [_rv(e) for e in taken] == [3, 4]
    assert not nxt.done()  # the consumer was not woken
    w.stop()
    await _idle()
    assert nxt.done()
    w.offer(_event(5))
    assert [_rv(e) for e in taken] == [3, 4]  # nothing after stop


async def test_refusal_queues_until_the_consumer_drained() -> None:
    """One log of what reached the client side, in the order it got there (the sink's
    events when taken, the consumer's when iterated): exactly the offered order."""
    w = _watcher()
    delivered: list[tuple[str, int]] = []
    refuse = {4, 9}
    state = {"refusing": False}

    def sink(type_: str, obj: dict[str, Any]) -> bool:
        ev = WatchEvent(type=type_, object=obj)  # type: ignore[arg-type]
        if _rv(ev) in refuse:
            state["refusing"] = True  # e.g. the connection is paused for a while
        if state["refusing"]:
            return False
        delivered.append(("sink", _rv(ev)))
        return True

    w.attach_sink(sink)

    async def consume() -> None:
        async for ev in w:
            delivered.append(("queue", _rv(ev)))
            state["refusing"] = False  # the connection drained
            await asyncio.sleep(0)

    task = asyncio.create_task(consume())
    await _idle()
    order = list(range(2, 14))
    for rv in order:
        w.offer(_event(rv))
        if rv % 3 == 0:
            await _idle()
    await _idle()
    w.close()
    await asyncio.wait_for(task, 5)
    assert [rv for _, rv in delivered] == order
    ways = dict((rv, way) for way, rv in delivered)
    assert ways[4] == ways[5] == ways[9] == "queue"  # refused, and the next queued behind
    assert ways[2] == ways[7] == ways[13] == "sink"  # direct before, and again once drained


async def test_no_sink_before_initial_events_are_consumed() -> None:
    w = _watcher(initial_objects=[_obj("a", 1), _obj("b", 1)], end_bookmark_rv=1)
    taken: list[WatchEvent] = []
    w.attach_sink(_collect(taken))
    got = [await anext(w), await anext(w), await anext(w)]
    assert [e.type for e in got] == ["ADDED", "ADDED", "BOOKMARK"]
    w.offer(_event(2))
    assert taken == []  # the consumer has not asked for the next one yet
    assert _rv(await anext(w)) == 2


async def test_bookmark_and_selector_transitions_through_the_sink() -> None:
    w = CacheWatcher(key="/r/ns/", recursive=True, capacity=10, start_rv=1,
                     allow_bookmarks=True,
                     predicate=Predicate(matches=lambda o: o["metadata"]["labels"]["team"] == "a",
                                         everything=False))
    taken: list[WatchEvent] = []
    w.attach_sink(_collect(taken))
    nxt = asyncio.ensure_future(anext(w))
    await _idle()
    w.offer(_event(2, prev_team="a", team="b"))  # stops matching: DELETED at rv 2
    w.offer(_event(3, prev_team="b", team="b"))  # not for this watcher
    w.offer(_event(4, prev_team="b", team="a"))  # matches again: ADDED
    w.offer_bookmark(5)
    assert [(e.type, _rv(e)) for e in taken] == [("DELETED", 2), ("ADDED", 4), ("BOOKMARK", 5)]
    assert taken[0].object["metadata"]["labels"]["team"] == "a"  # the state it had
    w.stop()
    await _idle()
    assert nxt.done()


async def test_a_consumer_that_never_reads_is_closed() -> None:
    closed: list[CacheWatcher] = []
    w = _watcher(capacity=3, on_stop=closed.append)
    w.attach_sink(lambda t, o: False)  # e.g. the client stopped reading
    nxt = asyncio.ensure_future(anext(w))
    await _idle()
    assert [w.offer(_event(rv)) for rv in range(2, 6)] == [True, True, True, False]
    assert closed == [w] and w.closed
    got = [await nxt]
    async for ev in w:
        got.append(ev)
    assert [_rv(e) for e in got] == [2, 3, 4]  # what it held, then the end

"""Shared delivery in the cacher (cache_watcher.Fanout, storage.interface.SinkShare): watchers
of one key whose sinks have one share get each event through one publish, in order, never
twice; they leave before anything is handed to them alone (a bookmark), when a publish
fails, when their channel drops them, and when they stop; then they rejoin."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from storage.cacher import Cacher
from storage.interface import ListOptions, Predicate, WatchEvent
from tests.storage.cacher.fakestore import FakeStore

PREFIX = "/registry/configmaps"


def cm(name: str, team: str = "a") -> dict[str, Any]:
    return {"metadata": {"namespace": "a", "name": name, "labels": {"team": team}}, "data": {}}


def rv(ev: WatchEvent) -> int:
    return int(ev.object["metadata"]["resourceVersion"])


class Channel:
    """Delivers at once (the real one writes later; order is what is checked here)."""

    def __init__(self) -> None:
        self.members: dict[Sink, Callable[[], None]] = {}
        self.publishes = 0
        self.fail = False

    def publish(self, event: WatchEvent) -> bool:
        if self.fail:
            return False
        self.publishes += 1
        for sink in self.members:
            sink.got.append(("shared", event.type, rv(event)))
        return True

    def join(self, sink: Any, on_leave: Callable[[], None]) -> bool:
        if not sink.open:
            return False
        self.members[sink] = on_leave
        sink.got.append(("join", "", 0))
        return True

    def leave(self, sink: Any) -> None:
        del self.members[sink]
        sink.got.append(("leave", "", 0))

    def drop(self, sink: Sink) -> None:
        self.members.pop(sink)()


class Share:
    def __init__(self) -> None:
        self.channels: list[Channel] = []

    def channel(self) -> Channel:
        self.channels.append(Channel())
        return self.channels[-1]


class Sink:
    def __init__(self, share: Share | None) -> None:
        if share is not None:
            self.share = share
        self.open = True
        self.got: list[tuple[str, str, int]] = []

    def __call__(self, event: WatchEvent) -> bool:
        if not self.open:
            return False
        self.got.append(("direct", event.type, rv(event)))
        return True

    def events(self) -> list[int]:
        return [r for how, _, r in self.got if how in ("direct", "shared")]


@pytest.fixture
async def store() -> FakeStore:
    return FakeStore()


@pytest.fixture
async def cacher(store: FakeStore) -> AsyncIterator[Cacher]:
    c = Cacher(store, PREFIX, resource="configmaps", bookmark_interval=3600, watcher_capacity=16)
    await c.start()
    assert await c.wait_ready(5)
    yield c
    await c.close()


async def _settle(cacher: Cacher, store: FakeStore) -> None:
    for _ in range(500):
        if cacher.resource_version >= store.rev:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("cache did not catch up")


async def _watch(cacher: Cacher, store: FakeStore, sink: Sink,
                 predicate: Predicate | None = None, bookmarks: bool = False
                 ) -> tuple[Any, asyncio.Future[WatchEvent]]:
    """A watcher from the current revision with ``sink`` attached and its consumer idle."""
    opts = ListOptions(resource_version=str(store.rev), predicate=predicate or Predicate(),
                       allow_watch_bookmarks=bookmarks)
    w = await cacher.watch(PREFIX + "/a/", opts)
    w.attach_sink(sink)
    waiting = asyncio.ensure_future(anext(w))
    for _ in range(5):
        await asyncio.sleep(0)
    return w, waiting


async def _writes(cacher: Cacher, store: FakeStore, n: int, first: int = 0) -> list[int]:
    out = []
    for i in range(first, first + n):
        await store.create(f"{PREFIX}/a/x{i}", cm(f"x{i}"))
        out.append(store.rev)
        await _settle(cacher, store)
    return out


async def test_members_get_each_event_once_through_one_publish(
        store: FakeStore, cacher: Cacher) -> None:
    share, other = Share(), Share()
    sinks = [Sink(share) for _ in range(5)]
    lone, selective = Sink(other), Sink(share)
    plain = Sink(None)  # no share: one by one, as before
    watches = [await _watch(cacher, store, s) for s in [*sinks, lone, plain]]
    watches.append(await _watch(cacher, store, selective,
                                predicate=Predicate(everything=False, label_selector="team=a",
                                                    matches=lambda o: True)))
    want = await _writes(cacher, store, 4)
    for s in [*sinks, lone, selective, plain]:
        assert s.events() == want  # every event once, in order
    # the first event went to each sink directly; after it they joined, one channel a share
    assert [how for how, _, _ in sinks[0].got] == ["direct", "join"] + ["shared"] * 3
    (channel,) = share.channels
    assert channel.publishes == 3 and set(channel.members) == set(sinks)
    assert [how for how, _, _ in lone.got] == ["direct", "join"] + ["shared"] * 3
    assert {how for how, _, _ in selective.got} == {"direct"}  # a selector: never shared
    assert {how for how, _, _ in plain.got} == {"direct"}
    for w, waiting in watches:
        assert not waiting.done()  # the consumers were never woken
        w.stop()
    assert channel.members == {} and cacher._fanouts == {}


async def test_a_bookmark_leaves_the_channel_first(store: FakeStore, cacher: Cacher) -> None:
    share = Share()
    sink = Sink(share)
    w, _ = await _watch(cacher, store, sink, bookmarks=True)
    first = await _writes(cacher, store, 2)
    store.bump_other()
    await cacher.get_list(PREFIX, ListOptions())  # progress: the cache moves past the event
    w.offer_bookmark(cacher.resource_version)
    later = await _writes(cacher, store, 2, first=2)
    assert sink.got == [
        ("direct", "ADDED", first[0]), ("join", "", 0), ("shared", "ADDED", first[1]),
        ("leave", "", 0), ("direct", "BOOKMARK", store.rev - 2),
        ("direct", "ADDED", later[0]), ("join", "", 0), ("shared", "ADDED", later[1])]
    # the bookmark is only sent past the last event published to the watcher
    w.offer_bookmark(later[1])
    assert sink.got[-1] == ("leave", "", 0)
    w.stop()


async def test_a_failed_publish_offers_the_event_to_each_member(
        store: FakeStore, cacher: Cacher) -> None:
    share = Share()
    sinks = [Sink(share) for _ in range(3)]
    watches = [await _watch(cacher, store, s) for s in sinks]
    want = await _writes(cacher, store, 2)
    (channel,) = share.channels
    channel.fail = True
    want += await _writes(cacher, store, 1, first=2)
    assert channel.members == {}  # each was handed the event alone, then joined a new channel
    want += await _writes(cacher, store, 2, first=3)
    for s in sinks:
        assert s.events() == want
        assert [how for how, _, _ in s.got] == [
            "direct", "join", "shared", "leave", "direct", "join", "shared", "shared"]
    assert len(share.channels) == 2 and set(share.channels[1].members) == set(sinks)
    for w, _ in watches:
        w.stop()


async def test_a_dropped_member_gets_its_events_through_the_queue(
        store: FakeStore, cacher: Cacher) -> None:
    share = Share()
    keeps, slow = Sink(share), Sink(share)
    await _watch(cacher, store, keeps)
    w, waiting = await _watch(cacher, store, slow)
    want = await _writes(cacher, store, 2)
    (channel,) = share.channels
    slow.open = False  # the connection is full: the channel drops it, it refuses events
    channel.drop(slow)
    more = await _writes(cacher, store, 2, first=2)
    assert keeps.events() == want + more
    assert slow.events() == want
    # the consumer takes over: woken with the first refused event, then the next one
    assert rv(await asyncio.wait_for(waiting, 5)) == more[0]
    assert rv(await asyncio.wait_for(anext(w), 5)) == more[1]
    slow.open = True  # reading again: the idle consumer lets the sink take events
    waiting = asyncio.ensure_future(anext(w))
    await asyncio.sleep(0)
    last = await _writes(cacher, store, 2, first=4)
    assert slow.events() == want + last and not waiting.done()
    assert set(channel.members) == {keeps, slow}
    w.stop()
    assert set(channel.members) == {keeps}

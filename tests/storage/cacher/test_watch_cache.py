"""WatchCache alone: the event window's bounds (count and time) and the floor."""

from __future__ import annotations

from storage.cacher.watch_cache import WatchCache


def obj(name: str, rv: int) -> dict[str, object]:
    return {"metadata": {"name": name, "resourceVersion": str(rv)}}


def test_window_keeps_history_seconds_then_evicts() -> None:
    now = [100.0]
    wc = WatchCache(history_seconds=300, max_events=1000, clock=lambda: now[0])
    wc.replace([], 10)
    assert wc.floor == 10
    for i in range(5):
        now[0] += 10
        wc.apply("MODIFIED", f"/p/k{i}", obj(f"k{i}", 11 + i), 11 + i)
    assert [e.rv for e in wc.events] == [11, 12, 13, 14, 15] and wc.floor == 10
    # 301 s after the first two events: they leave, the floor moves to the last evicted
    now[0] = 100 + 20 + 301
    wc.apply("MODIFIED", "/p/k9", obj("k9", 30), 30)
    assert [e.rv for e in wc.events] == [13, 14, 15, 30] and wc.floor == 12
    assert [e.rv for e in wc.events_after(12)] == [13, 14, 15, 30]
    assert [e.rv for e in wc.events_after(14)] == [15, 30]


def test_window_bounded_by_count() -> None:
    wc = WatchCache(history_seconds=300, max_events=3)
    wc.replace([], 1)
    for rv in range(2, 8):
        wc.apply("MODIFIED", f"/p/k{rv}", obj("k", rv), rv)
    assert [e.rv for e in wc.events] == [5, 6, 7] and wc.floor == 4


def test_apply_types_and_sorted_keys() -> None:
    wc = WatchCache(history_seconds=300, max_events=10)
    wc.replace([("/p/b", obj("b", 2))], 2)
    ev = wc.apply("MODIFIED", "/p/a", obj("a", 3), 3)
    assert ev is not None and ev.type == "ADDED" and ev.prev is None
    ev = wc.apply("MODIFIED", "/p/b", obj("b", 4), 4)
    assert ev is not None and ev.type == "MODIFIED" and ev.prev == obj("b", 2)
    assert wc.apply("MODIFIED", "/p/b", obj("b", 4), 4) is None  # already reflected
    assert wc.range_keys("/p/") == ["/p/a", "/p/b"]
    ev = wc.apply("DELETED", "/p/a", obj("a", 5), 5)
    assert ev is not None and ev.type == "DELETED"
    assert wc.range_keys("/p/") == ["/p/b"] and wc.rv == 5
    assert wc.apply("DELETED", "/p/zz", obj("zz", 6), 6) is None and wc.rv == 6
    assert wc.progress(9) and wc.rv == 9 and not wc.progress(8)


def test_encodings_made_once_per_state_and_encoder() -> None:
    from storage.cacher.watch_cache import ItemEncoder

    calls: list[str] = []

    def enc(tag: str) -> ItemEncoder:
        def encode(o: dict[str, object]) -> bytes:
            meta = o["metadata"]
            assert isinstance(meta, dict)
            calls.append(meta["name"])
            return f"{tag}:{meta['name']}@{meta['resourceVersion']}".encode()
        return ItemEncoder(ident=tag, encode=encode)

    c = WatchCache(history_seconds=60, max_events=10)
    c.replace([("p/a", obj("a", 1)), ("p/b", obj("b", 1))], 1)
    a = enc("x")
    assert c.encoded(["p/a", "p/b"], a) == [b"x:a@1", b"x:b@1"]
    assert c.encoded(["p/b", "p/a"], a) == [b"x:b@1", b"x:a@1"]
    assert calls == ["a", "b"]
    c.apply("MODIFIED", "p/a", obj("a", 2), 2)
    assert c.encoded(["p/a", "p/b"], a) == [b"x:a@2", b"x:b@1"]
    assert calls == ["a", "b", "a"]
    # a stale event (at or below the cache's revision) changes nothing
    c.apply("MODIFIED", "p/a", obj("a", 1), 1)
    assert c.encoded(["p/a"], a) == [b"x:a@2"] and calls == ["a", "b", "a"]
    # another encoding replaces the cached one
    assert c.encoded(["p/b"], enc("y")) == [b"y:b@1"]
    assert c.encoded(["p/b"], a) == [b"x:b@1"]
    c.apply("DELETED", "p/b", obj("b", 3), 3)
    c.apply("MODIFIED", "p/b", obj("b", 4), 4)
    assert c.encoded(["p/b"], a) == [b"x:b@4"]
    c.replace([("p/a", obj("a", 9))], 9)
    assert c.encoded(["p/a"], a) == [b"x:a@9"]

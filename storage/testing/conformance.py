"""The storage conformance suite (upstream ``storage/testing/store_tests.go`` and
``watcher_tests.go``): plain async functions, each taking a ``Harness``.

Reuse it for any ``storage.interface.Interface`` (the etcd3 store over gRPC, the embedded
store, the watch cache)::

    import pytest
    from storage.testing.conformance import ALL_CASES
    from storage.testing.harness import Harness

    @pytest.mark.parametrize("case", ALL_CASES.values(), ids=ALL_CASES.keys())
    async def test_conformance(my_store, case):
        h = Harness(store=my_store, compact=my_store.compact)  # or the backing store's
        try:
            await case(h)
        finally:
            h.close()

Every case uses keys under its own ``h.prefix``, so cases may share one cluster; cases that
compact only compact up to revisions they wrote themselves. Stores under test should answer
a too-large resource version quickly (e.g. ``too_large_wait=0.3``); nothing asserts a time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from storage.errors import Code, StorageError
from storage.interface import GetOptions, ListOptions, Object, Preconditions, Predicate
from storage.testing.harness import Harness, name, obj, rv
from storage.testing.watch_cases import WATCH_CASES

Case = Callable[[Harness], Awaitable[None]]


async def _raises(code: Code, aw: Awaitable[Any]) -> StorageError:
    try:
        await aw
    except StorageError as err:
        assert err.code is code, f"expected {code}, got {err!r}"
        return err
    raise AssertionError(f"expected StorageError({code.name})")


def _labelled(value: str) -> Predicate:
    def matches(o: Object) -> bool:
        return bool((o["metadata"].get("labels") or {}).get("pick") == value)

    return Predicate(matches=matches, everything=False, label_selector=f"pick={value}")


# -- create / get -------------------------------------------------------------------------


async def case_create(h: Harness) -> None:
    created = await h.put("ns1", "a", data={"k": "v"})
    assert rv(created) > 0
    assert created["data"] == {"k": "v"}
    await _raises(Code.KEY_EXISTS, h.put("ns1", "a"))
    bad = obj("ns1", "b")
    bad["metadata"]["resourceVersion"] = "7"
    await _raises(Code.INVALID, h.store.create(h.key("ns1", "b"), bad))
    got = await h.store.get(h.key("ns1", "a"), GetOptions())
    assert got == created


async def case_get(h: Harness) -> None:
    a = await h.put("ns1", "a")
    key = h.key("ns1", "a")
    assert await h.store.get(key, GetOptions(resource_version="0")) == a
    assert await h.store.get(key, GetOptions(resource_version=str(rv(a)))) == a  # not older
    await _raises(Code.KEY_NOT_FOUND, h.store.get(h.key("ns1", "missing"), GetOptions()))
    assert await h.store.get(h.key("ns1", "missing"), GetOptions(ignore_not_found=True)) is None
    cur = await h.store.current_revision()
    err = await _raises(
        Code.TOO_LARGE_RESOURCE_VERSION,
        h.store.get(key, GetOptions(resource_version=str(cur + 1000))),
    )
    assert err.retry_after_seconds == 1
    assert err.message.startswith(f"Too large resource version: {cur + 1000}, current: ")
    await _raises(Code.INVALID, h.store.get(key, GetOptions(resource_version="abc")))


# -- list ---------------------------------------------------------------------------------


async def case_list_cells(h: Harness) -> None:
    """Every cell of SPEC 8.1 without paging and with limit / Exact / NotOlderThan."""
    a = await h.put("ns1", "a")
    b = await h.put("ns1", "b")
    await h.put("ns10", "c")
    rv_ab = rv(b)

    async def upd(o: Object | None) -> Object:
        assert o is not None
        n = dict(o)
        n["data"] = {"changed": "yes"}
        return n

    await h.store.guaranteed_update(h.key("ns1", "a"), upd)
    later = await h.put("ns1", "d")
    ns1 = h.ns_prefix("ns1")

    res = await h.store.get_list(ns1, ListOptions())  # unset: latest
    assert [name(o) for o in res.items] == ["a", "b", "d"]
    assert res.resource_version >= rv(later)
    assert res.items[0]["data"] == {"changed": "yes"}
    assert res.continue_token == "" and res.remaining_item_count is None

    # any: a cache may serve an older state (over an etcd without progress notifications
    # the consistent list above read the store and the cache may still be behind), but
    # catches up
    for _ in range(100):
        res = await h.store.get_list(ns1, ListOptions(resource_version="0"))
        if {"a", "b"} <= {name(o) for o in res.items}:
            break
        await asyncio.sleep(0.05)
    assert {"a", "b"} <= {name(o) for o in res.items}

    res = await h.store.get_list(ns1, ListOptions(resource_version=str(rv_ab)))  # not older
    assert res.resource_version >= rv_ab
    assert [name(o) for o in res.items] == ["a", "b", "d"]

    res = await h.store.get_list(ns1, ListOptions(resource_version=str(rv_ab), limit=10))
    assert res.resource_version == rv_ab  # limit with rv: exact
    assert [name(o) for o in res.items] == ["a", "b"]
    assert res.items[0] == a

    res = await h.store.get_list(
        ns1, ListOptions(resource_version=str(rv_ab), resource_version_match="Exact")
    )
    assert res.resource_version == rv_ab
    assert [(name(o), rv(o)) for o in res.items] == [("a", rv(a)), ("b", rv(b))]

    res = await h.store.get_list(
        ns1, ListOptions(resource_version=str(rv_ab), resource_version_match="NotOlderThan")
    )
    assert res.resource_version >= rv(later)
    assert [name(o) for o in res.items] == ["a", "b", "d"]

    cur = await h.store.current_revision()
    for opts in (
        ListOptions(resource_version=str(cur + 1000)),
        ListOptions(resource_version=str(cur + 1000), resource_version_match="NotOlderThan"),
        ListOptions(resource_version=str(cur + 1000), resource_version_match="Exact"),
        ListOptions(resource_version=str(cur + 1000), limit=1),
    ):
        err = await _raises(Code.TOO_LARGE_RESOURCE_VERSION, h.store.get_list(ns1, opts))
        assert err.retry_after_seconds == 1

    # A single object (not recursive).
    res = await h.store.get_list(h.key("ns1", "b"), ListOptions(recursive=False))
    assert [name(o) for o in res.items] == ["b"]


async def case_list_compacted(h: Harness) -> None:
    a = await h.put("ns1", "a")
    await h.put("ns1", "b")
    b2 = await h.put("ns1", "c")
    await h.compact(rv(b2))
    err = await _raises(
        Code.RESOURCE_EXPIRED,
        h.store.get_list(h.ns_prefix("ns1"),
                         ListOptions(resource_version=str(rv(a)), resource_version_match="Exact")),
    )
    assert err.message == "The resourceVersion for the provided list is too old."
    assert await h.store.compacted_revision() >= rv(b2)


async def case_paging(h: Harness) -> None:
    for n in "abcde":
        await h.put("ns1", n)
    await h.put("ns10", "z")
    ns1 = h.ns_prefix("ns1")
    p1 = await h.store.get_list(ns1, ListOptions(limit=2))
    assert [name(o) for o in p1.items] == ["a", "b"]
    assert p1.remaining_item_count == 3 and p1.continue_token
    # Writes between pages do not show: every page is read at the first page's revision.
    await h.put("ns1", "bb")
    await h.store.delete(h.key("ns1", "e"))
    p2 = await h.store.get_list(ns1, ListOptions(limit=2, continue_token=p1.continue_token))
    assert [name(o) for o in p2.items] == ["c", "d"]
    assert p2.resource_version == p1.resource_version
    assert p2.remaining_item_count == 1
    p3 = await h.store.get_list(ns1, ListOptions(limit=2, continue_token=p2.continue_token,
                                                 resource_version="0"))
    assert [name(o) for o in p3.items] == ["e"]
    assert p3.continue_token == "" and p3.remaining_item_count is None
    assert p3.resource_version == p1.resource_version
    await _raises(
        Code.INVALID,
        h.store.get_list(ns1, ListOptions(limit=2, continue_token=p1.continue_token,
                                          resource_version=str(p1.resource_version))),
    )
    for token in ("not-a-token!", "eyJ2IjoibWV0YS5wbGF0LmlvL3YxIiwicnYiOjAsInN0YXJ0IjoieCJ9"):
        err = await _raises(Code.INVALID,
                            h.store.get_list(ns1, ListOptions(limit=2, continue_token=token)))
        assert err.message.startswith("invalid continue token: continue key is not valid")


async def case_paging_with_selector(h: Harness) -> None:
    """A selector never yields an empty page while matching items remain."""
    for i in range(12):
        await h.put("ns1", f"o{i:02d}", labels={"pick": "yes" if i in (0, 11) else "no"})
    ns1 = h.ns_prefix("ns1")
    p1 = await h.store.get_list(ns1, ListOptions(limit=1, predicate=_labelled("yes")))
    assert [name(o) for o in p1.items] == ["o00"]
    assert p1.continue_token and p1.remaining_item_count is None
    p2 = await h.store.get_list(ns1, ListOptions(limit=1, predicate=_labelled("yes"),
                                                 continue_token=p1.continue_token))
    assert [name(o) for o in p2.items] == ["o11"]
    assert p2.remaining_item_count is None
    assert p2.resource_version == p1.resource_version
    if p2.continue_token:  # allowed only if a further page can be asked for
        p3 = await h.store.get_list(ns1, ListOptions(limit=1, predicate=_labelled("yes"),
                                                     continue_token=p2.continue_token))
        assert p3.items == [] and p3.continue_token == ""
    res = await h.store.get_list(ns1, ListOptions(predicate=_labelled("no")))
    assert len(res.items) == 10


async def case_continue_expired(h: Harness) -> None:
    for n in "abc":
        await h.put("ns1", n)
    ns1 = h.ns_prefix("ns1")
    p1 = await h.store.get_list(ns1, ListOptions(limit=1))
    await h.put("ns1", "d")
    last = await h.put("ns1", "e")
    await h.compact(rv(last))
    err = await _raises(
        Code.RESOURCE_EXPIRED,
        h.store.get_list(ns1, ListOptions(limit=1, continue_token=p1.continue_token)),
    )
    assert err.message.startswith("The provided continue parameter is too old")
    assert "inconsistent list" in err.message
    assert err.continue_token
    # The inconsistent token continues after "a" at the latest revision.
    rest = await h.store.get_list(ns1, ListOptions(continue_token=err.continue_token, limit=10))
    assert [name(o) for o in rest.items] == ["b", "c", "d", "e"]
    assert rest.resource_version >= rv(last)


# -- update / delete ----------------------------------------------------------------------


async def case_guaranteed_update(h: Harness) -> None:
    key = h.key("ns1", "counter")
    await h.put("ns1", "counter", data={"n": "0"})

    async def incr(o: Object | None) -> Object:
        assert o is not None
        n = dict(o)
        await asyncio.sleep(0)  # let the other updaters interleave
        n["data"] = {"n": str(int(o["data"]["n"]) + 1)}
        return n

    await asyncio.gather(*(h.store.guaranteed_update(key, incr) for _ in range(8)))
    cur = await h.store.get(key, GetOptions())
    assert cur is not None and cur["data"] == {"n": "8"}

    async def same(o: Object | None) -> Object:
        assert o is not None
        return dict(o)

    kept = await h.store.guaranteed_update(key, same)
    assert rv(kept) == rv(cur)  # no-op: nothing written

    async def reordered(o: Object | None) -> Object:
        assert o is not None
        return dict(reversed(list(o.items())))

    kept = await h.store.guaranteed_update(key, reordered)
    assert rv(kept) == rv(cur)  # the same object built in another key order: still a no-op
    # A stale cached object costs a retry, never a lost update.
    stale = dict(cur)
    stale["metadata"] = dict(cur["metadata"], resourceVersion=str(rv(cur) - 1))
    after = await h.store.guaranteed_update(key, incr, cached_existing=stale)
    assert after["data"] == {"n": "9"} and rv(after) > rv(cur)

    await _raises(Code.KEY_NOT_FOUND, h.store.guaranteed_update(h.key("ns1", "nope"), incr))

    async def create(o: Object | None) -> Object:
        assert o is None
        return obj("ns1", "fresh")

    made = await h.store.guaranteed_update(h.key("ns1", "fresh"), create, ignore_not_found=True)
    assert name(made) == "fresh" and rv(made) > rv(after)

    err = await _raises(
        Code.CONFLICT,
        h.store.guaranteed_update(key, incr, preconditions=Preconditions(uid="other")),
    )
    assert err.message == (
        "Precondition failed: UID in precondition: other, UID in object meta: uid-counter"
    )

    class Refused(Exception):
        pass

    async def refuse(o: Object | None) -> Object:
        raise Refused()

    try:
        await h.store.guaranteed_update(key, refuse)
    except Refused:
        pass
    else:
        raise AssertionError("the update function's error must propagate")


async def case_delete(h: Harness) -> None:
    a = await h.put("ns1", "a", data={"x": "1"})
    key = h.key("ns1", "a")
    err = await _raises(Code.CONFLICT,
                        h.store.delete(key, preconditions=Preconditions(uid="wrong")))
    assert err.message == (
        "Precondition failed: UID in precondition: wrong, UID in object meta: uid-a"
    )
    err = await _raises(
        Code.CONFLICT, h.store.delete(key, preconditions=Preconditions(resource_version="1"))
    )
    assert err.message == (
        f"Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in object "
        f"meta: {rv(a)}"
    )

    class No(Exception):
        pass

    async def veto(o: Object) -> None:
        raise No()

    try:
        await h.store.delete(key, validate_deletion=veto)
    except No:
        pass
    else:
        raise AssertionError("validate_deletion's error must propagate")
    gone = await h.store.delete(
        key, preconditions=Preconditions(uid="uid-a", resource_version=str(rv(a)))
    )
    assert gone["data"] == {"x": "1"} and rv(gone) > rv(a)
    await _raises(Code.KEY_NOT_FOUND, h.store.get(key, GetOptions()))
    await _raises(Code.KEY_NOT_FOUND, h.store.delete(key))
    # A stale cached object is re-read, not trusted.
    b = await h.put("ns1", "b")
    stale = dict(b)
    stale["metadata"] = dict(b["metadata"], uid="old-uid", resourceVersion=str(rv(b) - 1))
    out = await h.store.delete(h.key("ns1", "b"), preconditions=Preconditions(uid="uid-b"),
                               cached_existing=stale)
    assert name(out) == "b"


async def case_namespace_isolation(h: Harness) -> None:
    await h.put("ns1", "a")
    await h.put("ns10", "b")
    await h.put("ns1x", "c")
    res = await h.store.get_list(h.ns_prefix("ns1"), ListOptions())
    assert [name(o) for o in res.items] == ["a"]
    res = await h.store.get_list(h.ns_prefix("ns1") + "/", ListOptions())
    assert [name(o) for o in res.items] == ["a"]
    assert await h.store.count(h.ns_prefix("ns1")) == 1
    assert await h.store.count(h.prefix) == 3


async def case_too_large_object(h: Harness) -> None:
    """An object over the store's request limit (etcd: 1.5 MiB) is bad input: INVALID."""
    big = "x" * (1_600_000)
    await _raises(Code.INVALID, h.put("ns1", "big", data={"k": big}))
    small = await h.put("ns1", "small")

    async def grow(o: Object | None) -> Object:
        assert o is not None
        return dict(o, data={"k": big})

    await _raises(Code.INVALID, h.store.guaranteed_update(h.key("ns1", "small"), grow))
    assert await h.store.get(h.key("ns1", "small"), GetOptions()) == small


async def case_ttl(h: Harness) -> None:
    """An object written with a TTL (events, --event-ttl) is deleted by the store once it
    has passed (an etcd lease, shared by writes close in time); an update with the TTL
    renews it; other objects stay."""
    keep = await h.put("ns1", "keep")
    for n in ("e1", "e2"):
        await h.store.create(h.key("ns1", n), obj("ns1", n), ttl=2)

    async def touch(o: Object | None) -> Object:
        assert o is not None
        return dict(o, data={"n": "2"})

    await h.store.guaranteed_update(h.key("ns1", "e2"), touch, ttl=2)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        left = [n for n in ("e1", "e2")
                if await h.store.get(h.key("ns1", n), GetOptions(ignore_not_found=True))]
        if not left:
            break
        await asyncio.sleep(0.25)
    assert not left, f"still there after 30 s: {left}"
    assert await h.store.get(h.key("ns1", "keep"), GetOptions()) == keep


CRUD_CASES: dict[str, Callable[[Harness], Awaitable[None]]] = {
    "create": case_create,
    "get": case_get,
    "list_cells": case_list_cells,
    "list_compacted": case_list_compacted,
    "paging": case_paging,
    "paging_with_selector": case_paging_with_selector,
    "continue_expired": case_continue_expired,
    "guaranteed_update": case_guaranteed_update,
    "delete": case_delete,
    "namespace_isolation": case_namespace_isolation,
    "too_large_object": case_too_large_object,
    "ttl": case_ttl,
}
ALL_CASES: dict[str, Callable[[Harness], Awaitable[None]]] = {**CRUD_CASES, **WATCH_CASES}

"""The endpoint's side of shared watch frames (endpoints/watch.py ``_Channel``): a published
event is framed once and written to every member in its flush round after the member's own
pending bytes; a member leaving on the cache's side keeps its part ahead of what it is
handed next; a member whose connection is paused is written what it has, then dropped; the
log is trimmed once every member has been written."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import orjson

from apiserver.endpoints import watch as w
from apiserver.endpoints.negotiation import JSON, OutputType


class Transport:
    def __init__(self) -> None:
        self.data = b""
        self.writes = 0
        self.closing = False

    def write(self, data: bytes) -> None:
        self.data += data
        self.writes += 1

    def is_closing(self) -> bool:
        return self.closing

    def events(self) -> list[tuple[str, str]]:
        """(type, name) of every chunk written, undoing the chunked framing."""
        out, buf = [], self.data
        while buf:
            size, _, rest = buf.partition(b"\r\n")
            n = int(size, 16)
            doc = orjson.loads(rest[:n])
            out.append((doc["type"], doc["object"]["metadata"]["name"]))
            buf = rest[n + 2:]
        return out


def _direct(shared: Any, output: OutputType | None = None) -> tuple[Any, Transport, Any]:
    transport = Transport()
    protocol = SimpleNamespace(writing_paused=False)
    scope = SimpleNamespace(output=output or OutputType(media_type=JSON))
    return w._Direct(scope, transport, protocol, shared), transport, protocol  # type: ignore[arg-type]


def _obj(name: str) -> dict[str, Any]:
    return {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": name}}


async def _rounds() -> None:
    for _ in range(50):
        await asyncio.sleep(0)
    await asyncio.sleep(0.05)  # past the pause after a round
    for _ in range(50):
        await asyncio.sleep(0)


async def test_members_share_each_frame_in_order() -> None:
    shared = w._PerLoop(asyncio.get_running_loop())
    members = [_direct(shared) for _ in range(3)]
    table = _direct(shared, OutputType(media_type=JSON, convert="Table"))[0]
    assert table.share is None  # converted output: no share
    share = members[0][0].share
    assert share is not None and all(d.share is share for d, _, _ in members)
    channel = share.channel()
    left: list[int] = []
    for i, (d, _, _) in enumerate(members):
        assert d.push("ADDED", _obj("before"))  # handed alone, then joined
        assert channel.join(d, lambda i=i: left.append(i))
    for name in ("a", "b", "c"):
        assert channel.publish("MODIFIED", _obj(name))
    await _rounds()
    for _, t, _ in members:
        assert t.events() == [("ADDED", "before"), ("MODIFIED", "a"), ("MODIFIED", "b"),
                              ("MODIFIED", "c")]
        assert t.writes <= 2
    assert channel._log == [] and left == []  # every member written: the log is trimmed
    # the same bytes object for all members at one place in the log
    assert channel.publish("DELETED", _obj("d"))
    parts = {id(channel.part(d)) for d, _, _ in members}
    assert len(parts) == 1


async def test_a_member_that_leaves_keeps_its_part_first() -> None:
    shared = w._PerLoop(asyncio.get_running_loop())
    (d, t, _), (other, ot, _) = _direct(shared), _direct(shared)
    channel = d.share.channel()
    assert channel.join(d, lambda: None) and channel.join(other, lambda: None)
    channel.publish("MODIFIED", _obj("a"))
    channel.publish("MODIFIED", _obj("b"))
    channel.leave(d)  # the cache hands it something alone next: a bookmark
    assert d.channel is None
    assert d.push("BOOKMARK", {"kind": "ConfigMap", "apiVersion": "v1",
                               "metadata": {"name": "bm"}})
    channel.publish("MODIFIED", _obj("c"))  # not for d any more
    await _rounds()
    assert t.events() == [("MODIFIED", "a"), ("MODIFIED", "b"), ("BOOKMARK", "bm")]
    assert ot.events() == [("MODIFIED", "a"), ("MODIFIED", "b"), ("MODIFIED", "c")]


async def test_a_paused_member_is_written_what_it_has_then_dropped() -> None:
    shared = w._PerLoop(asyncio.get_running_loop())
    (d, t, protocol), (other, ot, _) = _direct(shared), _direct(shared)
    channel = d.share.channel()
    dropped: list[str] = []
    assert channel.join(d, lambda: dropped.append("d"))
    assert channel.join(other, lambda: dropped.append("other"))
    channel.publish("MODIFIED", _obj("a"))
    protocol.writing_paused = True
    await _rounds()
    assert t.events() == [("MODIFIED", "a")] and dropped == ["d"] and d.channel is None
    assert not d.push("MODIFIED", _obj("b"))  # refused one by one while paused
    assert not channel.join(d, lambda: None)  # and cannot join again yet
    channel.publish("MODIFIED", _obj("b"))
    await _rounds()
    assert t.events() == [("MODIFIED", "a")]
    assert ot.events() == [("MODIFIED", "a"), ("MODIFIED", "b")]
    assert channel._log == []


async def test_a_failing_frame_is_refused() -> None:
    shared = w._PerLoop(asyncio.get_running_loop())
    d, t, _ = _direct(shared)
    channel = d.share.channel()
    assert channel.join(d, lambda: None)
    assert not channel.publish("MODIFIED", {"metadata": {"name": object()}})
    assert channel._log == []

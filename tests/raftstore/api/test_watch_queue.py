"""The watch stream's response queue: live event responses of one watch waiting together go
out as one response, nothing else is merged or reordered, and a failed request reader
ends the stream after what was queued."""

from __future__ import annotations

import asyncio

import pytest

from raftstore.api.pb import rpc_pb2 as pb
from raftstore.api.watch import _Item, _Stream, _Watch


def _events(wid: int, rev: int, key: bytes) -> pb.WatchResponse:
    resp = pb.WatchResponse(watch_id=wid)
    resp.header.revision = rev
    resp.events.add().kv.key = key
    return resp


def _watch(wid: int) -> _Watch:
    return _Watch(id=wid, key=b"k", end=None, prev_kv=False, no_put=False, no_delete=False,
                  progress_notify=False, fragment=False)


async def test_queued_event_responses_of_one_watch_are_merged_in_order() -> None:
    stream = _Stream(api=None, loop=asyncio.get_running_loop())  # type: ignore[arg-type]
    a, b = _watch(1), _watch(2)
    a.pending, b.pending = 3, 1
    first = _events(1, 10, b"k10")
    for item in (_Item(first, a, True), _Item(_events(1, 11, b"k11"), a, True),
                 _Item(_events(1, 12, b"k12"), a, True),
                 _Item(pb.WatchResponse(watch_id=1), a),  # a progress response: not merged
                 _Item(_events(2, 13, b"k13"), b, True)):
        stream.out.put_nowait(item)
    stream.fail(RuntimeError("reader broke"))
    got = []
    with pytest.raises(RuntimeError, match="reader broke"):
        async for resp in stream.responses():
            got.append(resp)
    assert [(r.watch_id, r.header.revision, [e.kv.key for e in r.events]) for r in got] == [
        (1, 12, [b"k10", b"k11", b"k12"]), (1, 0, []), (2, 13, [b"k13"])]
    assert a.pending == 0 and b.pending == 0
    assert len(first.events) == 1  # the queued response itself was not changed

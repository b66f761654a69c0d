"""The watch benchmark's client (bench/bench_apiserver.py ``_WatchReader``) records every
event's resourceVersion once and in order whatever the reads' boundaries, and stops at the
end of the stream: its figures (latency, gaps) are only as good as that."""

from __future__ import annotations

import asyncio
import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_apiserver_under_test",
                                                  ROOT / "bench" / "bench_apiserver.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _frame(rv: int, name: str = "w") -> bytes:
    obj = {"type": "MODIFIED", "object": {
        "kind": "ConfigMap", "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "bench-watch", "resourceVersion": str(rv),
                     "managedFields": [{"manager": "m", "operation": "Update"}]},
        "data": {"payload": "x\n\r\n" * 3, "stamp": f"{rv}.0"}}}
    data = orjson.dumps(obj) + b"\n"
    return b"%x\r\n%b\r\n" % (len(data), data)


class _Transport:
    def __init__(self) -> None:
        self.closed = False

    def write(self, data: bytes) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def _reader(bench: ModuleType, want: int) -> tuple[Any, list[tuple[str, float]], list[int]]:
    loop = asyncio.new_event_loop()
    mine: list[tuple[str, float]] = []
    opened: list[int] = []
    reader = bench._WatchReader(b"GET /", mine, want, lambda: opened.append(1),
                                loop.create_future())
    reader.connection_made(_Transport())
    return reader, mine, opened


HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n")


def test_every_event_once_in_order_across_any_split() -> None:
    bench = _bench()
    stream = HEAD + b"".join(_frame(rv) for rv in range(100, 160)) + b"0\r\n\r\n"
    rng = random.Random(7)
    for _ in range(30):
        reader, mine, opened = _reader(bench, want=1000)
        pos = 0
        while pos < len(stream):
            step = rng.choice((1, 2, 3, 7, 50, 400, 2000))
            reader.data_received(stream[pos:pos + step])
            pos += step
        assert opened == [1]
        assert [rv for rv, _ in mine] == [str(rv) for rv in range(100, 160)]
        assert reader.done.done() and reader.done.exception() is None  # the stream's end
        assert reader.transport.closed


def test_stops_once_it_has_what_it_waited_for() -> None:
    reader, mine, _ = _reader(_bench(), want=3)
    reader.data_received(HEAD + _frame(1) + _frame(2))
    assert not reader.done.done()
    reader.data_received(_frame(3)[:10])
    assert len(mine) == 2 and not reader.done.done()  # a frame cut short counts for nothing
    reader.data_received(_frame(3)[10:])
    assert [rv for rv, _ in mine] == ["1", "2", "3"] and reader.done.done()


def test_a_watch_that_is_not_a_stream_fails() -> None:
    reader, mine, opened = _reader(_bench(), want=3)
    reader.data_received(b"HTTP/1.1 410 Gone\r\nContent-Length: 2\r\n\r\n{}")
    assert opened == [] and mine == []
    assert isinstance(reader.done.exception(), RuntimeError)


def test_report_compares_each_series_with_the_ceiling_measured_in_its_turns() -> None:
    bench = _bench()
    cpu = {"servers_ms_per_op": 0.4, "store_ms_per_op": 0.1}
    ours = {"label": "ours", "get": {"per_s": 1000.0, "p99_ms": 9.0, "cpu": cpu},
            "bare": {"get": {"per_s": 2500.0, "p99_ms": 5.0}}}
    older = {"label": "no-ceiling-of-its-own", "get": {"per_s": 1000.0, "p99_ms": 9.0,
                                                       "cpu": cpu}}
    table = bench.report([ours, older], {"get": {"per_s": 4000.0, "p99_ms": 4.0}})
    rows = {line[:34].strip(): line[34:].split() for line in table.splitlines()[2:]}
    assert rows["bare ceiling gets/s, same turns"] == ["2500.0", "-"]
    assert rows["gets / bare ceiling"] == ["0.4", "-"]
    assert rows["gets / last bare ceiling"] == ["0.25", "0.25"]
    assert "last bare aiohttp ceiling gets/s (after every series): 4000.0" in table


def test_pooled_rounds_count_every_operation_over_the_summed_time() -> None:
    bench = _bench()
    a = bench.summary([0.001] * 100, 0.5, {"E": 1})
    b = bench.summary([0.003] * 300, 1.5, {"E": 2, "F": 1})
    both = bench.pooled([a, b])
    assert both["ops"] == 400 and both["per_s"] == 200.0
    assert both["failures"] == {"E": 3, "F": 1}
    assert both["rounds_per_s"] == [200.0, 200.0]
    assert both["p99_ms"] == 3.0
    assert "latencies_s" not in bench.trimmed(both)


def test_paired_gets_take_turns_with_the_ceiling_and_meter_only_the_series() -> None:
    """The real bare server, and a series side that records when it ran."""
    bench = _bench()
    plan = bench.Plan(creates=0, create_clients=1, gets=64, get_clients=4, list_items=0,
                      list_repeats=0, watchers=0, watch_writes=0, write_rate=1.0)
    bare = bench.BareServer(bench.configmap("c0")).start()
    calls: list[int] = []

    async def series_get(i: int) -> None:
        calls.append(i)

    class Meter:
        def __init__(self) -> None:
            self.starts = 0

        def laps(self) -> Any:
            meter = self

            class Laps:
                def start(self) -> None:
                    meter.starts += 1

                def stop(self) -> None:
                    pass

                def per_op(self, ops: int) -> dict[str, float]:
                    return {"ops_seen": float(ops)}

            return Laps()

    meter = Meter()
    try:
        series, ceiling = asyncio.run(bench.paired_gets(plan, series_get, bare, meter))
    finally:
        bare.stop()
    turns = bench.GET_TURNS
    assert series["ops"] == 64 and ceiling["get"]["ops"] == 64
    assert len(series["rounds_per_s"]) == turns.count("A")
    assert len(ceiling["get"]["rounds_per_s"]) == turns.count("B")
    assert meter.starts == turns.count("A")  # the warm-up and the ceiling's turns are not metered
    assert series["cpu"] == {"ops_seen": 64.0}
    assert len(calls) == 64 + plan.get_clients * 4  # the turns and the warm-up
    assert not ceiling["get"]["failures"]

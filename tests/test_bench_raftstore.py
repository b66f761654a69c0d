"""The raftstore benchmark's put phase spreads one client's requests over the members, as
etcd's clientv3 balancer does: its one-client latency is not one member's role alone."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_raftstore_under_test",
                                                  ROOT / "bench" / "bench_raftstore.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class _Stub:
    def __init__(self, name: str, seen: list[str]) -> None:
        self.name = name
        self.seen = seen

    async def Put(self, request: Any, timeout: float) -> None:  # noqa: N802 - gRPC's name
        self.seen.append(self.name)


def test_one_client_puts_go_to_every_member_in_turn() -> None:
    bench = _bench()
    seen: list[str] = []
    names = ["m0", "m0", "m1", "m1", "m2", "m2"]  # Channels: two channels per member
    ch = SimpleNamespace(kv=[_Stub(n, seen) for n in names])
    out = asyncio.run(bench.put_latency(ch, 1, 60, 30.0))
    assert out["count"] == 60
    assert {m: seen.count(m) for m in ("m0", "m1", "m2")} == {"m0": 20, "m1": 20, "m2": 20}


def test_many_clients_spread_evenly_too() -> None:
    bench = _bench()
    seen: list[str] = []
    ch = SimpleNamespace(kv=[_Stub(n, seen) for n in ["a", "b", "c"]])
    asyncio.run(bench.put_latency(ch, 8, 240, 30.0))
    assert sorted(seen.count(m) for m in "abc") == [80, 80, 80]


def test_the_leader_is_recorded_by_member_name() -> None:
    bench = _bench()
    members = [SimpleNamespace(name=f"m{i}") for i in range(3)]

    class Agreed:
        def __init__(self) -> None:
            self.members = members

        def leader(self, timeout: float) -> int:
            return 2

    class NoAgreement(Agreed):
        def leader(self, timeout: float) -> int:
            raise RuntimeError("no agreed leader")

    assert bench.leader_name(Agreed()) == "m2"
    assert bench.leader_name(NoAgreement()) is None

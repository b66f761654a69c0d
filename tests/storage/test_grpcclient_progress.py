"""The etcd3 client asks the members whether progress requests are safe once, however many
watches ask at the same moment (every cacher's watch does at its first tick)."""

from __future__ import annotations

import asyncio

from storage.etcd3.grpcclient import GrpcKVClient


async def test_concurrent_progress_checks_ask_the_members_once() -> None:
    client = GrpcKVClient(["127.0.0.1:1"])  # never contacted: the question is replaced
    asked = 0

    async def ask() -> bool:
        nonlocal asked
        asked += 1
        await asyncio.sleep(0.01)
        return True

    client._ask_progress_support = ask  # type: ignore[method-assign]
    try:
        answers = await asyncio.gather(*(client.progress_supported() for _ in range(50)))
        assert answers == [True] * 50 and asked == 1
        assert await client.progress_supported() and asked == 1
    finally:
        await client.close()

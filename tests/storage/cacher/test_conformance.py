"""The storage conformance suite (storage.testing.conformance) against a Cacher over the
embedded store: one Cacher per case, for the case's own prefix, as the apiserver runs one per
resource."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from storage.cacher import Cacher
from storage.interface import Interface
from storage.testing.conformance import ALL_CASES
from storage.testing.harness import Harness

Case = Callable[[Harness], Awaitable[None]]


@pytest.fixture
async def backend(tmp_path: Path) -> AsyncIterator[Interface]:
    from storage.embedded import open_embedded

    store = await open_embedded(str(tmp_path / "data"), fsync=False, too_large_wait=0.3)
    yield store
    await store.close()


@pytest.mark.parametrize("case", list(ALL_CASES.values()), ids=list(ALL_CASES))
async def test_cacher_conformance(backend: Interface, case: Case) -> None:
    prefix = f"/registry/conf{uuid.uuid4().hex[:12]}"
    cacher = Cacher(backend, prefix, resource="conformance", wait_timeout=0.3,
                    bookmark_interval=0.5)
    await cacher.start()
    assert await cacher.wait_ready(10)
    h = Harness(store=cacher, compact=backend.compact, prefix=prefix)
    try:
        await case(h)
    finally:
        h.close()
        await cacher.close()

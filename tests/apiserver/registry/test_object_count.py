from __future__ import annotations

from typing import Any

from apiserver.metrics import STORAGE_OBJECTS
from apiserver.registry.interface import WriteOptions
from apiserver.registry.object_count import ObjectCounter
from tests.apiserver.registry.conftest import ctx


async def test_counts_per_resource(stores: Any) -> None:
    cm = stores[("", "v1", "configmaps")]
    for n in ("a", "b"):
        await cm.create(ctx("ns1"), {"metadata": {"name": n}}, WriteOptions())
    counts = await ObjectCounter(stores).update_once()
    assert counts["configmaps"] == 2
    assert counts["namespaces"] == 5
    assert counts["statefulsets.apps"] == 0
    assert "events.events.plat.io" not in counts
    assert STORAGE_OBJECTS.labels(resource="configmaps")._value.get() == 2

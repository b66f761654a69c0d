"""storage.etcd3.leases: one lease shared by the TTL writes of a short window, as upstream's
lease manager shares them (unit test with a fake clock and grant)."""

from __future__ import annotations

from storage.etcd3.leases import MAX_OBJECTS, LeaseManager


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_leases_are_shared_within_the_reuse_window() -> None:
    grants: list[int] = []

    async def grant(ttl: int) -> int:
        grants.append(ttl)
        return len(grants)

    clock = Clock()
    leases = LeaseManager(grant, clock=clock)
    assert LeaseManager.reuse_seconds(3600) == 60  # 5% of an hour is 180: capped at 60
    assert LeaseManager.reuse_seconds(100) == 5
    assert await leases.lease_for(3600) == 1
    assert grants == [3660]  # asked with the reuse margin on top
    clock.now += 59
    assert await leases.lease_for(3600) == 1  # still outlives now + 3600
    clock.now += 1
    assert await leases.lease_for(3600) == 2  # would not: a new one
    for _ in range(MAX_OBJECTS - 1):
        assert await leases.lease_for(3600) == 2
    assert await leases.lease_for(3600) == 3  # at most MAX_OBJECTS writes per lease
    assert await leases.lease_for(60) == 4  # a shorter TTL: this lease would live too long

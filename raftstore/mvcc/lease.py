"""The lessor's boundary. Leases are replicated state (id, granted TTL, attached keys); their
deadlines are member-local monotonic times, set on grant / keep-alive / promotion, never
replicated (etcd does the same: a new leader extends every lease by its full TTL).
"""

from __future__ import annotations

from typing import Final, Protocol

MIN_LEASE_TTL: Final = 2  # etcd: ceil(1.5 * election timeout of 1 s) with default ticks
MAX_LEASE_TTL: Final = 9_000_000_000


class Lessor(Protocol):
    def grant(self, lease_id: int, ttl: int, now: float) -> int:
        """Create a lease; returns the effective TTL (at least MIN_LEASE_TTL). Raises
        LeaseExistsError. The id is chosen by the proposer (never 0)."""

    def revoke(self, lease_id: int) -> int:
        """Delete the lease and, in one write transaction, every key attached to it. Returns
        the store revision after. Raises LeaseNotFoundError."""

    def keepalive(self, lease_id: int, now: float) -> int:
        """Reset the deadline to now + granted TTL; returns the granted TTL. Raises
        LeaseNotFoundError."""

    def time_to_live(self, lease_id: int, now: float) -> tuple[int, int, list[bytes]]:
        """(granted_ttl, remaining_seconds, attached keys sorted). Raises LeaseNotFoundError.
        remaining is int(deadline - now) floored at 0 (etcd truncates)."""

    def leases(self) -> list[int]:
        """Every lease id, ascending."""

    def expired(self, now: float) -> list[int]:
        """Ids whose deadline has passed (the leader proposes their revocation)."""

    def promote(self, now: float) -> None:
        """Set every deadline to now + its granted TTL (on becoming leader)."""

"""When a leader's new log entries wait a little before they are sent (the raft thread's
append gathering).

Every round of appends costs the members about the same CPU whatever it carries: the leader's
messages to each follower, each follower's tick, journal write, fdatasync and acknowledgement,
the leader's ticks to read them, and the commit notices. Under etcd's ``check perf`` (one
write a millisecond, spread over the members) a round finishes before the next write arrives,
so every write paid for a round of its own, and rounds were most of the members' CPU per
write (docs/benchmarks.md, 2026-11-25).

So a leader holds entries for up to ``delay`` seconds after the first of them was appended,
when (and only when) waiting is likely to gather more:

* writes overlap: a good share of recent arrivals found earlier entries not yet committed
  (``overlap``, a moving average). A client that waits for each answer before its next write
  never overlaps itself, so one sequential client is never delayed, however fast it writes;
* and they arrive often: the mean gap between recent arrivals is under ``delay``, so that
  the wait is expected to gather at least one more write. A few writers that overlap now
  and then, at a low rate, are not delayed either.

Nothing else is held: a moved commit index goes out at once (and carries the held entries
with it), as do heartbeats and read rounds. The caller caps its poll at :attr:`deadline`."""

from __future__ import annotations

from typing import Final

from raftstore import metrics

#: Weight of each new arrival in the moving averages.
ALPHA: Final = 1 / 16
#: Hold only when at least this share of recent arrivals overlapped earlier entries.
OVERLAP: Final = 0.25


class AppendGatherer:
    """(Leader, raft thread) the policy above; time is the caller's monotonic clock."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.overlap = 0.0  # moving average: 1 for an arrival that found entries uncommitted
        self.gap = 1.0  # moving average of the seconds between arrivals
        self.holds = 0  # rounds that waited (for tests and logs)
        self._seen = 0  # the log's last index at the last arrival
        self._arrived: float | None = None  # when that arrival was seen
        self._since: float | None = None  # when the oldest held entry was seen

    @property
    def deadline(self) -> float | None:
        """When the held entries must go, or None if nothing is held."""
        return None if self._since is None else self._since + self.delay

    def reset(self, last: int) -> None:
        """A new term of leadership starts at log index ``last``: nothing is held."""
        self._seen = last
        self._arrived = None
        self._since = None

    def hold(self, last: int, commit: int, commit_moved: bool, now: float) -> bool:
        """Called when the log's last index or the commit index changed since the last send:
        True to send nothing now. ``commit_moved`` sends at once."""
        if last > self._seen:
            self.overlap += ALPHA * ((1.0 if self._seen > commit else 0.0) - self.overlap)
            if self._arrived is not None:
                self.gap += ALPHA * (min(now - self._arrived, 1.0) - self.gap)
            self._seen = last
            self._arrived = now
        if (commit_moved or self.delay <= 0 or self.overlap < OVERLAP
                or self.gap >= self.delay):
            self._since = None
            return False
        if self._since is None:
            self._since = now
            self.holds += 1
            metrics.APPEND_HOLDS.inc()
            return True
        if now - self._since < self.delay:
            return True
        self._since = None
        return False

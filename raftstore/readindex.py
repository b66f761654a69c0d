"""Linearizable read points without a log entry: Raft's "ReadIndex" (Ongaro's thesis, 6.4), the
bookkeeping only. ``replication.py`` wires it to pysyncobj; everything here runs on the raft
thread.

* **Leader.** A read takes the commit index as its read index, once the leader has committed an
  entry of its own term. The leader then confirms it still leads: a round of appends (heartbeats
  when there is nothing new) goes out tagged with the round's sequence number, and each follower
  echoes the tag of the append it answers. Once a majority, the leader included, has answered an
  append of the round or a later one, in the leader's term, no other leader can have committed
  anything before the read began, and the read is served once this member has applied up to the
  read index. Reads that arrive together share a round.
* **Follower.** It asks the leader for a read index and serves the read once it has applied up to
  it.
* **Fallback.** Whatever cannot be confirmed quickly (no leader, a leader that has not committed
  in its term yet, a round or a question without an answer within ``timeout``, a change of
  leader) is answered ``None``: the caller then uses a barrier entry in the log, which gives the
  usual errors and waits.

A read point costs one message to and from each follower instead of a log entry, with its
journal write, two fdatasyncs and an apply on every member.
"""

from __future__ import annotations

import collections
import heapq
from collections.abc import Callable, Collection, Hashable
from dataclasses import dataclass, field
from typing import Final

Answer = Callable[[int | None], None]  # the read index, or None: use the log instead

READ_MESSAGES: Final = frozenset({"rx_read", "rx_read_ok", "rx_read_fail"})


@dataclass(slots=True)
class _Round:
    seq: int
    term: int
    index: int
    started: float
    answers: list[Answer]


@dataclass(order=True, slots=True)
class _Wait:
    index: int
    order: int
    done: Callable[[], None] = field(compare=False)


class ReadIndex:
    """Read rounds of a leader, questions of a follower, and reads waiting to be applied."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.seq = 0  # the newest round: the tag of the leader's appends
        self._rounds: collections.deque[_Round] = collections.deque()
        self._acks: dict[Hashable, int] = {}  # follower -> highest tag it echoed
        self._asked: dict[int, tuple[float, Hashable, list[Answer]]] = {}
        self._next_id = 0
        self._waits: list[_Wait] = []  # a heap by index
        self._order = 0

    # -- leader ---------------------------------------------------------------------------

    def start_round(self, term: int, index: int, answers: list[Answer], now: float) -> int:
        """A round for ``answers`` at read index ``index``; returns its tag (the caller sends
        the appends that carry it)."""
        self.seq += 1
        self._rounds.append(_Round(self.seq, term, index, now, answers))
        return self.seq

    def echoed(self, node: Hashable, seq: int) -> None:
        """``node`` answered an append tagged ``seq`` sent in the current term."""
        if seq > self._acks.get(node, 0):
            self._acks[node] = seq

    def rounds_done(
        self, term: int | None, others: Collection[Hashable], now: float
    ) -> list[tuple[list[Answer], int | None]]:
        """Rounds that are confirmed (with their read index) or failed (None), oldest first.
        ``term`` is the leader's current term, None when this member does not lead."""
        done: list[tuple[list[Answer], int | None]] = []
        need = (len(others) + 1) // 2  # echoes for a majority with the leader's own vote
        rounds = self._rounds
        while rounds:
            r = rounds[0]
            if term is None or r.term != term:
                done.append((rounds.popleft().answers, None))
                continue
            # A follower that echoed a later round answered after this one began too.
            if sum(1 for n in others if self._acks.get(n, 0) >= r.seq) >= need:
                done.append((rounds.popleft().answers, r.index))
                continue
            if now - r.started > self.timeout:
                done.append((rounds.popleft().answers, None))
                continue
            break
        return done

    # -- follower -------------------------------------------------------------------------

    def ask(self, leader: Hashable, answers: list[Answer], now: float) -> int:
        """Record a question to ``leader``; returns its id (the caller sends it)."""
        self._next_id += 1
        self._asked[self._next_id] = (now, leader, answers)
        return self._next_id

    def answered(self, ask_id: int) -> list[Answer]:
        """The answers waiting for question ``ask_id`` (none if it expired)."""
        entry = self._asked.pop(ask_id, None)
        return entry[2] if entry is not None else []

    def expired(self, leader: Hashable | None, now: float) -> list[Answer]:
        """The answers of questions that timed out or went to a member that no longer leads."""
        gone = [
            i for i, (t, to, _) in self._asked.items()
            if to != leader or now - t > self.timeout
        ]
        return [a for i in gone for a in self._asked.pop(i)[2]]

    # -- applying -------------------------------------------------------------------------

    def when_applied(self, index: int, done: Callable[[], None]) -> None:
        """Call ``done`` once ``applied`` has been told of an index of at least ``index``."""
        self._order += 1
        heapq.heappush(self._waits, _Wait(index, self._order, done))

    def applied(self, applied_index: int) -> list[Callable[[], None]]:
        """The waits that ``applied_index`` satisfies (removed)."""
        ready = []
        waits = self._waits
        while waits and waits[0].index <= applied_index:
            ready.append(heapq.heappop(waits).done)
        return ready

    @property
    def idle(self) -> bool:
        return not (self._rounds or self._asked or self._waits)

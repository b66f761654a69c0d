"""Finding where a follower's log and a new leader's agree (replication.probe_answer and
leader_next_index): pure functions over pysyncobj's list of (command, index, term)."""

from __future__ import annotations

from raftstore.replication import leader_next_index, probe_answer


def log(first: int, terms: list[int]) -> list[tuple[bytes, int, int]]:
    return [(b"", first + i, t) for i, t in enumerate(terms)]


# A leader of term 2 cut off after index 10 appended 11..15 it could not commit; the others
# elected a leader of term 3 that wrote 11..40.
FOLLOWER = log(1, [1] * 5 + [2] * 10)  # 1..5 term 1, 6..15 term 2
LEADER = log(1, [1] * 5 + [2] * 5 + [3] * 30)  # 6..10 term 2, 11..40 term 3


def test_an_older_entry_at_the_probe_sends_the_leader_past_its_newer_terms() -> None:
    # the leader probes prev=15 (its term 3); ours there is of term 2
    next_index, term = probe_answer(FOLLOWER, 15, 2, 3, None)
    assert (next_index, term) == (15, 2)
    # the leader skips its term-3 entries 11..14 at once: it sends from 11 (prev=10, term 2
    # on both sides: the logs agree there), not one entry back per round trip
    assert leader_next_index(LEADER, next_index, term) == 11


def test_our_entries_of_newer_terms_are_skipped_at_once() -> None:
    # a follower that led term 4 (entries 11..15) while the leader's log has term 3 there
    follower = log(1, [1] * 5 + [2] * 5 + [4] * 5)
    next_index, term = probe_answer(follower, 15, 4, 3, None)
    assert (next_index, term) == (11, 2)  # back to index 10, the last entry not newer than 3
    assert leader_next_index(LEADER, next_index, term) == 11


def test_an_answer_never_goes_above_the_lowest_probe_of_the_term() -> None:
    # an append sent before the leader read our last answer probes higher up again
    probe = (3, 11, 2)
    assert probe_answer(FOLLOWER, 15, 2, 3, probe) == (11, 2)
    # a lower answer replaces it
    assert probe_answer(FOLLOWER, 8, 2, 1, probe)[0] <= 11


def test_the_leader_stops_at_its_log_start() -> None:
    compacted = log(20, [3] * 21)  # the leader keeps 20..40 only
    assert leader_next_index(compacted, 15, 2) == 15  # below its log: a snapshot follows
    assert leader_next_index(compacted, 30, 2) == 21  # back to its first entry, no further


def test_nothing_to_skip_leaves_the_answer_as_it_is() -> None:
    assert leader_next_index(LEADER, 10, 2) == 10
    assert leader_next_index(LEADER, 50, 3) == 41  # past its end: from its end

"""The leader's append gathering policy (raftstore/gather.py), on its own clock."""

from __future__ import annotations

from raftstore.gather import AppendGatherer


def _warm(g: AppendGatherer, *, gap: float, overlapping: bool, n: int = 200) -> tuple[int, float]:
    """``n`` arrivals, ``gap`` apart, each committed before the next unless ``overlapping``;
    every round is sent (its commit moved). Returns the log index and time reached."""
    last, commit, now = 0, 0, 0.0
    for _ in range(n):
        now += gap
        last += 1
        g.hold(last, commit, True, now)
        if not overlapping:
            commit = last
        else:
            commit = last - 1
    return last, now


def test_a_sequential_writer_is_never_held_however_fast() -> None:
    g = AppendGatherer(0.002)
    last, now = _warm(g, gap=0.0002, overlapping=False)
    commit = last
    for _ in range(100):
        now += 0.0002
        last += 1
        assert not g.hold(last, commit, False, now)
        commit = last
    assert g.holds == 0
    assert g.deadline is None


def test_overlapping_frequent_writes_wait_until_the_deadline() -> None:
    g = AppendGatherer(0.002)
    last, now = _warm(g, gap=0.001, overlapping=True)
    commit = last - 1
    last += 1
    now += 0.001
    assert g.hold(last, commit, False, now)
    assert g.deadline == now + 0.002
    # More entries arrive while held: still held, the deadline does not move.
    assert g.hold(last + 1, commit, False, now + 0.001)
    assert g.deadline == now + 0.002
    # At the deadline they go.
    assert not g.hold(last + 1, commit, False, now + 0.002)
    assert g.deadline is None
    assert g.holds == 1


def test_a_moved_commit_index_goes_out_at_once_with_what_was_held() -> None:
    g = AppendGatherer(0.002)
    last, now = _warm(g, gap=0.001, overlapping=True)
    assert g.hold(last + 1, last - 1, False, now + 0.0005)
    assert not g.hold(last + 1, last, True, now + 0.0006)
    assert g.deadline is None


def test_sparse_overlapping_writes_are_not_held() -> None:
    g = AppendGatherer(0.002)
    last, now = _warm(g, gap=0.005, overlapping=True)
    assert g.overlap > 0.9
    assert not g.hold(last + 1, last - 1, False, now + 0.005)
    assert g.holds == 0


def test_no_delay_never_holds_and_reset_drops_a_hold() -> None:
    g = AppendGatherer(0.0)
    last, now = _warm(g, gap=0.0001, overlapping=True)
    assert not g.hold(last + 1, last - 1, False, now + 0.0001)
    g = AppendGatherer(0.002)
    last, now = _warm(g, gap=0.0005, overlapping=True)
    assert g.hold(last + 1, last - 1, False, now + 0.0005)
    g.reset(last + 1)
    assert g.deadline is None

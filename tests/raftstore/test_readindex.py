"""The read index bookkeeping (raftstore/readindex.py) on its own: when a leader's round is
confirmed, when it fails, a follower's questions, and reads waiting to be applied."""

from __future__ import annotations

from raftstore.readindex import ReadIndex


def recorder() -> tuple[list[int | None], object]:
    got: list[int | None] = []
    return got, got.append


def test_a_round_needs_echoes_from_a_majority_in_its_term() -> None:
    ri = ReadIndex(timeout=1.0)
    got, answer = recorder()
    seq = ri.start_round(term=3, index=40, answers=[answer], now=0.0)  # type: ignore[list-item]
    others = ["b", "c", "d", "e"]  # five members: the leader and two followers are a majority
    assert ri.rounds_done(3, others, 0.1) == []
    ri.echoed("b", seq)
    assert ri.rounds_done(3, others, 0.1) == []
    ri.echoed("c", seq - 1)  # answered an append sent before the round began: not enough
    assert ri.rounds_done(3, others, 0.1) == []
    ri.echoed("c", seq + 5)  # a later round's append counts for this one too
    [(answers, index)] = ri.rounds_done(3, others, 0.2)
    answers[0](index)
    assert got == [40]
    assert ri.idle


def test_rounds_complete_in_order_and_share_echoes() -> None:
    ri = ReadIndex(timeout=1.0)
    got, answer = recorder()
    first = ri.start_round(2, 10, [answer], 0.0)  # type: ignore[list-item]
    ri.start_round(2, 12, [answer, answer], 0.0)  # type: ignore[list-item]
    ri.echoed("b", first)
    done = ri.rounds_done(2, ["b", "c"], 0.0)
    assert [index for _, index in done] == [10]
    ri.echoed("c", first + 1)
    done = ri.rounds_done(2, ["b", "c"], 0.0)
    assert [(len(a), index) for a, index in done] == [(2, 12)]


def test_a_round_fails_on_a_new_term_lost_leadership_or_timeout() -> None:
    for term, now in ((5, 0.0), (None, 0.0), (4, 2.0)):
        ri = ReadIndex(timeout=1.0)
        ri.start_round(4, 7, [], 0.0)
        assert [index for _, index in ri.rounds_done(term, ["b", "c"], now)] == [None]
        assert ri.idle


def test_a_single_follower_needs_no_echo_from_the_other_in_three() -> None:
    ri = ReadIndex(timeout=1.0)
    seq = ri.start_round(1, 3, [], 0.0)
    ri.echoed("c", seq)
    assert [index for _, index in ri.rounds_done(1, ["b", "c"], 0.0)] == [3]


def test_follower_questions_are_answered_once_and_expire() -> None:
    ri = ReadIndex(timeout=1.0)
    got, answer = recorder()
    a = ri.ask("leader", [answer], 0.0)  # type: ignore[list-item]
    b = ri.ask("leader", [answer], 0.0)  # type: ignore[list-item]
    c = ri.ask("leader", [answer], 0.5)  # type: ignore[list-item]
    for f in ri.answered(a):
        f(9)
    assert ri.answered(a) == []  # a duplicate answer finds nothing
    assert got == [9]
    assert len(ri.expired("leader", 1.2)) == 1  # b is older than the timeout; c is not
    assert ri.answered(b) == []
    assert len(ri.expired("other", 1.2)) == 1  # c went to a member that no longer leads
    assert ri.answered(c) == []
    assert ri.idle


def test_reads_wait_until_applied() -> None:
    ri = ReadIndex(timeout=1.0)
    order: list[str] = []
    ri.when_applied(5, lambda: order.append("5a"))
    ri.when_applied(3, lambda: order.append("3"))
    ri.when_applied(5, lambda: order.append("5b"))
    for done in ri.applied(2):
        done()
    assert order == []
    for done in ri.applied(4):
        done()
    assert order == ["3"]
    for done in ri.applied(9):
        done()
    assert order == ["3", "5a", "5b"]
    assert ri.idle

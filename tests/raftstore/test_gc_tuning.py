"""The member's garbage collector policy (raftstore/server.py ``tune_gc``): a larger youngest
generation, pauses recorded in /metrics, survivors of a full collection frozen."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from raftstore import metrics, server
from raftstore.server import GC_GEN0_THRESHOLD, tune_gc


@pytest.fixture
def restore_gc() -> Iterator[None]:
    thresholds = gc.get_threshold()
    callbacks = list(gc.callbacks)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.callbacks[:] = callbacks
        gc.unfreeze()


def test_tune_gc_sets_the_policy(restore_gc: None) -> None:
    _, gen1, gen2 = gc.get_threshold()
    before = metrics.GC_PAUSE.labels("2")._sum.get()
    tune_gc()
    assert gc.get_threshold() == (GC_GEN0_THRESHOLD, gen1, gen2)
    frozen = gc.get_freeze_count()
    keep = [[i] for i in range(1000)]  # survivors of the next full collection
    gc.collect()
    assert gc.get_freeze_count() >= frozen + len(keep)
    assert metrics.GC_PAUSE.labels("2")._sum.get() > before


def test_a_long_gc_pause_is_logged(restore_gc: None, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Every thread of a member waits for a cyclic collection; a long one is named in the log
    so that a stall of both the raft thread and the event loop can be traced to it."""
    tune_gc()
    monkeypatch.setattr(server, "LONG_GC_PAUSE", 3600.0)
    gc.collect()
    out = capsys.readouterr()
    assert "long gc pause" not in out.out + out.err
    monkeypatch.setattr(server, "LONG_GC_PAUSE", 0.0)
    gc.collect()
    out = capsys.readouterr()
    line = next(x for x in (out.out + out.err).splitlines() if "long gc pause" in x)
    assert "cpu" in line and "generation" in line and "seconds" in line

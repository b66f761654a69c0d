"""Copies of JSON trees and the hand-over that spares them (apiserver/registry/treecopy.py)."""

from __future__ import annotations

from apiserver.registry.treecopy import copy_stored, deep_copy, give, take


def tree() -> dict[str, object]:
    return {"metadata": {"name": "a", "labels": {"x": "1"}},
            "spec": {"items": [{"n": 1, "f": 1.5, "b": True, "z": None}, "s"]}}


def test_deep_copy_and_copy_stored_are_equal_and_share_no_container() -> None:
    src = tree()
    for copied in (deep_copy(src), copy_stored(src)):
        assert copied == src
        assert copied is not src and copied["metadata"] is not src["metadata"]
        copied["spec"]["items"][0]["n"] = 2  # type: ignore[index]
        assert src["spec"]["items"][0]["n"] == 1  # type: ignore[index]


def test_copy_stored_falls_back_for_what_orjson_refuses() -> None:
    src = {"big": 2**70, "nested": {1: "int key"}}
    out = copy_stored(src)
    assert out == src and out is not src and out["nested"] is not src["nested"]


def test_take_copies_unless_handed_over_once() -> None:
    a = tree()
    assert take(a) is not a  # not handed over: a copy
    assert take(give(a)) is a  # handed over: the object itself
    assert take(a) is not a  # the hand-over is used up
    b = tree()
    give(a)
    assert take(b) is not b  # only the object handed over

"""The FieldsV1 encoding of a field set, both directions (upstream ``fieldpath/serialize.go``).

A set is a JSON object whose keys are path elements (``f:``, ``k:``, ``v:``, ``i:``, see
:mod:`.fieldpath`). A member without children is ``{}``; an element with children is an
object of them, led by ``".": {}`` when the element is a member itself. Keys come in
upstream's order (``fieldpath.order``: fields by name, then keys, then values, then
indexes). Worked example, the containers of a Deployment applied with one port::

    {"f:containers": {"k:{\\"name\\":\\"web\\"}": {
        ".": {}, "f:image": {}, "f:name": {},
        "f:ports": {"k:{\\"containerPort\\":80,\\"protocol\\":\\"TCP\\"}": {
            ".": {}, "f:containerPort": {}}}}}}

Encoding returns plain dicts (insertion-ordered, so ``json.dumps`` writes upstream's
bytes); a decoded set remembers the tree it came from when that tree was already in
canonical form, so an unchanged set is written back as the very same object.
"""

from __future__ import annotations

import json
from typing import Any

from .fieldpath import FieldSet, PathElementError, canonical, order


class FieldsV1Error(ValueError):
    """A FieldsV1 tree that is not one (not an object, unknown element type, bad JSON)."""


def encode(s: FieldSet) -> dict[str, Any]:
    """The FieldsV1 tree of ``s`` (shared with ``s``: do not mutate it)."""
    if s.encoded is None:
        s.encoded = _emit(s, False)
    return s.encoded


def _sorted(elements: set[str]) -> list[str]:
    """Elements in upstream's order. Field names (``f:``, the common case) order among
    themselves as plain strings; any other kind needs the parsed order."""
    for pe in elements:
        if pe[:2] != "f:":
            return sorted(elements, key=order)
    return sorted(elements)


def _emit(s: FieldSet, include_self: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if include_self and (s.members or s.children):
        out["."] = {}
    if not s.children:
        for pe in _sorted(s.members):
            out[pe] = {}
        return out
    for pe in _sorted(s.members | s.children.keys()):
        child = s.children.get(pe)
        if child is None:
            out[pe] = {}
        elif child.encoded is not None and pe not in s.members:
            out[pe] = child.encoded
        else:
            out[pe] = _emit(child, pe in s.members)
    return out


def dumps(s: FieldSet) -> str:
    """The FieldsV1 bytes upstream writes for ``s`` (compact JSON)."""
    return json.dumps(encode(s), ensure_ascii=False, separators=(",", ":"))


def decode(tree: Any) -> FieldSet:
    """The set a FieldsV1 tree (a parsed JSON object) describes; FieldsV1Error when it is not
    one."""
    if not isinstance(tree, dict):
        raise FieldsV1Error("expected an object")
    out = FieldSet()
    if _parse(tree, out):
        out.encoded = tree
    return out


def loads(text: str | bytes) -> FieldSet:
    try:
        tree = json.loads(text)
    except ValueError as e:
        raise FieldsV1Error(str(e)) from None
    return decode(tree)


def _parse(tree: dict[str, Any], out: FieldSet) -> bool:
    """Fills ``out`` from ``tree`` (whose "." was handled by the caller); True when ``tree``
    is exactly what :func:`encode` would write back. Field names (most keys) take a short
    path: they are canonical as written and order among themselves as strings."""
    ok = True
    prev_rank = -1
    prev_raw = ""
    prev_key: tuple[Any, ...] = ()
    members = out.members
    children = out.children
    for raw, sub in tree.items():
        if type(sub) is not dict:
            raise FieldsV1Error(f"expected an object at {raw!r}")
        if raw[:2] == "f:":
            pe = raw
            if prev_rank > 0 or (prev_rank == 0 and raw <= prev_raw):
                ok = False
            prev_rank = 0
            prev_raw = raw
        elif raw == ".":
            if prev_rank >= 0:
                ok = False
            continue
        else:
            try:
                pe = canonical(raw)
                key = order(pe)
            except PathElementError as e:
                raise FieldsV1Error(str(e)) from None
            if pe != raw or (prev_rank > 0 and key <= prev_key) or prev_rank > key[0]:
                ok = False
            prev_rank = key[0]
            prev_key = key
        if not sub:
            members.add(pe)
            continue
        child = FieldSet()
        child_ok = _parse(sub, child)
        if "." in sub:
            members.add(pe)
        elif child_ok:
            child.encoded = sub
        if not child_ok:
            ok = False
        if not child.members and not child.children:
            ok = False  # {".": {}} alone: a member, written back as {}
            child.encoded = None
            continue
        if pe in children:
            ok = False
            child = children[pe].union(child)
        children[pe] = child
    return ok

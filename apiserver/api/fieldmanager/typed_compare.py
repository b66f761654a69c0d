"""The comparison of two objects and the removal of items (upstream ``typed/compare.go``
through the merge walker, ``typed/remove.go``), walked by the schema atoms of :mod:`.typed`."""

from __future__ import annotations

from typing import Any

from .fieldpath import FieldSet, Path
from .typed import DEDUCED, DEDUCED_ATOM, LIST, MAP, MISSING, SCALAR, Atom
from .typed_merge import index_items


class Comparison:
    """What changed from one object to another (upstream ``typed.Comparison``): leaves and
    items whose value differs (``modified``), and everything, parents included, present on
    one side only (``added`` / ``removed``)."""

    __slots__ = ("added", "modified", "removed")

    def __init__(self) -> None:
        self.added = FieldSet()
        self.modified = FieldSet()
        self.removed = FieldSet()

    def same(self) -> bool:
        return self.added.empty() and self.modified.empty() and self.removed.empty()

    def exclude(self, fields: FieldSet) -> Comparison:
        """Without ``fields`` and everything below them (upstream ``ExcludeFields``)."""
        if fields.empty():
            return self
        out = Comparison()
        out.added = self.added.recursive_difference(fields)
        out.modified = self.modified.recursive_difference(fields)
        out.removed = self.removed.recursive_difference(fields)
        return out


def compare(lhs: Any, rhs: Any, atom: Atom) -> Comparison:
    c = Comparison()
    if lhs is not rhs and lhs != rhs:
        _cmp(lhs, rhs, atom, (), c)
    return c


def _attach(target: FieldSet, path: Path, sub: FieldSet, member: bool) -> None:
    node = target.descend(path[:-1])
    last = path[-1]
    if member:
        node.members.add(last)
    if not sub.empty():
        existing = node.children.get(last)
        node.children[last] = sub if existing is None else existing.union(sub)


def _cmp(lhs: Any, rhs: Any, atom: Atom, path: Path, c: Comparison) -> None:
    """Records the differences below ``path``; ``lhs`` and ``rhs`` differ and at most one is
    MISSING."""
    if lhs is MISSING or rhs is MISSING:
        present, target = (rhs, c.added) if lhs is MISSING else (lhs, c.removed)
        _attach(target, path, _everything(present, atom, path), True)
        return
    kind = atom.kind
    if kind == DEDUCED:
        kind = MAP if type(lhs) is dict and type(rhs) is dict else SCALAR
    if kind == MAP and not atom.atomic:
        lm = lhs if type(lhs) is dict else ({} if lhs is None else None)
        rm = rhs if type(rhs) is dict else ({} if rhs is None else None)
        if lm is None or rm is None or (not lm and not rm):
            c.modified.insert(path)
            return
        deduced = atom.kind == DEDUCED
        for k, lv in lm.items():
            rv = rm.get(k, MISSING)
            if lv is rv or (rv is not MISSING and lv == rv):
                continue
            ca = DEDUCED_ATOM if deduced else atom.field(k)[0]
            _cmp(lv, rv, ca, (*path, "f:" + k), c)
        for k, rv in rm.items():
            if k not in lm:
                ca = DEDUCED_ATOM if deduced else atom.field(k)[0]
                _cmp(MISSING, rv, ca, (*path, "f:" + k), c)
        return
    if kind == LIST and not atom.atomic:
        ll = lhs if type(lhs) is list else ([] if lhs is None else None)
        rl = rhs if type(rhs) is list else ([] if rhs is None else None)
        if ll is None or rl is None or (not ll and not rl):
            c.modified.insert(path)
            return
        _, l_seen = index_items(ll, atom, path, False)
        r_order, r_seen = index_items(rl, atom, path, False)
        elem = atom.elem()
        for pe, lv in l_seen.items():
            rv = r_seen.get(pe, MISSING)
            if lv is rv or (rv is not MISSING and lv == rv):
                continue
            _cmp(lv, rv, elem, (*path, pe), c)
        for pe in r_order:
            if pe not in l_seen:
                _cmp(MISSING, r_seen[pe], elem, (*path, pe), c)
        return
    c.modified.insert(path)


def _everything(v: Any, atom: Atom, path: Path) -> FieldSet:
    """Every path below ``v``, parents included (what a comparison with nothing records).
    The hot part of a create's field set: member atoms are looked up in the atom's compiled
    fields first (what ``Atom.field`` returns for declared fields), and a deduced member is
    walked only when it is an object (anything else has nothing below it)."""
    out = FieldSet()
    kind = atom.kind
    if kind == DEDUCED and type(v) is dict:
        kind = MAP
    if kind == MAP and not atom.atomic and type(v) is dict:
        members = out.members
        children = out.children
        if atom.kind == DEDUCED:
            for k, val in v.items():
                pe = "f:" + k
                members.add(pe)
                if type(val) is dict and val:
                    sub = _everything(val, DEDUCED_ATOM, (*path, pe))
                    if sub.members or sub.children:
                        children[pe] = sub
            return out
        compiled = atom._fields  # noqa: SLF001 - Atom.field's cache, same package
        for k, val in v.items():
            pe = "f:" + k
            members.add(pe)
            ca = compiled.get(k)
            if ca is None:
                ca = atom.field(k)[0]
            if ca.kind != SCALAR:
                sub = _everything(val, ca, (*path, pe))
                if sub.members or sub.children:
                    children[pe] = sub
    elif kind == LIST and not atom.atomic and type(v) is list:
        elem = atom.elem()
        walk = elem.kind != SCALAR and bool(atom.keys)
        members = out.members
        for i, item in enumerate(v):
            pe = atom.item_element(item, path, i)
            members.add(pe)
            if walk:
                sub = _everything(item, elem, (*path, pe))
                if sub.members or sub.children:
                    out.children[pe] = sub
    return out


def remove_items(v: Any, items: FieldSet, atom: Atom, path: Path = ()) -> Any:
    """``v`` without the members of ``items`` (each with all below it); a map or list emptied
    this way comes back MISSING (upstream leaves null, which the typed object drops)."""
    if items.empty():
        return v
    kind = atom.kind
    if kind == DEDUCED and type(v) is dict:
        kind = MAP
    if kind == MAP and not atom.atomic and type(v) is dict and v:
        out: dict[str, Any] = {}
        deduced = atom.kind == DEDUCED
        for k, val in v.items():
            pe = "f:" + k
            if pe in items.members:
                continue
            sub = items.children.get(pe)
            if sub is not None:
                ca = DEDUCED_ATOM if deduced else atom.field(k)[0]
                val = remove_items(val, sub, ca, (*path, pe))
                if val is MISSING:
                    continue
            out[k] = val
        return out if out else MISSING
    if kind == LIST and not atom.atomic and type(v) is list and v:
        elem = atom.elem()
        new: list[Any] = []
        for i, item in enumerate(v):
            pe = atom.item_element(item, path, i)
            if pe in items.members:
                continue
            sub = items.children.get(pe)
            if sub is not None:
                item = remove_items(item, sub, elem, (*path, pe))
                if item is MISSING:
                    continue
            new.append(item)
        return new if new else MISSING
    return v

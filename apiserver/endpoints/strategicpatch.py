"""Strategic merge patch (upstream ``k8s.io/apimachinery/pkg/util/strategicpatch``, the half
that applies a patch), driven by the v1.33 schema data of ``apiserver.api.schema``.

How a patch value meets the live value depends on the field's schema:

- objects merge key by key; ``null`` deletes a key; a field whose patch strategy is
  ``replace`` (PodDisruptionBudget ``spec.selector``) is replaced whole;
- lists are replaced whole unless the field's ``x-kubernetes-patch-strategy`` has ``merge``:
  lists of objects then merge element by element on ``x-kubernetes-patch-merge-key``
  (containers by ``name``, ports by ``containerPort``), lists of scalars (finalizers) merge as
  sets;
- directives: ``$patch: replace|delete`` in an object, ``$patch: replace|delete`` in an
  element of a merged list, ``$retainKeys: [...]`` (keys of the live object not listed are
  dropped), ``$deleteFromPrimitiveList/<field>: [...]`` and ``$setElementOrder/<field>:
  [...]`` (the order of the merged list).

Order of a merged list (worked example, containers merged by name)::

    live   [a, b, c]     patch [c', d]      ->   [a, b, c', d]

the elements named in the patch keep the patch's order (or that of ``$setElementOrder``),
the others keep the live order, and the two runs are interleaved by their live positions.

Both arguments are modified in place, as upstream's maps are: the caller hands in a private
copy of the live object and a freshly decoded patch for every attempt of its
compare-and-swap loop. Nothing is deep-copied here; every lookup is by dict.

Errors carry upstream's messages and the status upstream's handler gives them (see
``api_error``): malformed directives are 400, lists of lists 422 without detail, and the
rest (merge key missing, unknown ``$patch`` value) are a 400 BadRequest with upstream's
message (upstream lets them through unconverted, a 500; bad input never gets a 500 here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from apiserver.api import schema
from apiserver.api.gofmt import go_format
from apiserver.status import APIError, GenericServerError, bad_request

if TYPE_CHECKING:
    from apiserver.api.schema import Node

DIRECTIVE: Final = "$patch"
REPLACE: Final = "replace"
DELETE: Final = "delete"
MERGE: Final = "merge"
RETAIN_KEYS: Final = "$retainKeys"
DELETE_FROM_PRIMITIVE_LIST: Final = "$deleteFromPrimitiveList"
SET_ELEMENT_ORDER: Final = "$setElementOrder"
RETAIN_KEYS_STRATEGY: Final = "retainKeys"

# how upstream's patch handler (interpretStrategicMergePatchError) answers an error
BAD_REQUEST: Final = 400
UNPROCESSABLE: Final = 422
UNCONVERTED: Final = 500

# upstream mergepatch sentinel errors
BAD_JSON_DOC: Final = "invalid JSON document"
NO_LIST_OF_LISTS: Final = "lists of lists are not supported"
BAD_PRIMITIVE_LIST: Final = "invalid patch format of primitive list"
BAD_RETAIN_KEYS: Final = "invalid patch format of retainKeys"
BAD_SET_ELEMENT_ORDER: Final = "invalid patch format of setElementOrder list"
UNSUPPORTED_FORMAT: Final = "strategic merge patch format is not supported"


class StrategicMergePatchError(Exception):
    """A patch that cannot be applied; ``status`` is the HTTP code upstream answers with."""

    def __init__(self, message: str, status: int = UNCONVERTED) -> None:
        super().__init__(message)
        self.message = message
        self.status = status



def api_error(err: StrategicMergePatchError) -> APIError:
    """The Status upstream's PATCH handler answers ``err`` with."""
    if err.status == BAD_REQUEST:
        return bad_request(err.message)
    if err.status == UNPROCESSABLE:
        # NewGenericServerResponse(422, ...): the text itself is not echoed
        return GenericServerError(
            422, "Invalid", "the server rejected our request due to an error in our request")
    # Upstream lets every other patch error through unconverted, which clients see as a
    # 500. Bad input never gets a 500 here: the same message, as a 400 BadRequest.
    return bad_request(err.message)


# ---- Go formatting of JSON values (the error texts print them with %v) ---------------------

def go_type(value: Any) -> str:
    """reflect.TypeOf(value).String() for a decoded JSON value (ints are int64 as upstream
    decodes patches with PreserveInts)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "map[string]interface {}"
    return "[]interface {}"


def _go_s(value: Any) -> str:
    """Go's %s of a value (strings as they are, anything else flagged as Go does)."""
    if isinstance(value, str):
        return value
    if value is None:
        return "%!s(<nil>)"
    if isinstance(value, dict | list):
        return go_format(value)
    return f"%!s({go_type(value)}={go_format(value)})"


def _no_merge_key(m: dict[str, Any], key: str) -> StrategicMergePatchError:
    return StrategicMergePatchError(
        f"map: {go_format(m)} does not contain declared merge key: {key}")


def _bad_arg_type(expected: str, actual: Any) -> StrategicMergePatchError:
    return StrategicMergePatchError(f"expected a {expected}, but received a {go_type(actual)}")


def _bad_patch_type(directive: Any, m: dict[str, Any]) -> StrategicMergePatchError:
    return StrategicMergePatchError(
        f"unknown patch type: {_go_s(directive)} in map: {go_format(m)}")


# ---- schema lookups ------------------------------------------------------------------------

class _Field:
    """What the schema says about one field of an object: the node of its value (of its
    elements for a list), its patch strategy and merge key."""

    __slots__ = ("merge_key", "node", "strategy")

    def __init__(self, node: Node, strategy: str, merge_key: str) -> None:
        self.node = node
        self.strategy = strategy
        self.merge_key = merge_key


_UNKNOWN_FIELD: Final = _Field(schema.EMPTY, "", "")
_MISSING: Final = object()


def _strategy(raw: Node) -> str:
    """The strategy other than retainKeys (upstream extractRetainKeysPatchStrategy)."""
    value = raw.get("x-kubernetes-patch-strategy")
    if not isinstance(value, str) or not value:
        return ""
    parts = value.split(",")
    if len(parts) == 1:
        return "" if parts[0] == RETAIN_KEYS_STRATEGY else parts[0]
    if len(parts) == 2 and RETAIN_KEYS_STRATEGY in parts:
        return parts[1] if parts[0] == RETAIN_KEYS_STRATEGY else parts[0]
    raise StrategicMergePatchError(f"unexpected patch strategy: [{' '.join(parts)}]")


def _lookup(node: Node, key: str, *, is_list: bool) -> _Field:
    """The field ``key`` of object ``node`` (or the value of map ``node``). Fields the
    schema does not know merge as plain objects and replace as lists."""
    node = schema.resolve(node)
    props = node.get("properties")
    raw: Node | None = None
    if props is not None:
        raw = props.get(key)
    elif isinstance(node.get("additionalProperties"), dict):
        raw = node["additionalProperties"]
    if raw is None:
        return _UNKNOWN_FIELD
    value = schema.resolve(raw)
    if is_list:
        items = value.get("items")
        value = schema.resolve(items) if isinstance(items, dict) else schema.EMPTY
    return _Field(value, _strategy(raw), str(raw.get("x-kubernetes-patch-merge-key") or ""))


# ---- values --------------------------------------------------------------------------------

def _same(a: Any, b: Any) -> bool:
    """Go's == on two interface values: same dynamic type and equal (1 != 1.0 != true)."""
    return type(a) is type(b) and a == b


def _hkey(value: Any) -> Any:
    """A dict key standing for ``value`` under Go's == (None for values Go cannot hash)."""
    t = type(value)
    if t is dict or t is list:
        return None
    return (t, value)


def _discard_nulls(value: Any) -> None:
    """Drop every null property, at any depth (upstream discardNullValuesFromPatch)."""
    if isinstance(value, dict):
        for k in [k for k, v in value.items() if v is None]:
            del value[k]
        for v in value.values():
            if isinstance(v, dict | list):
                _discard_nulls(v)
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, dict | list):
                _discard_nulls(v)


def _remove_directives(value: Any) -> tuple[Any, bool]:
    """``value`` without objects that carry ``$patch``; False when ``value`` itself is one
    (upstream removeDirectives: the field or element is then not kept)."""
    if isinstance(value, dict):
        if DIRECTIVE in value:
            return None, False
        for k in list(value):
            v = value[k]
            if isinstance(v, dict | list):
                nv, keep = _remove_directives(v)
                if keep:
                    value[k] = nv
                else:
                    del value[k]
        return value, True
    if isinstance(value, list):
        out = []
        for v in value:
            nv, keep = _remove_directives(v)
            if keep:
                out.append(nv)
        return out, True
    return value, True


def _extract_key(key: str, prefix: str) -> str:
    head, sep, rest = key.partition("/")
    if not sep or head != prefix:
        raise StrategicMergePatchError(
            BAD_PRIMITIVE_LIST if prefix == DELETE_FROM_PRIMITIVE_LIST else BAD_SET_ELEMENT_ORDER,
            BAD_REQUEST)
    return rest


def _element_kind(*lists: list[Any]) -> type:
    """The one type of the elements of ``lists`` (upstream sliceElementType)."""
    prev: type | None = None
    for lst in lists:
        for v in lst:
            t = type(v)
            if prev is None:
                prev = t
                if t is list:
                    raise StrategicMergePatchError(NO_LIST_OF_LISTS, UNPROCESSABLE)
            elif t is not prev:
                raise StrategicMergePatchError(
                    "list element types are not identical: "
                    + go_format(list(lists)))
    if prev is None:
        raise StrategicMergePatchError("no elements in any of the given slices")
    return prev


# ---- maps ----------------------------------------------------------------------------------

def apply(original: dict[str, Any], patch: dict[str, Any], node: Node) -> dict[str, Any]:
    """``patch`` applied to ``original`` (an object of the kind described by ``node``).
    Both are modified; raises StrategicMergePatchError."""
    return _merge_map(original, patch, node)


def _merge_map(original: dict[str, Any] | None, patch: dict[str, Any],
               node: Node) -> dict[str, Any]:
    if DIRECTIVE in patch:
        directive = patch[DIRECTIVE]
        if directive == REPLACE and isinstance(directive, str):
            del patch[DIRECTIVE]
            return patch
        if directive == DELETE and isinstance(directive, str):
            return {}
        raise _bad_patch_type(directive, patch)
    if original is None:
        original = {}
    _apply_retain_keys(original, patch)
    _merge_ordered_lists(original, patch, node)

    for key, pv in list(patch.items()):
        k = key
        is_delete_list = key.startswith(DELETE_FROM_PRIMITIVE_LIST)
        if is_delete_list:
            k = _extract_key(key, DELETE_FROM_PRIMITIVE_LIST)
        if pv is None:
            original.pop(k, None)
            continue
        ov = original.get(k, _MISSING)
        if ov is _MISSING or type(ov) is not type(pv):
            if not is_delete_list:
                _discard_nulls(pv)
                nv, keep = _remove_directives(pv)
                if keep:
                    original[k] = nv
                else:
                    original.pop(k, None)
            continue
        if isinstance(ov, dict):
            f = _lookup(node, k, is_list=False)
            original[k] = pv if f.strategy == REPLACE else _merge_map(ov, pv, f.node)
        elif isinstance(ov, list):
            f = _lookup(node, k, is_list=True)
            original[k] = _merge_list_field(ov, pv, f, is_delete_list)
        else:
            original[k] = pv
    return original


def _apply_retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    """``$retainKeys``: keys of ``original`` not listed go; every key the patch sets must be
    listed."""
    if RETAIN_KEYS not in patch:
        return
    retain = patch.pop(RETAIN_KEYS)
    if not isinstance(retain, list):
        raise StrategicMergePatchError(BAD_RETAIN_KEYS, BAD_REQUEST)
    keep = {_hkey(v) for v in retain}
    for k, v in patch.items():
        if v is None or k.startswith((DELETE_FROM_PRIMITIVE_LIST, SET_ELEMENT_ORDER)):
            continue
        if (str, k) not in keep:
            raise StrategicMergePatchError(BAD_RETAIN_KEYS, BAD_REQUEST)
    for k in [k for k in original if (str, k) not in keep]:
        del original[k]


# ---- lists ---------------------------------------------------------------------------------

def _merge_list_field(original: list[Any], patch: list[Any], f: _Field,
                      is_delete_list: bool) -> list[Any]:
    """upstream mergeSliceHandler: merge when the field says so (or for a deletion list),
    else the patch's list replaces the live one."""
    if f.strategy == MERGE or is_delete_list:
        return _merge_list(original, patch, f.node, f.merge_key, is_delete_list)
    return patch


def _merge_list(original: list[Any], patch: list[Any], items: Node, merge_key: str,
                is_delete_list: bool) -> list[Any]:
    if not original and not patch:
        return original
    kind = _element_kind(original, patch)
    if kind is not dict:
        if is_delete_list:
            gone = {_hkey(v) for v in patch}
            return [v for v in original if _hkey(v) not in gone]
        merged = _dedupe(original + patch)
    else:
        if not merge_key:
            raise StrategicMergePatchError(
                f"cannot merge lists without merge key for {_type_name(items)}")
        original, patch = _special_elements(original, patch, merge_key)
        merged = _merge_elements(original, patch, merge_key, items)
    if not merge_key:
        patch_items, server_only = _partition_scalars(merged, patch)
    else:
        patch_items, server_only = _partition_maps(merged, patch, merge_key)
    return _normalize_order(patch_items, server_only, patch, original, merge_key, kind)


def _type_name(items: Node) -> str:
    """The Go kind of the elements' type, as upstream's PatchMetaFromStruct.Name() prints
    it."""
    return {"string": "string", "integer": "int32", "boolean": "bool",
            "number": "float64"}.get(str(items.get("type", "")), "struct")


def _dedupe(values: list[Any]) -> list[Any]:
    seen: set[Any] = set()
    out: list[Any] = []
    for v in values:
        h = _hkey(v)
        if h is None:
            if any(_same(v, o) for o in out):
                continue
        elif h in seen:
            continue
        else:
            seen.add(h)
        out.append(v)
    return out


def _special_elements(original: list[Any], patch: list[Any],
                      merge_key: str) -> tuple[list[Any], list[Any]]:
    """Elements with ``$patch``: ``delete`` removes the live elements of its key, ``replace``
    makes the other patch elements the whole list."""
    plain: list[Any] = []
    replace = False
    for v in patch:
        if DIRECTIVE not in v:
            plain.append(v)
            continue
        directive = v[DIRECTIVE]
        if directive == DELETE and isinstance(directive, str):
            if merge_key not in v:
                raise _no_merge_key(v, merge_key)
            value = v[merge_key]
            original = [o for o in original
                        if not (merge_key in o and _same(o[merge_key], value))]
        elif directive == REPLACE and isinstance(directive, str):
            replace = True
        elif directive == MERGE and isinstance(directive, str):
            raise StrategicMergePatchError("merging lists cannot yet be specified in the patch")
        else:
            raise _bad_patch_type(directive, v)
    if replace:
        return plain, []
    return original, plain


def _merge_elements(live: list[Any], patch: list[Any], merge_key: str,
                    items: Node) -> list[Any]:
    """Each patch element merges into the live element with its key, or is appended (to a
    new list: ``live`` stays as it was, it orders the result)."""
    original = list(live)
    where: dict[Any, int] = {}
    for i, o in enumerate(original):
        if merge_key in o:
            h = _hkey(o[merge_key])
            if h is not None:
                where.setdefault(h, i)
    for v in patch:
        if merge_key not in v:
            raise _no_merge_key(v, merge_key)
        value = v[merge_key]
        h = _hkey(value)
        at = where.get(h) if h is not None else next(
            (j for j, o in enumerate(original) if merge_key in o and _same(o[merge_key], value)),
            None)
        if at is not None:
            original[at] = _merge_map(original[at], v, items)
        else:
            _discard_nulls(v)
            if h is not None:
                where[h] = len(original)
            original.append(v)
    return original


def _partition_scalars(merged: list[Any], by: list[Any]) -> tuple[list[Any], list[Any]]:
    present = {_hkey(v) for v in by}
    in_patch: list[Any] = []
    server_only: list[Any] = []
    for v in merged:
        (in_patch if _hkey(v) in present else server_only).append(v)
    return in_patch, server_only


def _partition_maps(merged: list[Any], by: list[Any],
                    merge_key: str) -> tuple[list[Any], list[Any]]:
    present = set()
    for i, v in enumerate(by):
        if not isinstance(v, dict):
            raise StrategicMergePatchError(f"value for key {i} is not a map")
        if merge_key in v:
            present.add(_hkey(v[merge_key]))
    in_patch: list[Any] = []
    server_only: list[Any] = []
    for v in merged:
        if not isinstance(v, dict):
            raise _bad_arg_type("map[string]interface {}", v)
        if merge_key not in v:
            raise _no_merge_key(v, merge_key)
        (in_patch if _hkey(v[merge_key]) in present else server_only).append(v)
    return in_patch, server_only


def _order_keys(items: list[Any], merge_key: str, kind: type) -> list[Any]:
    """What elements are compared by when ordering: the merge key's value for objects, the
    element itself for scalars (as _hkey)."""
    if kind is dict:
        return [_hkey(v.get(merge_key)) if isinstance(v, dict) else None for v in items]
    return [_hkey(v) for v in items]


def _positions(keys: list[Any]) -> dict[Any, int]:
    pos: dict[Any, int] = {}
    for i, k in enumerate(keys):
        pos.setdefault(k, i)
    return pos


def _sort_by(items: list[Any], order: list[Any], pos: dict[Any, int], merge_key: str,
             kind: type) -> tuple[list[Any], list[int]]:
    """``items`` in the order of ``order`` (whose positions are ``pos``), stably, with the
    elements carrying ``$patch: delete`` last; and the position in ``pos`` of each (-1 for
    none)."""
    to_delete: list[Any] = []
    if kind is dict:
        for lst in (items, order):
            for v in lst:
                if not isinstance(v, dict):
                    raise _bad_arg_type("map[string]interface {}", v)
                if merge_key not in v:
                    raise _no_merge_key(v, merge_key)
        keep: list[Any] = []
        for v in items:
            (to_delete if v.get(DIRECTIVE) == DELETE else keep).append(v)
        items = keep
    missing = len(order)
    ranked = sorted(((pos.get(k, missing), n, v) for n, (k, v) in
                     enumerate(zip(_order_keys(items, merge_key, kind), items, strict=True))),
                    key=lambda t: (t[0], t[1]))
    out = [v for _, _, v in ranked] + to_delete
    return out, [r if r < missing else -1 for r, _, _ in ranked] + [-1] * len(to_delete)


def _normalize_order(patch_items: list[Any], server_only: list[Any], patch_order: list[Any],
                     server_order: list[Any], merge_key: str, kind: type) -> list[Any]:
    """The patch's elements in the patch's order, the live-only elements in live order, the
    two runs interleaved by live position (upstream normalizeElementOrder)."""
    live_pos = _positions(_order_keys(server_order, merge_key, kind))
    right, _ = _sort_by(patch_items, patch_order,
                        _positions(_order_keys(patch_order, merge_key, kind)), merge_key, kind)
    left, left_at = _sort_by(server_only, server_order, live_pos, merge_key, kind)
    if not left:
        return right
    if not right:
        return left
    right_at = [live_pos.get(k, -1) for k in _order_keys(right, merge_key, kind)]
    out: list[Any] = []
    i = j = 0
    while i < len(left) and j < len(right):
        # a live-only element goes first only when both have a live position and its is
        # earlier: an element new to the list goes before the live-only ones that follow
        if left_at[i] >= 0 and 0 <= right_at[j] and left_at[i] < right_at[j]:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    out.extend(left[i:])
    out.extend(right[j:])
    return out


# ---- $setElementOrder ----------------------------------------------------------------------

def _merge_ordered_lists(original: dict[str, Any], patch: dict[str, Any], node: Node) -> None:
    """Each ``$setElementOrder/<field>`` with its list: merged now, ordered as the directive
    says, and both taken out of the patch."""
    for key in [k for k in patch if k.startswith(SET_ELEMENT_ORDER)]:
        order = patch.pop(key)
        if not isinstance(order, list):
            raise _bad_arg_type("[]interface {}", order)
        field = _extract_key(key, SET_ELEMENT_ORDER)
        found_original = field in original
        found_patch = field in patch
        original_list: list[Any] = []
        patch_list: list[Any] = []
        if found_original:
            if not isinstance(original[field], list):
                raise _bad_arg_type("[]interface {}", original[field])
            original_list = original[field]
        if found_patch:
            if not isinstance(patch[field], list):
                raise _bad_arg_type("[]interface {}", patch[field])
            patch_list = patch[field]
        f = _lookup(node, field, is_list=True)
        _check_order(patch_list, order, f.merge_key)
        if found_original and not found_patch:
            merged = original_list
        elif found_patch and not found_original:
            merged = _remove_directives(patch_list)[0]
        elif found_original:
            merged = _merge_list_field(original_list, patch_list, f, False)
        else:
            continue
        if not f.merge_key:
            patch_items, server_only = _partition_scalars(merged, order)
        else:
            patch_items, server_only = _partition_maps(merged, order, f.merge_key)
        kind = _element_kind(original_list, patch_list)
        original[field] = _normalize_order(patch_items, server_only, order, original_list,
                                           f.merge_key, kind)
        patch.pop(field, None)


def _check_order(patch_list: list[Any], order: list[Any], merge_key: str) -> None:
    """The patch's elements (deletions aside) must appear in ``order``, in that order."""
    if not order or not patch_list:
        return
    items = patch_list
    if merge_key:
        items = []
        for v in patch_list:
            if not isinstance(v, dict):
                raise _bad_arg_type("map[string]interface {}", v)
            if v.get(DIRECTIVE) != DELETE:
                items.append(v)
    p = s = 0
    while p < len(items) and s < len(order):
        item = items[p]
        if isinstance(item, dict) and DIRECTIVE in item:
            p += 1
            continue
        if _order_item_equal(item, order[s], merge_key):
            p += 1
        s += 1
    if p < len(items) and s >= len(order):
        raise StrategicMergePatchError(
            f"the order in patch list:\n{go_format(patch_list)}\n doesn't match "
            f"{SET_ELEMENT_ORDER} list:\n{go_format(order)}")


def _order_item_equal(left: Any, right: Any, merge_key: str) -> bool:
    if not merge_key:
        return _same(left, right)
    for v in (left, right):
        if not isinstance(v, dict):
            raise _bad_arg_type("map[string]interface {}", v)
        if merge_key not in v:
            raise _no_merge_key(v, merge_key)
    return _same(left[merge_key], right[merge_key])

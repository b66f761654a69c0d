"""Copies of decoded JSON trees (dicts, lists, scalars), and the hand-over that makes most of
them unnecessary.

Objects from storage may be shared with a cache, and a caller may keep using an object it
passed in, so every write path of the generic store works on a copy, except where the caller
has handed the object over:

* ``give(obj)``: the caller passes ``obj`` on and keeps no reference to it or to any part of
  it, and nothing else holds one (an object the request handler has just decoded from the
  body, or built afresh for this one call). The only parts it may share are FieldsV1 trees
  of ``metadata.managedFields``, which nobody changes in place (see fieldmanager/fieldsv1).
* ``take(obj)``: what the store calls instead of ``deep_copy``: ``obj`` itself when it was
  handed over by the last ``give`` of this task, else a deep copy.

The hand-over lives in a context variable, so it holds only within the task that made it
(a store call awaited by the handler runs in the handler's task); anywhere else ``take``
copies, which is always correct.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, TypeVar, cast

import orjson

T = TypeVar("T")

_GIVEN: ContextVar[object | None] = ContextVar("treecopy_given", default=None)


def _copy(value: Any) -> Any:
    t = type(value)
    if t is dict:
        return {k: _copy(v) for k, v in value.items()}
    if t is list:
        return [_copy(v) for v in value]
    return value


def deep_copy(value: T) -> T:
    """What ``copy.deepcopy`` does for JSON trees, several times faster (no memo, no
    dispatch); anything but dicts and lists is shared (immutable in a JSON tree)."""
    return cast(T, _copy(value))


def copy_stored(value: T) -> T:
    """A deep copy of an object as decoded from storage: JSON written by orjson and read back,
    so a second round trip through orjson (C, about twice as fast as ``deep_copy``) gives an
    equal tree. Anything orjson refuses (a key that is not a string, an integer beyond 64
    bits) is copied by ``deep_copy``. Not for objects that may hold NaN or infinities, which
    orjson writes as null (a stored object never does: JSON cannot express them)."""
    try:
        return cast(T, orjson.loads(orjson.dumps(value)))
    except TypeError:
        return deep_copy(value)


def give(obj: T) -> T:
    """Hand ``obj`` over to the store call that follows (see the module doc); returns it."""
    _GIVEN.set(obj)
    return obj


def take(obj: T) -> T:
    """``obj`` itself if it was handed over (the hand-over is used up), else a deep copy."""
    if _GIVEN.get() is obj:
        _GIVEN.set(None)
        return obj
    return deep_copy(obj)

"""Deep copy of decoded JSON trees (dicts, lists, scalars): what ``copy.deepcopy`` does for
them, several times faster (no memo, no dispatch). Objects from storage may be shared with a
cache, so every write path copies before changing one."""

from __future__ import annotations

from typing import Any, TypeVar, cast

T = TypeVar("T")


def _copy(value: Any) -> Any:
    t = type(value)
    if t is dict:
        return {k: _copy(v) for k, v in value.items()}
    if t is list:
        return [_copy(v) for v in value]
    return value


def deep_copy(value: T) -> T:
    return cast(T, _copy(value))

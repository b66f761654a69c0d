"""Go's ``%v`` of decoded JSON values, for error messages whose words clients see as
upstream writes them (``map[a:1 b:[x y]]``, ``<nil>``, floats in strconv's shortest 'g'
form)."""

from __future__ import annotations

import decimal
from typing import Any


def go_float(value: float) -> str:
    """Go's %v of a float64 (strconv 'g', shortest): exponent form below 1e-4 and from
    1e6."""
    if value != value or value in (float("inf"), float("-inf")):
        return {"nan": "NaN", "inf": "+Inf", "-inf": "-Inf"}[repr(value)]
    if value == 0:
        return "-0" if str(value).startswith("-") else "0"
    sign, digits, exp = decimal.Decimal(repr(value)).as_tuple()
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    assert isinstance(exp, int)
    point = len(digits) + exp  # position of the decimal point within ds
    x = point - 1
    neg = "-" if sign else ""
    if x < -4 or x >= 6:
        mant = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
        return f"{neg}{mant}e{'-' if x < 0 else '+'}{abs(x):02d}"
    if point <= 0:
        return f"{neg}0.{'0' * -point}{ds}"
    if point >= len(ds):
        return neg + ds + "0" * (point - len(ds))
    return f"{neg}{ds[:point]}.{ds[point:]}"


def go_format(value: Any) -> str:
    """Go's %v of a decoded JSON value: ``map[a:1 b:[x y]]`` (keys sorted), ``<nil>``."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_format(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_format(v) for v in value) + "]"
    return str(value)

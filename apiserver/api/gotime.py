"""Go's ``time.Parse`` errors for the two layouts the API decodes (metav1.Time uses RFC 3339,
metav1.MicroTime RFC 3339 with exactly six fractional digits), so a bad timestamp gets the
message upstream's decoder gives: ``parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot
parse "x" as "2006"``."""

from __future__ import annotations

import datetime
import re
from typing import Final

RFC3339: Final = "2006-01-02T15:04:05Z07:00"
RFC3339_MICRO: Final = "2006-01-02T15:04:05.000000Z07:00"

# layout -> (literal prefix, element) chunks, as Go's nextStdChunk splits them
_CHUNKS: Final[dict[str, tuple[tuple[str, str], ...]]] = {
    RFC3339: (("", "2006"), ("-", "01"), ("-", "02"), ("T", "15"), (":", "04"), (":", "05"),
              ("", "Z07:00")),
    RFC3339_MICRO: (("", "2006"), ("-", "01"), ("-", "02"), ("T", "15"), (":", "04"),
                    (":", "05"), ("", ".000000"), ("", "Z07:00")),
}


def _quote(s: str) -> str:
    out = ['"']
    for c in s:
        if c in '"\\':
            out.append("\\" + c)
        elif c.isprintable() and c.isascii():
            out.append(c)
        else:
            out.append("".join(f"\\x{b:02x}" for b in c.encode()))
    return "".join(out) + '"'


def _digit(s: str, i: int) -> bool:
    return i < len(s) and "0" <= s[i] <= "9"


def _getnum(s: str, fixed: bool) -> tuple[int, str] | None:
    if not _digit(s, 0):
        return None
    if not _digit(s, 1):
        if fixed:
            return None
        return int(s[0]), s[1:]
    return int(s[:2]), s[2:]


def _days_in(month: int, year: int) -> int:
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


def parse_error(value: str, layout: str) -> str | None:  # noqa: C901, PLR0911, PLR0912
    """The error ``time.Parse(layout, value)`` returns, or None when it parses."""
    def cannot(elem_value: str, elem_layout: str) -> str:
        return (f"parsing time {_quote(value)} as {_quote(layout)}: cannot parse "
                f"{_quote(elem_value)} as {_quote(elem_layout)}")

    def out_of_range(what: str) -> str:
        return f"parsing time {_quote(value)}: {what} out of range"

    rest = value
    year = month = day = 0
    for prefix, elem in _CHUNKS[layout]:
        for c in prefix:
            if not rest or rest[0] != c:
                return cannot(rest, prefix)
            rest = rest[1:]
        hold = rest
        if elem == "2006":
            if len(rest) < 4 or not _digit(rest, 0) or not rest[:4].isdigit():
                return cannot(hold, elem)
            year, rest = int(rest[:4]), rest[4:]
            continue
        if elem in ("01", "02", "15", "04", "05"):
            got = _getnum(rest, elem != "15")
            if got is None:
                return cannot(hold, elem)
            n, rest = got
            if elem == "01":
                if not 1 <= n <= 12:
                    return out_of_range("month")
                month = n
            elif elem == "02":
                day = n
            elif elem == "15" and n >= 24:
                return out_of_range("hour")
            elif elem == "04" and n >= 60:
                return out_of_range("minute")
            elif elem == "05":
                if n >= 60:
                    return out_of_range("second")
                if layout == RFC3339 and len(rest) >= 2 and rest[0] in ".," \
                        and _digit(rest, 1):
                    i = 2
                    while _digit(rest, i):
                        i += 1
                    rest = rest[i:]
            continue
        if elem == ".000000":
            if len(rest) < 7 or rest[0] not in ".," or not rest[1:7].isdigit():
                return cannot(hold, elem)
            rest = rest[7:]
            continue
        # Z07:00
        if rest[:1] == "Z":
            rest = rest[1:]
            continue
        if len(rest) < 6 or rest[3] != ":":
            return cannot(hold, elem)
        sign, hh, mm = rest[0], rest[1:3], rest[4:6]
        rest = rest[6:]
        hr = _getnum(hh, True)
        mn = _getnum(mm, True) if hr is not None else None
        if hr is not None and hr[0] > 24:
            return out_of_range("time zone offset hour")
        if mn is not None and mn[0] > 60:
            return out_of_range("time zone offset minute")
        if hr is None or mn is None or sign not in "+-":
            return cannot(hold, elem)
    if rest:
        return f"parsing time {_quote(value)}: extra text: {_quote(rest)}"
    if day < 1 or day > _days_in(month, year):
        return out_of_range("day")
    return None


_STAMP: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?(Z|[+-]\d{2}:\d{2})")


def canonical(value: str, layout: str) -> str:
    """The text upstream writes back for a timestamp it parsed (``value`` has passed
    ``parse_error``): the instant in UTC, ``Z``; RFC 3339 without fractional seconds
    (metav1.Time truncates them), MicroTime with six digits. Unchanged when Python cannot
    represent the instant (years outside 1-9999)."""
    m = _STAMP.fullmatch(value)
    if m is None:
        return value
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    frac = (m.group(7) or "")[:6].ljust(6, "0")
    zone = m.group(8)
    try:
        t = datetime.datetime(year, month, day, hour, minute, second, int(frac))
        if zone != "Z":
            sign = 1 if zone[0] == "+" else -1
            t -= sign * datetime.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
    except (ValueError, OverflowError):
        return value
    if layout == RFC3339_MICRO:
        return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ") if t.year >= 1000 else value
    return t.strftime("%Y-%m-%dT%H:%M:%SZ") if t.year >= 1000 else value

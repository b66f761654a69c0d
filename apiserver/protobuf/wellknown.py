"""JSON forms of the messages that upstream marshals specially (Time, MicroTime, Duration).

- ``meta.v1.Time`` is {seconds, nanos} on the wire; upstream writes whole seconds only (nanos
  is always 0) and JSON is RFC 3339 in UTC without a fraction ("2006-01-02T15:04:05Z"). Go's
  zero time is an empty message on the wire (a reader also takes seconds ==
  ZERO_TIME_SECONDS, year 1, as zero) and ``null`` in JSON.
- ``meta.v1.MicroTime`` keeps nanos on the wire; JSON has exactly six fractional digits.
- ``meta.v1.Duration`` is nanoseconds on the wire and Go's ``time.Duration`` string in JSON
  ("1h2m3.5s", "150ms", "0s").
"""

from __future__ import annotations

import re
from datetime import date
from typing import Final

from apiserver.protobuf.errors import ProtobufError

# time.Time{}.Unix(): 0001-01-01T00:00:00Z in Unix seconds.
ZERO_TIME_SECONDS: Final = -62135596800
_EPOCH_ORDINAL: Final = date(1970, 1, 1).toordinal()
_MIN_SECONDS: Final = ZERO_TIME_SECONDS
_MAX_SECONDS: Final = 253402300799  # 9999-12-31T23:59:59Z

_RFC3339: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))\Z"
)


def format_time(seconds: int, nanos: int = 0, *, micro: bool = False) -> str:
    """RFC 3339 in UTC; with ``micro`` six fractional digits (MicroTime)."""
    if not _MIN_SECONDS <= seconds <= _MAX_SECONDS or not 0 <= nanos < 1_000_000_000:
        raise ProtobufError(f"timestamp out of range: seconds={seconds} nanos={nanos}")
    days, rem = divmod(seconds, 86400)
    day = date.fromordinal(days + _EPOCH_ORDINAL)
    hour, rem = divmod(rem, 3600)
    minute, second = divmod(rem, 60)
    text = f"{day.year:04d}-{day.month:02d}-{day.day:02d}T{hour:02d}:{minute:02d}:{second:02d}"
    if micro:
        return f"{text}.{nanos // 1000:06d}Z"
    return text + "Z"


def parse_time(text: str) -> tuple[int, int]:
    """(seconds, nanos) of an RFC 3339 timestamp; ProtobufError when it is not one."""
    match = _RFC3339.match(text)
    if match is None:
        raise ProtobufError(f'parsing time "{text}" as RFC 3339 failed')
    year, month, day_, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    try:
        ordinal = date(year, month, day_).toordinal()
    except ValueError:
        raise ProtobufError(f'parsing time "{text}": day out of range') from None
    if hour > 23 or minute > 59 or second > 59:
        raise ProtobufError(f'parsing time "{text}": time out of range')
    fraction = match.group(7) or ""
    nanos = int(fraction.ljust(9, "0")) if fraction else 0
    offset = 0
    if match.group(9):
        offset = int(match.group(10)) * 3600 + int(match.group(11)) * 60
        if match.group(9) == "-":
            offset = -offset
    seconds = (ordinal - _EPOCH_ORDINAL) * 86400 + hour * 3600 + minute * 60 + second - offset
    return seconds, nanos


def _fraction(value: int, unit: int) -> str:
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{str(frac).rjust(digits, '0').rstrip('0')}"


def format_duration(nanoseconds: int) -> str:
    """Go's ``time.Duration.String``."""
    if nanoseconds == 0:
        return "0s"
    sign = "-" if nanoseconds < 0 else ""
    u = abs(nanoseconds)
    if u < 1_000_000_000:
        if u < 1_000:
            return f"{sign}{u}ns"
        if u < 1_000_000:
            return f"{sign}{_fraction(u, 1_000)}µs"
        return f"{sign}{_fraction(u, 1_000_000)}ms"
    seconds_total, frac = divmod(u, 1_000_000_000)
    minutes_total, seconds = divmod(seconds_total, 60)
    text = _fraction(seconds * 1_000_000_000 + frac, 1_000_000_000) + "s"
    if minutes_total:
        hours, minutes = divmod(minutes_total, 60)
        text = f"{minutes}m{text}"
        if hours:
            text = f"{hours}h{text}"
    return sign + text


_UNITS: Final[dict[str, int]] = {
    "ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000,
    "s": 1_000_000_000, "m": 60_000_000_000, "h": 3_600_000_000_000,
}
_DURATION_PART: Final = re.compile(r"(\d*)(?:\.(\d*))?(ns|us|µs|μs|ms|s|m|h)")
_INT64_MAX: Final = (1 << 63) - 1


def parse_duration(text: str) -> int:
    """Nanoseconds of a Go duration string ("1h30m", "2.5s", "-1m"); ProtobufError if bad."""
    bad = ProtobufError(f'time: invalid duration "{text}"')
    rest = text
    sign = 1
    if rest[:1] in ("+", "-"):
        sign = -1 if rest[0] == "-" else 1
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise bad
    total = 0
    pos = 0
    while pos < len(rest):
        match = _DURATION_PART.match(rest, pos)
        if match is None or (not match.group(1) and not match.group(2)):
            raise bad
        unit = _UNITS[match.group(3)]
        whole = int(match.group(1) or "0")
        frac_digits = match.group(2) or ""
        total += whole * unit
        if frac_digits:
            total += int(frac_digits) * unit // (10 ** len(frac_digits))
        pos = match.end()
    if total > _INT64_MAX:
        raise ProtobufError(f'time: invalid duration "{text}"')
    return sign * total

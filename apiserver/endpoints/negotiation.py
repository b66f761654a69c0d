"""Content negotiation (upstream ``endpoints/handlers/negotiation``).

Output: the ``Accept`` header is a comma list of media ranges; clauses are tried in order of
``q`` (highest first, then the more specific range first, otherwise in the order given) and
the first clause that one of our serializers accepts wins. Parameters of a clause:
``as``/``g``/``v`` ask for a transformation (Table, PartialObjectMetadata), ``stream``
must be ``watch`` on a serializer that can stream, ``pretty=1`` indents; others are ignored.
An empty header (or ``*/*``) means JSON. Protobuf is served for kinds the protobuf codec
knows (under its upstream name ``application/vnd.kubernetes.protobuf``, which clients built
against upstream decode by, and the renamed ``application/vnd.platform.protobuf``; the answer
names the type that was asked for); CBOR is not served yet. Clauses we cannot serve are
skipped, so a later fallback in the list still matches, and a list with nothing we serve is a
406.

Input: ``Content-Type`` picks the body decoder; empty means JSON; parameters (charset) are
ignored; protobuf is decoded for creates and updates of the kinds ``protobuf`` knows;
anything else is a 415.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Final

from apiserver.status import APIError

JSON: Final = "application/json"
YAML: Final = "application/yaml"
PROTOBUF: Final = "application/vnd.platform.protobuf"
PROTOBUF_UPSTREAM: Final = "application/vnd.kubernetes.protobuf"
PROTOBUF_TYPES: Final = frozenset({PROTOBUF, PROTOBUF_UPSTREAM})
CBOR: Final = "application/cbor"

# Serializers we answer with, in preference order (the first is the default).
OUTPUT_TYPES: Final = (JSON, YAML, PROTOBUF, PROTOBUF_UPSTREAM)
# YAML cannot frame a watch stream.
STREAM_TYPES: Final = (JSON, PROTOBUF, PROTOBUF_UPSTREAM)
INPUT_TYPES: Final = (JSON, YAML)
# What 406/415 messages list (the renamed protobuf type only).
_LISTED: Final = (JSON, YAML, PROTOBUF)

# Groups whose Table / PartialObjectMetadata we render. meta.k8s.io is accepted too so that
# stock kubectl (which asks for g=meta.k8s.io) gets server-side tables; the answer names the
# group that was asked for.
META_GROUPS: Final = frozenset({"meta.plat.io", "meta.k8s.io"})
META_VERSIONS: Final = frozenset({"v1", "v1beta1"})
TABLE: Final = "Table"
PARTIAL: Final = "PartialObjectMetadata"
PARTIAL_LIST: Final = "PartialObjectMetadataList"


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputType:
    """The negotiated response encoding. ``convert`` is "" or one of Table /
    PartialObjectMetadata / PartialObjectMetadataList, to be rendered in
    ``convert_group``/``convert_version``."""

    media_type: str = JSON
    convert: str = ""
    convert_group: str = ""
    convert_version: str = ""
    pretty: bool = False

    @property
    def convert_api_version(self) -> str:
        return f"{self.convert_group}/{self.convert_version}"


DEFAULT_OUTPUT: Final = OutputType()


@dataclass(frozen=True, slots=True)
class _Clause:
    type: str
    subtype: str
    q: float
    params: dict[str, str]


def _parse_accept(header: str) -> list[_Clause]:
    clauses: list[_Clause] = []
    for raw in header.split(","):
        parts = [p.strip() for p in raw.split(";")]
        media = parts[0].lower()
        if not media:
            continue
        if "/" in media:
            typ, _, sub = media.partition("/")
        elif media == "*":
            typ, sub = "*", "*"
        else:
            continue
        q = 1.0
        params: dict[str, str] = {}
        for p in parts[1:]:
            key, sep, value = p.partition("=")
            if not sep:
                continue
            key, value = key.strip().lower(), value.strip().strip('"')
            if key == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
            else:
                params[key] = value
        clauses.append(_Clause(typ, sub, q, params))
    # Stable: equal clauses keep the client's order.
    clauses.sort(key=lambda c: (-c.q, c.type == "*", c.subtype == "*"))
    return clauses


def _accepts(clause: _Clause, serializer: str, *, stream: bool, allow_table: bool,
             allow_partial: bool, allow_protobuf: bool) -> OutputType | None:
    if serializer in PROTOBUF_TYPES and not allow_protobuf:
        return None
    typ, _, sub = serializer.partition("/")
    if not (
        (clause.type == typ and clause.subtype in (sub, "*"))
        or (clause.type == "*" and clause.subtype == "*")
    ):
        return None
    p = clause.params
    stream_param = p.get("stream", "")
    if stream_param and (serializer not in STREAM_TYPES or stream_param != "watch"):
        return None
    if stream and serializer not in STREAM_TYPES:
        return None
    convert = group = version = ""
    if "as" in p or "g" in p or "v" in p:
        convert, group, version = p.get("as", ""), p.get("g", ""), p.get("v", "")
        if group not in META_GROUPS or version not in META_VERSIONS:
            return None
        if convert == TABLE:
            if not allow_table or serializer in PROTOBUF_TYPES:
                return None
        elif convert in (PARTIAL, PARTIAL_LIST):
            if not allow_partial:
                return None
        else:
            return None
    return OutputType(media_type=serializer, convert=convert, convert_group=group,
                      convert_version=version, pretty=p.get("pretty") == "1")


def accepted_list(stream: bool, allow_protobuf: bool = True) -> list[str]:
    return [t for t in _LISTED if (not stream or t in STREAM_TYPES)
            and (allow_protobuf or t not in PROTOBUF_TYPES)]


@functools.lru_cache(maxsize=512)
def _negotiate_cached(accept: str, stream: bool, allow_table: bool, allow_partial: bool,
                      allow_protobuf: bool) -> OutputType | None:
    for clause in _parse_accept(accept):
        for serializer in OUTPUT_TYPES:
            out = _accepts(clause, serializer, stream=stream, allow_table=allow_table,
                           allow_partial=allow_partial, allow_protobuf=allow_protobuf)
            if out is not None:
                return out
    return None


def negotiate_output(accept: str, *, stream: bool = False, allow_table: bool = True,
                     allow_partial: bool = True, allow_protobuf: bool = True) -> OutputType:
    """The first acceptable clause of ``accept``; 406 NotAcceptable when none is. Clients
    send few distinct headers, so results are cached by header."""
    if not accept.strip():
        return DEFAULT_OUTPUT
    out = _negotiate_cached(accept, stream, allow_table, allow_partial, allow_protobuf)
    if out is None:
        raise not_acceptable(stream, allow_protobuf)
    return out


def not_acceptable(stream: bool, allow_protobuf: bool = True) -> APIError:
    return APIError(406, "NotAcceptable", "only the following media types are accepted: "
                    + ", ".join(accepted_list(stream, allow_protobuf)))


def unsupported_media_type(accepted: tuple[str, ...] | list[str]) -> APIError:
    """Upstream ``NewUnsupportedMediaTypeError``."""
    return APIError(415, "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types "
                    "include: " + ", ".join(accepted))


def media_type_of(content_type: str) -> str:
    """``application/json; charset=utf-8`` -> ``application/json`` (lowercase)."""
    return content_type.split(";", 1)[0].strip().lower()


def negotiate_input(content_type: str, *, allow_protobuf: bool = False) -> str:
    """The body media type to decode with: JSON or YAML, and protobuf where the caller can
    decode it (415 for anything else)."""
    media = media_type_of(content_type)
    if not media:
        return JSON
    if media in INPUT_TYPES or (allow_protobuf and media in PROTOBUF_TYPES):
        return media
    raise unsupported_media_type(INPUT_TYPES)

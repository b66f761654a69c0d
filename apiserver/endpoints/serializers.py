"""Body decoding and response encoding: JSON (orjson), YAML and (encoding only, through
``apiserver.protobuf``) Protobuf.

Decoding reports duplicate keys (as dotted paths, ``spec.containers[0].name``) so that field
validation can warn about them or reject them; the last duplicate wins, as in Go's decoder.
YAML is converted to JSON values: timestamps stay strings (no implicit timestamp type, as
upstream's YAML-to-JSON conversion), mapping keys become strings, and values JSON cannot
carry (binary, NaN) are rejected.
"""

from __future__ import annotations

import collections.abc
import functools
import json
import math
import re
from collections.abc import Callable, Iterator
from typing import Any, Final

import orjson
import yaml
from isal import igzip

from apiserver import protobuf
from apiserver.api.decode import json_kind
from apiserver.api.gofmt import go_float
from apiserver.endpoints.negotiation import JSON, PROTOBUF_TYPES, YAML
from apiserver.status import bad_request
from storage import gojson

# Responses larger than this are gzip-compressed when the client accepts it (upstream
# defaultGzipThresholdBytes); level 1 as upstream (speed over ratio). The compressor is ISA-L's
# (the ``isal`` package): the same gzip format, about 8 times faster than zlib at level 1 and
# no larger (a list of 10,000 ConfigMaps, 7 MB of JSON: 6 ms instead of 48 ms).
GZIP_THRESHOLD: Final = 128 * 1024
GZIP_LEVEL: Final = 1

# orjson serializes at most 254 levels; deeper bodies are refused at the door so that every
# stored object can be written back out.
MAX_DEPTH: Final = 200
# A YAML document may expand (through aliases) to at most one value per body byte, or
# _MAX_NODES_FLOOR values for small bodies (upstream's YAML decoder refuses "excessive
# aliasing" likewise).
_MAX_NODES_FLOOR: Final = 100_000

# Go's message for a body whose top level is not an object.
_TYPE_META_STRUCT: Final = (
    'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
    'Kind string "json:\\"kind,omitempty\\"" }'
)


class DecodeError(Exception):
    """The body is not a document of the expected shape; ``str()`` is the detail."""


# ---- JSON ----------------------------------------------------------------------------------


def _decode_json(body: bytes, track_duplicates: bool) -> tuple[Any, list[str]]:
    """JSON as Go's decoder takes it: NaN and Infinity are not JSON, numbers beyond float64
    are refused, and in strings invalid UTF-8 and lone surrogate escapes become U+FFFD
    (upstream decodes with Go's encoding/json rules in every field validation mode).

    Without duplicate tracking orjson parses alone; it refuses the strings above (it does
    not replace), and those bodies, as every malformed one, take the slower path below,
    whose message describes the error."""
    if not track_duplicates:
        try:
            return orjson.loads(body), []
        except orjson.JSONDecodeError:
            pass
    dup_by_id: dict[int, tuple[dict[str, Any], list[str]]] = {}

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        d = dict(pairs)
        if len(d) != len(pairs):
            seen: set[str] = set()
            dups: list[str] = []
            for k, _ in pairs:
                if k in seen and k not in dups:
                    dups.append(k)
                seen.add(k)
            dup_by_id[id(d)] = (d, dups)
        return d

    try:
        # U+FFFD for invalid UTF-8: inside a string as Go does; outside one it stays a
        # syntax error.
        text = body.decode("utf-8", "replace")
        value = json.loads(text, object_pairs_hook=hook, parse_constant=_not_json,
                           parse_float=_finite_float, parse_int=_int64_or_float)
    except ValueError as e:
        # a syntax error in Go's scanner's words (Python's are "Expecting value: line 1
        # column 9 (char 8)"); other refusals (numbers Go cannot hold) keep their text
        raise DecodeError(gojson.syntax_error(body) or str(e)) from None
    except RecursionError:
        raise DecodeError("exceeded max depth") from None
    dups = (_duplicate_paths(value, {i: d for i, (_, d) in dup_by_id.items()})
            if track_duplicates and dup_by_id else [])
    if _SURROGATE_ESCAPE.search(body):
        value = _fix_surrogates(value)
    return value, dups


def _not_json(literal: str) -> Any:
    """``parse_constant``: Python's json reads NaN, Infinity and -Infinity; Go's does not
    (its scanner's words)."""
    if literal.startswith("-"):
        raise DecodeError(f"invalid character {literal[1]!r} in numeric literal")
    raise DecodeError(f"invalid character {literal[0]!r} looking for beginning of value")


_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


def _int64_or_float(literal: str) -> int | float:
    """``parse_int``: a whole number beyond int64 is a float64, as upstream's decoder of
    unstructured JSON makes it (an int this large could not be encoded again)."""
    value = int(literal)
    if _INT64_MIN <= value <= _INT64_MAX:
        return value
    return _finite_float(literal)


def _finite_float(literal: str) -> float:
    """``parse_float``: a number float64 cannot hold (``1e400``) is an error in Go, not
    infinity."""
    value = float(literal)
    if not math.isfinite(value):
        raise DecodeError(f"json: cannot unmarshal number {literal} into Go value of type "
                          "float64")
    return value


# \uD800-\uDFFF escapes: json.loads keeps a lone surrogate, which no encoder can write.
_SURROGATE_ESCAPE: Final = re.compile(rb"\\[uU][dD][89a-fA-F]")


def _fix_surrogates(value: Any) -> Any:
    """Lone surrogates become U+FFFD, as Go's decoder does (pairs were joined already)."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {_fix_surrogates(k): _fix_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fix_surrogates(v) for v in value]
    return value


def _duplicate_paths(root: Any, dups: dict[int, list[str]]) -> list[str]:
    out: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for k in dups.get(id(node), ()):
                out.append(f"{path}.{k}" if path else k)
            for k, v in node.items():
                if isinstance(v, dict | list):
                    walk(v, f"{path}.{k}" if path else k)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                if isinstance(v, dict | list):
                    walk(v, f"{path}[{i}]")

    walk(root, "")
    return out


# ---- YAML ----------------------------------------------------------------------------------

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[misc]
    """Safe loader without implicit timestamps that records duplicate mapping keys: for
    each mapping with duplicates, the dict it became and the duplicated keys (paths are
    computed once the document is built)."""

    yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.dups_by_id: dict[int, tuple[dict[Any, Any], list[str]]] = {}

    def construct_dup_aware_map(self, node: Any) -> Iterator[dict[Any, Any]]:
        data: dict[Any, Any] = {}
        yield data
        seen: set[Any] = set()
        dups: list[str] = []
        for key_node, _ in node.value:
            key = getattr(key_node, "value", None)
            if isinstance(key, str):
                if key in seen and key not in dups:
                    dups.append(key)
                seen.add(key)
        # SafeConstructor.construct_mapping, with each key as the JSON text it becomes
        # (sigs.k8s.io/yaml converts keys one by one): in a Python dict 1, 1.0 and true
        # are one key, where Go's YAML map keeps "1" and "true" apart
        self.flatten_mapping(node)
        for key_node, value_node in node.value:
            key = self.construct_object(key_node)
            if not isinstance(key, collections.abc.Hashable):
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark, "found unhashable key",
                    key_node.start_mark)
            data[_json_key(key)] = self.construct_object(value_node)
        if dups:
            self.dups_by_id[id(data)] = (data, dups)


_Loader.add_constructor("tag:yaml.org,2002:map", _Loader.construct_dup_aware_map)


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return go_float(key)  # strconv.FormatFloat(key, 'g', -1, ...): 1.0 is "1"
    raise DecodeError(f"error converting YAML to JSON: unsupported map key of type {type(key)}")


def _to_json_value(value: Any, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise DecodeError("error converting YAML to JSON: yaml: document contains excessive "
                          "aliasing")
    if isinstance(value, dict):
        return {_json_key(k): _to_json_value(v, budget) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_json_value(v, budget) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        raise DecodeError("error converting YAML to JSON: json: unsupported value: "
                          f"{value}")
    if type(value) is int and not _INT64_MIN <= value <= _INT64_MAX:
        try:
            return _finite_float(str(value))
        except DecodeError as e:
            raise DecodeError(f"error converting YAML to JSON: {e}") from None
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise DecodeError(f"error converting YAML to JSON: unsupported value of type "
                      f"{type(value).__name__}")


# libyaml's composer (the C loader) recurses once per level of nesting, and before libyaml
# 0.2.6 with no limit of its own: some tens of thousands of "[" overflowed the thread's stack
# and killed the process. Below this many possible levels the composer is safe and
# ``depth_exceeds`` judges the result. (The check stays for a build without the limit.)
_YAML_SAFE_NESTING: Final = 5000
_NESTING_STARTS: Final = (b"[", b"{", b"-", b"?", b":", b"\n")
# libyaml 0.2.6 (bundled with PyYAML 6.0.4) stops at 1,000 levels with a scanner error of
# this text; older builds have no limit. Either way the client reads upstream's message.
_LIBYAML_DEPTH_PROBLEM: Final = "exceeded maximum nesting depth"


def _is_nesting_limit(e: yaml.YAMLError) -> bool:
    return getattr(e, "problem", None) == _LIBYAML_DEPTH_PROBLEM


def _yaml_nests_too_deep(body: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether the document's collections nest deeper than ``limit``, read from the parser's
    events (iteratively, nothing composed). Skipped when the body has too few characters
    that can open a level (a flow bracket, a block indicator or a new line) to reach the
    composer's danger zone. A syntax error is left for the loader to report."""
    if sum(body.count(c) for c in _NESTING_STARTS) < _YAML_SAFE_NESTING:
        return False
    parser = _BaseLoader(body)
    depth = 0
    try:
        while (event := parser.get_event()) is not None:
            kind = type(event)
            if kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
                depth += 1
                if depth > limit:
                    return True
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                depth -= 1
            elif kind is yaml.StreamEndEvent:
                break
    except yaml.YAMLError as e:
        return _is_nesting_limit(e)
    finally:
        parser.dispose()
    return False


def _decode_yaml(body: bytes) -> tuple[Any, list[str]]:
    if _yaml_nests_too_deep(body):
        raise DecodeError("error converting YAML to JSON: exceeded max depth")
    loader = _Loader(body)
    try:
        value = loader.get_single_data()
        converted = _to_json_value(value, [max(_MAX_NODES_FLOOR, len(body))])
        dups = (_duplicate_paths(value, {i: d for i, (_, d) in loader.dups_by_id.items()})
                if loader.dups_by_id else [])
        if _SURROGATE_ESCAPE.search(body):
            converted = _fix_surrogates(converted)
    except yaml.YAMLError as e:
        if _is_nesting_limit(e):
            raise DecodeError("error converting YAML to JSON: exceeded max depth") from None
        raise DecodeError(f"error converting YAML to JSON: yaml: {e}") from None
    except ValueError as e:  # an int of over 4,300 digits
        raise DecodeError(f"error converting YAML to JSON: yaml: {e}") from None
    except RecursionError:
        raise DecodeError("error converting YAML to JSON: exceeded max depth") from None
    finally:
        loader.dispose()
    return converted, dups


def depth_exceeds(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests objects/arrays deeper than ``limit`` (iterative)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values() if isinstance(v, dict | list))
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node if isinstance(v, dict | list))
    return False


def decode(body: bytes, media_type: str, *, track_duplicates: bool = True
           ) -> tuple[Any, list[str]]:
    """Parse ``body`` (JSON or YAML) into JSON values; returns (value, duplicate paths)."""
    if media_type == YAML:
        value, dups = _decode_yaml(body)
    else:
        value, dups = _decode_json(body, track_duplicates)
    if depth_exceeds(value):
        raise DecodeError("exceeded max depth")
    return value, dups


def decode_object(body: bytes, media_type: str, *, track_duplicates: bool = True
                  ) -> tuple[dict[str, Any], list[str]]:
    """Decode a document that must be an object with string apiVersion/kind (or without
    them). Raises DecodeError with upstream's "couldn't get version/kind" wording."""
    try:
        value, dups = decode(body, media_type, track_duplicates=track_duplicates)
    except DecodeError as e:
        raise DecodeError(f"couldn't get version/kind; json parse error: {e}") from None
    if not isinstance(value, dict):
        raise DecodeError("couldn't get version/kind; json parse error: json: cannot unmarshal "
                          f"{json_kind(value)} into Go value of type {_TYPE_META_STRUCT}")
    for key in ("apiVersion", "kind"):
        v = value.get(key)
        if v is not None and not isinstance(v, str):
            raise DecodeError("couldn't get version/kind; json parse error: json: cannot "
                              f"unmarshal {json_kind(v)} into Go struct field .{key} of type "
                              "string")
    return value, dups


def summarize(body: bytes, max_length: int = 30) -> str:
    """Upstream summarizeData: the start of the body for error messages."""
    if not body:
        return "<empty>"
    if body[:1] == b"{":
        text = body[:max_length].decode("utf-8", "replace")
        return text + " ..." if len(body) > max_length else text
    hexed = body[:max_length].hex()
    return hexed + " ..." if len(body) > max_length else hexed


def decode_patch_json(body: bytes) -> Any:
    try:
        value, _ = _decode_json(body, track_duplicates=False)
    except DecodeError as e:
        raise bad_request(f"error decoding patch: {e}") from None
    if depth_exceeds(value):
        raise bad_request("error decoding patch: exceeded max depth")
    return value


# ---- encoding ------------------------------------------------------------------------------

_BaseDumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _encode_yaml(obj: Any) -> bytes:
    text: str = yaml.dump(obj, Dumper=_BaseDumper, sort_keys=True, default_flow_style=False,
                          allow_unicode=True)
    return text.encode("utf-8")


def _encode_protobuf(obj: Any) -> bytes:
    return protobuf.encode(obj)


@functools.lru_cache(maxsize=8)
def encoder_for(media_type: str, pretty: bool) -> Callable[[Any], bytes]:
    if media_type == YAML:
        return _encode_yaml
    if media_type in PROTOBUF_TYPES:
        return _encode_protobuf
    opts = orjson.OPT_APPEND_NEWLINE | (orjson.OPT_INDENT_2 if pretty else 0)
    return lambda obj: orjson.dumps(obj, option=opts)


def encode(obj: Any, media_type: str, pretty: bool = False) -> bytes:
    return encoder_for(media_type, pretty)(obj)


def encode_list(head: dict[str, Any], items: list[bytes]) -> bytes:
    """What ``encode(head | {"items": [...]}, JSON)`` makes of a list whose items are already
    encoded (each as ``encode_item`` does): the same bytes, joined instead of re-encoded.
    ``head`` must not hold ``items``."""
    start = orjson.dumps(head)[:-1] + b',"items":['
    end = b"]}\n"
    if not items:
        return start + end
    # one copy of the items: the head and tail ride on the first and last
    parts = items.copy()
    parts[0] = start + parts[0]
    parts[-1] = parts[-1] + end
    return b",".join(parts)


def encode_item(obj: Any) -> bytes:
    """One object as it appears inside a compact JSON document (no newline)."""
    return orjson.dumps(obj)


def encode_protobuf_item(obj: Any) -> bytes:
    """One object (with apiVersion and kind) as it appears among the items of a Protobuf
    list: field 2 of the list message, holding the object's typed message."""
    msg = protobuf.encode_message(protobuf.type_name_for(obj["apiVersion"], obj["kind"]), obj)
    return _len_field(b"\x12", msg)


def encode_protobuf_list(head: dict[str, Any], items: list[bytes]) -> bytes:
    """What ``encode(head | {"items": [...]}, PROTOBUF)`` makes of a list whose items are
    already encoded (each as ``encode_protobuf_item`` does): the same bytes. Every list
    message holds its metadata as field 1 and its items as field 2, written in that order,
    so the message is the head's encoding followed by the items."""
    api_version, kind = str(head["apiVersion"]), str(head["kind"])
    raw = b"".join((protobuf.encode_message(protobuf.type_name_for(api_version, kind), head),
                    *items))
    type_meta = _len_field(b"\x0a", api_version.encode()) + _len_field(b"\x12", kind.encode())
    # the envelope: magic, runtime.Unknown{typeMeta, raw, contentEncoding "", contentType ""}
    return b"".join((protobuf.MAGIC, _len_field(b"\x0a", type_meta),
                     b"\x12", _varint(len(raw)), raw, b"\x1a\x00\x22\x00"))


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _len_field(tag: bytes, payload: bytes) -> bytes:
    return tag + _varint(len(payload)) + payload


def encode_watch_event(event_type: str, obj: Any, media_type: str = JSON) -> bytes:
    """One watch frame: a JSON document and a newline (upstream JSON stream framing), or a
    length-prefixed protobuf WatchEvent."""
    if media_type in PROTOBUF_TYPES:
        return protobuf.encode_watch_event(event_type, obj)
    return orjson.dumps({"type": event_type, "object": obj}, option=orjson.OPT_APPEND_NEWLINE)


def wants_gzip(accept_encoding: str) -> bool:
    """Upstream negotiateContentEncoding: any comma-separated token equal to ``gzip``."""
    return any(tok.strip() == "gzip" for tok in accept_encoding.split(","))


def compress(data: bytes) -> bytes:
    return igzip.compress(data, compresslevel=GZIP_LEVEL)

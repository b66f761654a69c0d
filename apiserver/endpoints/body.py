"""Request bodies: size limit, Content-Type, decoding, apiVersion/kind and field validation
(upstream ``limitedReadBody``, ``NegotiateInputSerializer``, the create/update decoders and
``transformDecodeError``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import orjson
import yaml

from apiserver import protobuf
from apiserver.api import decode
from apiserver.endpoints import fieldvalidation, serializers
from apiserver.endpoints.negotiation import (
    INPUT_TYPES,
    YAML,
    negotiate_input,
    unsupported_media_type,
)
from apiserver.status import APIError, bad_request, invalid, too_large

if TYPE_CHECKING:
    from aiohttp import web

    from apiserver.endpoints.response import Scope

MAX_REQUEST_BODY_BYTES: Final = 3 * 1024 * 1024
_YAML_LOADER: Final[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


async def read_body(request: web.Request, limit: int = MAX_REQUEST_BODY_BYTES) -> bytes:
    """The whole body, or 413 once it exceeds ``limit`` bytes (checked on Content-Length
    first, then while reading, so a lying or absent length cannot get past it)."""
    if request.content_length is not None and request.content_length > limit:
        raise too_large(f"limit is {limit}")
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = await request.content.read(65536)
        if not chunk:
            break
        size += len(chunk)
        if size > limit:
            raise too_large(f"limit is {limit}")
        chunks.append(chunk)
    return b"".join(chunks)


def _version_of(api_version: str) -> str:
    return api_version.rsplit("/", 1)[-1]


def decode_error(scope: Scope, detail: str, body: bytes, data_kind: str = "",
                 data_version: str = "") -> APIError:
    """Upstream transformDecodeError."""
    if data_kind:
        return bad_request(f'{data_kind} in version "{data_version}" cannot be handled as a '
                           f"{scope.kind}: {detail}")
    return bad_request(f"the object provided is unrecognized (must be of type {scope.kind}): "
                       f"{detail} ({serializers.summarize(body)})")


def check_type_meta(scope: Scope, obj: dict[str, Any]) -> None:
    """apiVersion and kind, when present, must name this endpoint's kind; absent ones are
    defaulted from the endpoint (upstream decodes with the endpoint's kind as default)."""
    want_av, want_kind = scope.api_version, scope.kind
    av = obj.get("apiVersion") or ""
    kind = obj.get("kind") or ""
    if av and av != want_av:
        raise bad_request(f"the API version in the data ({av}) does not match the expected "
                          f"API version ({want_av})")
    if kind and kind != want_kind:
        raise bad_request(
            f'{kind} in version "{_version_of(av or want_av)}" cannot be handled as a '
            f"{want_kind}: converting (v1.{kind}) to ({_version_of(want_av)}.{want_kind}): "
            "unknown conversion")
    obj["apiVersion"] = want_av
    obj["kind"] = want_kind


def _refusal(scope: Scope, obj: dict[str, Any], detail: str, decode_prefix: bool) -> APIError:
    """A body the decoder refuses (a wrong type, or strict problems): the 400 naming the kind
    for a create or update; for a patch, upstream's 422 on the field ``patch`` whose value is
    the patched object as JSON (keys sorted, as Go writes the merged map)."""
    if decode_prefix:
        av = obj.get("apiVersion") or scope.api_version
        return bad_request(f'{scope.kind} in version "{_version_of(av)}" cannot be handled as '
                           f"a {scope.kind}: {detail}")
    patched = orjson.dumps(obj, option=orjson.OPT_SORT_KEYS).decode()
    cause = {"reason": "FieldValueInvalid", "field": "patch",
             "message": f"Invalid value: {decode.go_quote(patched)}: {detail}"}
    return invalid("", "", "", [cause])


def yaml_duplicates_error(body: bytes) -> str:
    """The error of upstream's strict YAML reader (go-yaml v2) for a body with repeated keys:
    ``yaml: unmarshal errors:`` then one ``line N: key "k" already set in map`` per repeat,
    N the line of the repeated key's value, in document order."""
    lines: list[str] = []
    try:
        root = yaml.compose(body.decode("utf-8"), Loader=_YAML_LOADER)
    except (UnicodeDecodeError, yaml.YAMLError):
        return "yaml: unmarshal errors:"
    stack = [root] if root is not None else []
    found: list[tuple[int, int, str]] = []
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for k, v in node.value:
                key = str(k.value)
                if key in seen:
                    found.append((v.start_mark.line, v.start_mark.column, key))
                seen.add(key)
                stack.append(v)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    for line, _, key in sorted(found):
        lines.append(f"line {line + 1}: key {decode.go_quote(key)} already set in map")
    return "yaml: unmarshal errors:\n  " + "\n  ".join(lines)


def apply_field_validation(scope: Scope, obj: dict[str, Any],
                           duplicates: list[str] | decode.Anchors, directive: str, *,
                           decode_prefix: bool = True, leading: str = "") -> None:
    """Decode ``obj`` against its kind's schema: a wrong JSON type is an error whatever the
    directive (it comes first, as upstream's decoder fails before strict checks); unknown
    fields are dropped; under Strict every unknown and duplicate field is listed in one
    error, under Warn each is one warning on the scope. ``decode_prefix`` is False for
    patches (their errors are 422s on the patched object, see ``_refusal``). ``leading`` is
    a strict problem met before the object's own (the YAML reader's)."""
    decoder = decode.decoder_for_api_version(scope.api_version, scope.kind)
    if decoder is None:
        unknown = fieldvalidation.drop_unknown_fields(obj, scope.kind, scope.api_version)
        if not isinstance(duplicates, list):
            duplicates = [f"{p}.{k}" if p else str(k) for p, at in duplicates.items()
                          for keys in at.values() for k in keys]
        problems = fieldvalidation.field_problems(unknown, duplicates)
        if leading:
            problems.insert(0, leading)
        if not problems or directive == fieldvalidation.IGNORE:
            return
        if directive == fieldvalidation.STRICT:
            raise _refusal(scope, obj, fieldvalidation.strict_message(problems), decode_prefix)
        scope.warnings.extend(problems)
        return
    # The first walk leaves the object as it came, so that an error can show it whole; the
    # unknown fields are removed by a second walk only when there are some.
    try:
        outcome = decoder.check(obj, prune=False, duplicates=duplicates)
    except decode.DecodeError as e:
        raise _refusal(scope, obj, str(e), decode_prefix) from None
    if outcome.error is not None:
        raise _refusal(scope, obj, outcome.error, decode_prefix)
    problems = outcome.problems
    if leading:
        problems.insert(0, leading)
    if problems and directive == fieldvalidation.STRICT:
        raise _refusal(scope, obj, fieldvalidation.strict_message(problems), decode_prefix)
    if outcome.unknown:
        decoder.check(obj)
    decode.mark_checked(obj)
    if problems and directive != fieldvalidation.IGNORE:
        scope.warnings.extend(problems)


async def decode_request_object(scope: Scope, directive: str) -> dict[str, Any]:
    """Read, decode and check the body of a create or update."""
    request = scope.request
    body = await read_body(request)
    media = negotiate_input(request.headers.get("Content-Type", ""), allow_protobuf=True)
    track = directive != fieldvalidation.IGNORE
    dups: list[str] = []
    try:
        if media in protobuf.MEDIA_TYPES:
            obj = protobuf.decode(body, api_version=scope.api_version, kind=scope.kind)
        else:
            obj, dups = serializers.decode_object(body, media, track_duplicates=track)
    except serializers.DecodeError as e:
        raise decode_error(scope, str(e), body) from None
    except protobuf.UnknownKind:
        raise unsupported_media_type(INPUT_TYPES) from None
    except protobuf.ProtobufError as e:
        raise decode_error(scope, str(e), body) from None
    check_type_meta(scope, obj)
    meta = obj.get("metadata")
    if meta is None:
        obj["metadata"] = {}
    elif not isinstance(meta, dict):
        raise decode_error(scope, f"json: cannot unmarshal {decode.json_kind(meta)} into Go "
                                  f"struct field {scope.kind}.metadata of type v1.ObjectMeta", body,
                           scope.kind, _version_of(scope.api_version))
    if dups and media == YAML:
        # upstream first runs a YAML body through its strict YAML reader, whose one error
        # lists every repeated key by line; the JSON it decodes then has no repeats
        apply_field_validation(scope, obj, [], directive, leading=yaml_duplicates_error(body))
        return obj
    where: list[str] | decode.Anchors = dups
    if dups and media not in protobuf.MEDIA_TYPES and body.lstrip()[:1] == b"{":
        # where the repeats sit among the other keys (to report them in document order)
        # needs the text again; only bodies with repeated keys pay for it
        try:
            where = decode.anchors_from_json(body)
        except (ValueError, RecursionError):
            where = dups
    apply_field_validation(scope, obj, where, directive)
    return obj

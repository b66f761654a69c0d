"""Writing responses (upstream ``handlers/response.go`` and ``responsewriters``).

Every handler works on a ``Scope``: the request, its RequestInfo, the store, the negotiated
output type and the warnings gathered so far. Objects are transformed for the negotiated
output (Table, PartialObjectMetadata) except ``Status`` objects, which pass unchanged; large
bodies are gzip-compressed when the client accepts it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from aiohttp import web
from multidict import CIMultiDict

from apiserver.endpoints import serializers
from apiserver.endpoints.fieldvalidation import warning_header
from apiserver.endpoints.negotiation import (
    JSON,
    PARTIAL,
    PARTIAL_LIST,
    TABLE,
    OutputType,
)
from apiserver.endpoints.params import table_params
from apiserver.status import APIError

if TYPE_CHECKING:
    from apiserver.registry.interface import Context, Object, RESTStore
    from apiserver.request import RequestInfo

_BROWSER_AGENTS: Final = ("curl", "Wget", "Mozilla/5.0")


def is_pretty(request: web.Request, output: OutputType) -> bool:
    """Upstream isPrettyPrint: ``pretty`` query (ParseBool), else curl/wget/browsers, or
    ``pretty=1`` on the Accept clause."""
    if output.pretty:
        return True
    pretty = request.query.get("pretty")
    if pretty:
        return pretty.lower() in ("1", "t", "true")
    ua = request.headers.get("User-Agent", "")
    return ua.startswith(_BROWSER_AGENTS)


class Scope:
    """Per-request state shared by the verb handlers."""

    __slots__ = ("ctx", "gates", "info", "output", "request", "store", "warnings")

    def __init__(self, *, request: web.Request, info: RequestInfo, store: RESTStore,
                 ctx: Context, output: OutputType,
                 gates: Mapping[str, bool] | None = None) -> None:
        self.request = request
        self.gates: Mapping[str, bool] = gates or {}
        self.info = info
        self.store = store
        self.ctx = ctx
        self.output = output
        self.warnings: list[str] = []

    @property
    def resource(self) -> str:
        return self.store.info.resource

    @property
    def group(self) -> str:
        return self.store.info.group

    @property
    def kind(self) -> str:
        ri = self.store.info
        return ri.sub_kind or ri.kind

    @property
    def api_version(self) -> str:
        ri = self.store.info
        if ri.sub_kind:
            g, v = ri.sub_kind_group, ri.sub_kind_version
            return f"{g}/{v}" if g else v
        return ri.group_version


# ---- transformations --------------------------------------------------------------------------


def _partial(obj: Object, api_version: str) -> Object:
    return {"kind": PARTIAL, "apiVersion": api_version, "metadata": obj.get("metadata", {})}


def _row(scope: Scope, obj: Object, include: str, api_version: str) -> Object:
    row: Object = {"cells": scope.store.table_cells(obj)}
    if include == "Object":
        row["object"] = obj
    elif include == "Metadata":
        row["object"] = _partial(obj, api_version)
    else:
        row["object"] = None
    return row


def table_of(scope: Scope, obj: Object, *, headers: bool = True) -> Object:
    """A meta Table for one object or for a ``<Kind>List`` (upstream default convertor +
    transformObject's includeObject policy)."""
    out = scope.output
    include = table_params(scope.request.query).include_object
    api_version = out.convert_api_version
    columns: list[Object] | None = None
    if headers:
        columns = [
            {"name": c.name, "type": c.type, "format": c.format, "description": c.description,
             "priority": c.priority}
            for c in scope.store.table_columns()
        ]
    meta: Object = {}
    if "items" in obj and isinstance(obj.get("items"), list):
        lm = obj.get("metadata") or {}
        for key in ("resourceVersion", "continue", "remainingItemCount"):
            if lm.get(key) not in (None, ""):
                meta[key] = lm[key]
        rows = [_row(scope, item, include, api_version) for item in obj["items"]]
    else:
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if rv:
            meta["resourceVersion"] = rv
        rows = [_row(scope, obj, include, api_version)]
    return {"kind": TABLE, "apiVersion": api_version, "metadata": meta,
            "columnDefinitions": columns, "rows": rows}


def transform(scope: Scope, obj: Object, *, headers: bool = True) -> Object:
    """``obj`` in the negotiated form. Status objects are never transformed."""
    convert = scope.output.convert
    if not convert or obj.get("kind") == "Status":
        return obj
    if convert == TABLE:
        return table_of(scope, obj, headers=headers)
    api_version = scope.output.convert_api_version
    is_list = isinstance(obj.get("items"), list)
    if convert == PARTIAL_LIST and is_list:
        return {"kind": PARTIAL_LIST, "apiVersion": api_version,
                "metadata": obj.get("metadata", {}),
                "items": [_partial(item, api_version) for item in obj["items"]]}
    if convert == PARTIAL and not is_list:
        return _partial(obj, api_version)
    if convert == PARTIAL and scope.info.verb == "watch":
        return _partial(obj, api_version)
    raise _conversion_not_acceptable(convert, is_list)


def _conversion_not_acceptable(convert: str, is_list: bool) -> APIError:
    if is_list:
        msg = f"you requested {convert}, but the requested object is a list"
    else:
        msg = f"you requested {convert}, but the requested object is not a list"
    return APIError(406, "NotAcceptable", msg)


def transform_watch_object(scope: Scope, obj: Object, *, first: bool) -> Object:
    """Event objects of a watch: PartialObjectMetadata(List) requests get
    PartialObjectMetadata; Table requests get a one-row Table, with column definitions
    only in the first (upstream: only the first table includes headers)."""
    convert = scope.output.convert
    if not convert or obj.get("kind") == "Status":
        return obj
    if convert == TABLE:
        return table_of(scope, obj, headers=first)
    return _partial(obj, scope.output.convert_api_version)


# ---- writing ----------------------------------------------------------------------------------


def _headers(content_type: str, warnings: list[str]) -> CIMultiDict[str]:
    headers: CIMultiDict[str] = CIMultiDict()
    headers["Content-Type"] = content_type
    for w in warnings:
        headers.add("Warning", warning_header(w))
    return headers


def encode_response(request: web.Request, status: int, body_obj: Any, output: OutputType,
                    warnings: list[str], extra_headers: dict[str, str] | None = None
                    ) -> web.Response:
    data = serializers.encode(body_obj, output.media_type, is_pretty(request, output))
    return encoded_response(request, status, data, output, warnings, extra_headers)


def encoded_response(request: web.Request, status: int, data: bytes, output: OutputType,
                     warnings: list[str], extra_headers: dict[str, str] | None = None
                     ) -> web.Response:
    """A response whose body is already encoded for ``output``."""
    headers = _headers(output.media_type, warnings)
    if extra_headers:
        headers.update(extra_headers)
    if (len(data) > serializers.GZIP_THRESHOLD
            and serializers.wants_gzip(request.headers.get("Accept-Encoding", ""))):
        data = serializers.compress(data)
        headers["Content-Encoding"] = "gzip"
        headers.add("Vary", "Accept-Encoding")
    return web.Response(status=status, body=data, headers=headers)


def write_object(scope: Scope, status: int, obj: Object) -> web.Response:
    return encode_response(scope.request, status, transform(scope, obj), scope.output,
                           scope.warnings)


def write_error(request: web.Request, err: APIError, *, output: OutputType | None = None,
                warnings: list[str] | None = None) -> web.Response:
    """A Status body for ``err`` in JSON or YAML (never a Table)."""
    media = output.media_type if output is not None else JSON
    plain = OutputType(media_type=media, pretty=output.pretty if output else False)
    return encode_response(request, err.code, err.body(), plain, warnings or [],
                           err.headers)


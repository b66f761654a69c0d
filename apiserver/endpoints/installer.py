"""Routing of resource requests to the verb handlers (upstream ``endpoints/installer.go`` and
the go-restful container it fills).

Upstream registers, per resource, a collection path (GET list/watch, POST create, DELETE
deletecollection) and an item path (GET, PUT, PATCH, DELETE), namespaced resources only
under ``/namespaces/{namespace}/`` except for list/watch across namespaces. A request whose
path matches no registered route is a 404; one whose path matches but whose method does not
is a 405. We compute the same answer from the RequestInfo and the store's ``info``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Final

from aiohttp import web

from apiserver import protobuf
from apiserver.endpoints import (
    create,
    delete,
    deletecollection,
    get,
    patch,
    update,
    watch,
)
from apiserver.endpoints import list as list_
from apiserver.endpoints.negotiation import (
    DEFAULT_OUTPUT,
    OutputType,
    negotiate_output,
)
from apiserver.endpoints.response import Scope, write_error
from apiserver.metrics import REQUESTED_DEPRECATED_APIS
from apiserver.registry.interface import Context
from apiserver.request import request_info, user_of
from apiserver.status import APIError, GenericServerError

if TYPE_CHECKING:
    from apiserver.registry.interface import RESTStore
    from apiserver.request import RequestInfo

Handler = Callable[[Scope], Awaitable[web.StreamResponse]]
StoreKey = tuple[str, str, str]

HANDLERS: Final[dict[str, Handler]] = {
    "get": get.handle,
    "list": list_.handle,
    "watch": watch.handle,
    "create": create.handle,
    "update": update.handle,
    "patch": patch.handle,
    "delete": delete.handle,
    "deletecollection": deletecollection.handle,
}
ITEM_VERBS: Final = frozenset({"get", "update", "patch", "delete"})
COLLECTION_VERBS: Final = frozenset({"list", "watch", "create", "deletecollection"})
SUBRESOURCE_VERBS: Final = ITEM_VERBS | {"create"}
# Verbs served on a namespaced resource's path without a namespace.
ALL_NAMESPACES_VERBS: Final = frozenset({"list", "watch"})


# Deprecated APIs v1.33 serves (upstream's deprecation.WarningMessage and the
# apiserver_requested_deprecated_apis gauge, SPEC 6.3): (group, version, resource) ->
# (warning, removed release)
DEPRECATED: Final = {
    ("", "v1", "endpoints"): (
        "v1 Endpoints is deprecated in v1.33+; use discovery.plat.io/v1 EndpointSlice", ""),
    ("", "v1", "componentstatuses"): ("v1 ComponentStatus is deprecated in v1.19+", ""),
}


def not_found() -> APIError:
    """Upstream's NotFound for unregistered paths (NewGenericServerResponse(404))."""
    return GenericServerError(404, "NotFound", "the server could not find the requested resource")


def method_not_allowed() -> APIError:
    """Upstream's answer for a registered path with an unregistered method."""
    return GenericServerError(405, "MethodNotAllowed",
                              "the server does not allow this method on the requested resource")


def _under_a_namespace(info: RequestInfo) -> bool:
    """Whether a namespaces request came as a resource inside a namespace
    (``/api/v1/namespaces/a/namespaces[/b]``), a path upstream does not serve. Its request
    info reads the namespace from the path, as for ``/api/v1/namespaces/a`` itself, where
    only ``status`` and ``finalize`` may follow."""
    segments = info.path.strip("/").split("/")  # api, v1, namespaces, a, ...
    if len(segments) > 2 and segments[2] == "watch":
        del segments[2]  # the deprecated /api/v1/watch/namespaces/... form
    return len(segments) > 4 and segments[4] not in ("status", "finalize")


def _route(info: RequestInfo, store: RESTStore) -> Handler:
    """The handler for ``info`` on ``store``, or the 404/405 upstream's routes give."""
    ri = store.info
    verb = info.verb
    on_item = bool(info.name)
    path_verbs = ITEM_VERBS if on_item else COLLECTION_VERBS
    if info.subresource:
        path_verbs = SUBRESOURCE_VERBS  # POST .../pods/x/eviction, .../serviceaccounts/x/token
    if ri.namespaced and not info.namespace:
        # Only list/watch across namespaces exist without a namespace segment.
        if on_item:
            raise not_found()
        path_verbs = ALL_NAMESPACES_VERBS
    elif not ri.namespaced and info.namespace and (
            ri.resource != "namespaces" or _under_a_namespace(info)):
        raise not_found()
    served = {v for v in ri.verbs if v in path_verbs}
    if on_item and "watch" in ri.verbs and "get" in served:
        served.add("watch")  # GET .../name?watch=1
    if not served:
        raise not_found()
    if verb not in served or verb not in HANDLERS:
        raise method_not_allowed()
    return HANDLERS[verb]


def _output_for(request: web.Request, verb: str, protobuf_ok: bool) -> OutputType:
    return negotiate_output(request.headers.get("Accept", ""), stream=verb == "watch",
                            allow_protobuf=protobuf_ok)


class ResourceHandler:
    """The aiohttp handler for every resource path."""

    def __init__(self, stores: Mapping[StoreKey, RESTStore],
                 gates: Mapping[str, bool] | None = None) -> None:
        self._stores = dict(stores)
        self._gates = dict(gates or {})
        self._protobuf_ok: dict[StoreKey, bool] = {}

    def protobuf_ok(self, key: StoreKey, store: RESTStore) -> bool:
        """Whether the codec has messages for the store's kind and its list kind (not so
        for custom resources: upstream serves them in JSON and YAML only)."""
        ok = self._protobuf_ok.get(key)
        if ok is None:
            ri = store.info
            av = (f"{ri.sub_kind_group}/{ri.sub_kind_version}".lstrip("/") if ri.sub_kind
                  else ri.group_version)
            try:
                protobuf.type_name_for(av, ri.sub_kind or ri.kind)
                if not ri.sub_kind:
                    protobuf.type_name_for(av, store.new_list_kind())
                ok = True
            except protobuf.UnknownKind:
                ok = False
            self._protobuf_ok[key] = ok
        return ok

    @staticmethod
    def key_of(info: RequestInfo) -> StoreKey:
        path = f"{info.resource}/{info.subresource}" if info.subresource else info.resource
        return (info.api_group, info.api_version, path)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        output: OutputType | None = None
        scope: Scope | None = None
        pb_ok = True
        try:
            info = request_info(request)
            key = self.key_of(info)
            store = self._stores.get(key) if info.is_resource_request else None
            if store is None or not info.resource:
                raise not_found()
            handler = _route(info, store)
            if info.verb == "watch" and request.method not in ("GET", "HEAD"):
                raise method_not_allowed()  # POST .../watch/configmaps
            pb_ok = self.protobuf_ok(key, store)
            output = _output_for(request, info.verb, pb_ok)
            ctx = Context(namespace=info.namespace if store.info.namespaced else "",
                          user=user_of(request), info=info)
            scope = Scope(request=request, info=info, store=store, ctx=ctx, output=output,
                          gates=self._gates)
            if getattr(store, "connect", False):
                # exec, attach, portforward, proxy: kubectl's fallback POST has an empty
                # body, which was decoded (a JSON error) before the real answer
                await store.refuse(ctx, info.name)  # type: ignore[attr-defined]
            deprecated = DEPRECATED.get((info.api_group, info.api_version, info.resource))
            if deprecated is not None:
                scope.warnings.append(deprecated[0])
                REQUESTED_DEPRECATED_APIS.labels(info.api_group, info.api_version,
                                                 info.resource, info.subresource,
                                                 deprecated[1]).set(1)
            return await handler(scope)
        except APIError as err:
            return write_error(request, err, output=_error_output(request, output, pb_ok),
                               warnings=scope.warnings if scope is not None else None)


def error_output(request: web.Request) -> OutputType:
    """The output of an error raised before a resource was known (the filters)."""
    return _error_output(request, None, True)


def _error_output(request: web.Request, output: OutputType | None, protobuf_ok: bool
                  ) -> OutputType:
    """Errors are Status objects in the negotiated serializer (never a Table); JSON when
    negotiation itself failed."""
    if output is not None:
        return OutputType(media_type=output.media_type, pretty=output.pretty)
    try:
        out = negotiate_output(request.headers.get("Accept", ""), allow_protobuf=protobuf_ok)
    except APIError:
        return DEFAULT_OUTPUT
    return OutputType(media_type=out.media_type, pretty=out.pretty)


def install(app: web.Application, stores: Mapping[StoreKey, RESTStore], *,
            gates: Mapping[str, bool] | None = None) -> ResourceHandler:
    """Route ``/api/v1/...`` and ``/apis/{group}/{version}/...`` (all methods) to the stores,
    keyed by (group, version, "resource" or "resource/subresource"). ``gates``: feature gates
    the handlers consult (AllowUnsafeMalformedObjectDeletion; default off as in v1.33)."""
    handler = ResourceHandler(stores, gates)
    app.router.add_route("*", "/api/v1/{tail:.+}", handler.handle)
    app.router.add_route("*", "/apis/{group}/{version}/{tail:.+}", handler.handle)
    return handler


@web.middleware
async def error_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
) -> web.StreamResponse:
    """For apps that mount the handlers without the server's filter chain (tests): render
    APIError as a Status and any other exception as a 500 Status without internals."""
    from apiserver.status import internal

    try:
        return await handler(request)
    except APIError as err:
        return write_error(request, err)
    except web.HTTPException:
        raise
    except Exception:  # noqa: BLE001 - the last line of defence
        return write_error(request, internal("an error on the server prevented the request "
                                             "from succeeding"))

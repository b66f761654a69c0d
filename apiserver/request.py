"""What the pipeline learns about a request, shared by filters and handlers.

``RequestInfo`` is computed once, by the request-info filter, from the path and query alone
(upstream ``RequestInfoFactory``): it does not know which resources exist, so it never fails.
``UserInfo`` is set by authentication. Both are stored on the aiohttp request under the keys
below (``request[REQUEST_INFO]``, ``request[USER]``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from aiohttp import web

API_PREFIXES: Final = ("api", "apis")
# Verbs of SPEC 5.7 for resource requests.
READ_VERBS: Final = frozenset({"get", "list", "watch"})
LONG_RUNNING_VERBS: Final = frozenset({"watch", "proxy"})
NAMESPACE_SUBRESOURCES: Final = frozenset({"status", "finalize"})


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestInfo:
    is_resource_request: bool
    path: str
    verb: str  # API verb for resource requests, lowercase HTTP method otherwise
    api_prefix: str = ""  # "api" or "apis"
    api_group: str = ""  # "" is the core group
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    parts: tuple[str, ...] = field(default_factory=tuple)

    @property
    def is_long_running(self) -> bool:
        return self.verb in LONG_RUNNING_VERBS

    @property
    def is_mutating(self) -> bool:
        return self.verb not in READ_VERBS and self.verb not in ("head", "options")


@dataclass(frozen=True, slots=True, kw_only=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, list[str]] = field(default_factory=dict)


ANONYMOUS: Final = UserInfo(name="system:anonymous", groups=("system:unauthenticated",))

REQUEST_INFO: Final = web.RequestKey("request_info", RequestInfo)
USER: Final = web.RequestKey("user", UserInfo)
# The request's audit ID (upstream ``WithAuditInit``): the client's ``Audit-ID`` header as
# sent, or a new random UUID. Echoed in the ``Audit-Id`` response header and the request log.
AUDIT_ID: Final = web.RequestKey("audit_id", str)


def _truthy(value: str | None) -> bool:
    """A present ``watch`` parameter, as upstream decodes it: anything but "0" and "false"
    (any case) is true, the empty value (``?watch``) included."""
    return value is not None and value.lower() not in ("0", "false")


def parse_request_info(method: str, path: str, query: dict[str, str]) -> RequestInfo:
    """Upstream's RequestInfoFactory.NewRequestInfo, for our two prefixes.

    /api/v1/namespaces/ns/configmaps/x/status  -> ns, configmaps, x, status
    /apis/apps/v1/statefulsets                 -> list across namespaces
    /api/v1/namespaces/ns                      -> the namespace object itself (name=ns)
    /api/v1/namespaces/ns/status               -> namespaces/status on object ns
    Anything else (/healthz, /version, /api, /apis/apps) is a non-resource request whose verb
    is the lowercase HTTP method.
    """
    method_l = method.lower()
    non_resource = RequestInfo(is_resource_request=False, path=path, verb=method_l)
    parts = tuple(p for p in path.strip("/").split("/") if p != "")
    if len(parts) < 3 or parts[0] not in API_PREFIXES:
        return non_resource
    prefix, rest = parts[0], list(parts[1:])
    group = ""
    if prefix == "apis":
        if len(rest) < 3:
            return non_resource
        group = rest.pop(0)
    version = rest.pop(0)
    if not rest:
        return non_resource

    verb = {
        "post": "create", "get": "get", "head": "get", "put": "update",
        "patch": "patch", "delete": "delete",
    }.get(method_l, method_l)
    special_watch = False
    if rest[0] == "watch":
        # the deprecated /watch/ paths (upstream's special verb): .../watch/configmaps,
        # .../watch/namespaces/ns/configmaps[/name]
        if len(rest) < 2:
            return non_resource
        verb, special_watch = "watch", True
        rest = rest[1:]

    namespace = resource = name = sub = ""
    if rest[0] == "namespaces":
        if len(rest) > 1:
            namespace = rest[1]
            if len(rest) > 2 and rest[2] not in NAMESPACE_SUBRESOURCES:
                rest = rest[2:]
            else:
                # the namespace object (or its status / finalize subresource)
                resource, name = "namespaces", rest[1]
                sub = rest[2] if len(rest) > 2 else ""
                namespace = rest[1]
                rest = []
        else:
            resource = "namespaces"
            rest = []
    if rest:
        resource = rest[0]
        if len(rest) > 1:
            name = rest[1]
        if len(rest) > 2:
            sub = rest[2]

    if special_watch:
        pass
    elif name == "":
        if verb == "get":
            verb = "watch" if _truthy(query.get("watch")) else "list"
        elif verb == "delete":
            verb = "deletecollection"
    elif verb == "get" and _truthy(query.get("watch")):
        # a watch on one named object (fieldSelector metadata.name=...)
        verb = "watch"
    return RequestInfo(
        is_resource_request=True, path=path, verb=verb, api_prefix=prefix, api_group=group,
        api_version=version, namespace=namespace, resource=resource, subresource=sub,
        name=name, parts=parts,
    )


def request_info(request: web.Request) -> RequestInfo:
    """The RequestInfo of ``request`` (computed now if the filter has not run: handler tests)."""
    info = request.get(REQUEST_INFO)
    if info is None:
        info = parse_request_info(request.method, request.path, dict(request.query))
        request[REQUEST_INFO] = info
    return info


def user_of(request: web.Request) -> UserInfo:
    return request.get(USER) or ANONYMOUS

"""Impersonation (upstream ``WithImpersonation``): ``Impersonate-User``,
``Impersonate-Group`` (repeatable), ``Impersonate-Uid`` and ``Impersonate-Extra-<key>``
headers make the request act as another user, when the authorizer allows the acting user the
``impersonate`` verb on each: ``users`` (or ``serviceaccounts`` for
``system:serviceaccount:<ns>:<name>``), ``groups``, ``uids`` and ``userextras/<key>`` (the
last two in the ``authentication.plat.io`` group). The first refusal is a 403 naming it.
"""

from __future__ import annotations

import urllib.parse
from typing import TYPE_CHECKING, Final

from aiohttp import web

from apiserver.authz.modes import forbidden_error
from apiserver.request import ANONYMOUS, USER, RequestInfo, UserInfo
from apiserver.status import bad_request

if TYPE_CHECKING:
    from aiohttp.typedefs import Handler, Middleware

    from apiserver.authz.interface import Authorizer

USER_HEADER: Final = "Impersonate-User"
GROUP_HEADER: Final = "Impersonate-Group"
UID_HEADER: Final = "Impersonate-Uid"
EXTRA_PREFIX: Final = "impersonate-extra-"
AUTHN_GROUP: Final = "authentication.plat.io"
SA_PREFIX: Final = "system:serviceaccount:"
AUTHENTICATED: Final = "system:authenticated"


def _target(path: str, resource: str, name: str, *, group: str = "", namespace: str = "",
            subresource: str = "") -> RequestInfo:
    return RequestInfo(is_resource_request=True, path=path, verb="impersonate",
                       api_group=group, api_version="v1" if not group else "",
                       resource=resource, name=name, namespace=namespace,
                       subresource=subresource)


def impersonation(authorizer: Authorizer) -> Middleware:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        h = request.headers
        extra_keys = [k for k in h if k.lower().startswith(EXTRA_PREFIX)]
        if USER_HEADER not in h and GROUP_HEADER not in h and UID_HEADER not in h \
                and not extra_keys:
            return await handler(request)

        name = h.get(USER_HEADER, "")
        groups = tuple(h.getall(GROUP_HEADER, ()))
        uid = h.get(UID_HEADER, "")
        extra: dict[str, list[str]] = {}
        for k in extra_keys:
            key = urllib.parse.unquote(k[len(EXTRA_PREFIX):]).lower()
            extra.setdefault(key, []).extend(h.getall(k))
        if not name:
            raise bad_request("requested impersonation of groups, uid or extra without "
                              "impersonating a user")

        actor = request[USER]
        path = request.path
        checks: list[RequestInfo] = []
        if name.startswith(SA_PREFIX) and name.count(":") == 3:
            _, _, ns, sa = name.split(":")
            checks.append(_target(path, "serviceaccounts", sa, namespace=ns))
        else:
            checks.append(_target(path, "users", name))
        checks.extend(_target(path, "groups", g) for g in groups)
        if uid:
            checks.append(_target(path, "uids", uid, group=AUTHN_GROUP))
        for key, values in extra.items():
            checks.extend(_target(path, "userextras", v, group=AUTHN_GROUP, subresource=key)
                          for v in values)
        for target in checks:
            decision = await authorizer.authorize(actor, target)
            if decision.decision != "allow":
                raise forbidden_error(actor, target, decision.reason)

        all_groups = list(groups)
        if name.startswith(SA_PREFIX) and name.count(":") == 3 and not groups:
            ns = name.split(":")[2]
            all_groups += ["system:serviceaccounts", f"system:serviceaccounts:{ns}"]
        if name == ANONYMOUS.name:
            if "system:unauthenticated" not in all_groups:
                all_groups.append("system:unauthenticated")
        elif AUTHENTICATED not in all_groups:
            all_groups.append(AUTHENTICATED)
        request[USER] = UserInfo(name=name, uid=uid, groups=tuple(all_groups), extra=extra)
        return await handler(request)

    return middleware

"""The authorization modes served so far and their union (upstream ``union`` authorizer:
checked in the configured order, the first allow or deny wins, no decision -> 403).

RBAC, Node and Webhook are not served yet: ``--authorization-mode`` refuses them at start-up,
and both commands default to AlwaysAllow until RBAC exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from apiserver.authz.interface import ALLOW, NO_OPINION, Decision
from apiserver.status import APIError, GenericServerError, qualified_resource

if TYPE_CHECKING:
    from apiserver.authz.interface import Authorizer
    from apiserver.request import RequestInfo, UserInfo

PRIVILEGED_GROUP: Final = "system:masters"


class AlwaysAllow:
    async def authorize(self, user: UserInfo, info: RequestInfo) -> Decision:
        return ALLOW


class AlwaysDeny:
    # Upstream's AlwaysDeny has no opinion with this reason: with nothing after it the
    # union denies, and the reason ends the 403 message.
    async def authorize(self, user: UserInfo, info: RequestInfo) -> Decision:
        return Decision(decision="no-opinion", reason="Everything is forbidden.")


class PrivilegedGroups:
    """Members of these groups may do anything (upstream puts it first in the union)."""

    def __init__(self, groups: Sequence[str] = (PRIVILEGED_GROUP,)) -> None:
        self._groups = frozenset(groups)

    async def authorize(self, user: UserInfo, info: RequestInfo) -> Decision:
        if any(g in self._groups for g in user.groups):
            return ALLOW
        return NO_OPINION


class Union:
    def __init__(self, authorizers: Sequence[Authorizer]) -> None:
        self._authorizers = tuple(authorizers)

    async def authorize(self, user: UserInfo, info: RequestInfo) -> Decision:
        reasons: list[str] = []
        for a in self._authorizers:
            d = await a.authorize(user, info)
            if d.decision != "no-opinion":
                return d
            if d.reason:
                reasons.append(d.reason)
        return Decision(decision="no-opinion", reason="\n".join(reasons))


_MODES: Final[dict[str, type[AlwaysAllow] | type[AlwaysDeny]]] = {
    "AlwaysAllow": AlwaysAllow, "AlwaysDeny": AlwaysDeny,
}


def build_authorizer(modes: Sequence[str]) -> Union:
    """Raises ValueError for a mode this server does not serve."""
    chain: list[Authorizer] = [PrivilegedGroups()]
    for m in modes:
        cls = _MODES.get(m)
        if cls is None:
            raise ValueError(f'authorization-mode "{m}" is not supported')
        chain.append(cls())
    return Union(chain)


def forbidden_error(user: UserInfo, info: RequestInfo, reason: str) -> APIError:
    """Upstream ``responsewriters.Forbidden``: for resources
    ``configmaps "x" is forbidden: User "bob" cannot get resource "configmaps" in API group ""
    in the namespace "ns"``; for other paths ``forbidden: User "bob" cannot get path "/x"``;
    a non-empty reason is appended after ``: ``."""
    if info.is_resource_request:
        resource = info.resource
        if info.subresource:
            resource = f"{resource}/{info.subresource}"
        scope = (f' in the namespace "{info.namespace}"' if info.namespace
                 else " at the cluster scope")
        msg = (f'User "{user.name}" cannot {info.verb} resource "{resource}" in API group '
               f'"{info.api_group}"{scope}')
    else:
        msg = f'User "{user.name}" cannot {info.verb} path "{info.path}"'
    if reason:
        msg = f"{msg}: {reason}"
    details: dict[str, str] = {}
    if not info.is_resource_request or not info.resource:
        return GenericServerError(403, "Forbidden", f"forbidden: {msg}")
    qr = qualified_resource(info.resource, info.api_group)
    if info.name:
        details["name"] = info.name
        subject = f'{qr} "{info.name}"'
    else:
        subject = qr
    if info.api_group:
        details["group"] = info.api_group
    details["kind"] = info.resource
    return APIError(403, "Forbidden", f"{subject} is forbidden: {msg}", details=details)

"""The authorizer boundary (upstream ``authorizer.Authorizer``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from apiserver.request import RequestInfo, UserInfo

DecisionKind = Literal["allow", "deny", "no-opinion"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    decision: DecisionKind
    reason: str = ""


ALLOW = Decision(decision="allow")
NO_OPINION = Decision(decision="no-opinion")


class Authorizer(Protocol):
    async def authorize(self, user: UserInfo, info: RequestInfo) -> Decision:
        """Allow, deny or no opinion (the next authorizer decides) about ``user`` doing
        ``info.verb`` on the resource or path of ``info``, with a reason shown to the user on
        denial. Never raises for a denial; an exception is an evaluation failure (500)."""
        ...

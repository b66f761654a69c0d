"""The request pipeline as aiohttp middlewares, in one ordered list (upstream
``DefaultBuildHandlerChain``). aiohttp runs the first middleware outermost.

Why this order:

1. recovery: outermost so that every failure of any later stage (and of the handler) becomes
   a Status response, and so that the request log and metrics see the final code.
2. request info: computed once from path and query; every later stage needs it (the timeout
   and the in-flight limit exempt long-running requests, authorization reads the verb).
3. request timeout: before authentication so that a slow authenticator (webhooks, later) is
   bounded too; it needs request info to spare watches.
4. authentication: who it is; 401 ends the request before anything is spent on it.
5. audit: needs the user; records what the request tried, impersonated or not (upstream
   audits before impersonation so the real user is in the event).
6. impersonation: replaces the user, so it must come after authentication and before
   anything that acts on the user (limits exempting system:masters, authorization).
7. max in flight: after the user is known (system:masters is exempt), before authorization
   and the handler so that an overloaded server rejects cheaply.
8. authorization: last check before the handler, on the final (possibly impersonated) user.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from apiserver.filters.audit import AuditSink, NoAudit, audit
from apiserver.filters.authentication import authentication
from apiserver.filters.authorization import authorization
from apiserver.filters.impersonation import impersonation
from apiserver.filters.maxinflight import max_in_flight
from apiserver.filters.recovery import recovery
from apiserver.filters.requestinfo import request_info
from apiserver.filters.timeout import request_timeout

if TYPE_CHECKING:
    from aiohttp.typedefs import Middleware

    from apiserver.authn.union import RequestAuthenticator
    from apiserver.authz.interface import Authorizer


@dataclass(frozen=True, slots=True, kw_only=True)
class ChainConfig:
    authenticator: RequestAuthenticator
    authorizer: Authorizer
    request_timeout: float = 60.0
    max_requests_inflight: int = 400
    max_mutating_requests_inflight: int = 200
    audit_sink: AuditSink = field(default_factory=NoAudit)
    # (group, version, resource) of served resources: metric labels for anything else are
    # blanked so that unknown paths cannot create new series
    known_resources: Set[tuple[str, str, str]] = frozenset()


def build_chain(cfg: ChainConfig) -> list[Middleware]:
    # Without an audit sink there is no audit stage (as upstream without an audit policy):
    # every stage costs each request a coroutine.
    audit_stage = [] if isinstance(cfg.audit_sink, NoAudit) else [audit(cfg.audit_sink)]
    return [
        recovery(cfg.known_resources),
        request_info(),
        request_timeout(cfg.request_timeout),
        authentication(cfg.authenticator),
        *audit_stage,
        impersonation(cfg.authorizer),
        max_in_flight(cfg.max_requests_inflight, cfg.max_mutating_requests_inflight),
        authorization(cfg.authorizer),
    ]


__all__ = ["ChainConfig", "build_chain"]

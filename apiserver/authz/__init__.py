"""Authorization: may this user do this (SPEC 5.7). ``build_authorizer`` assembles the
``--authorization-mode`` list behind the privileged-group authorizer."""

from __future__ import annotations

from apiserver.authz.interface import Authorizer, Decision
from apiserver.authz.modes import (
    AlwaysAllow,
    AlwaysDeny,
    PrivilegedGroups,
    Union,
    build_authorizer,
    forbidden_error,
)

__all__ = ["AlwaysAllow", "AlwaysDeny", "Authorizer", "Decision", "PrivilegedGroups", "Union",
           "build_authorizer", "forbidden_error"]

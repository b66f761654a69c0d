"""Authentication: who sends a request (SPEC 5). ``build_authenticator`` assembles the
configured methods in upstream's order; the authentication filter calls it once per request."""

from __future__ import annotations

from apiserver.authn.interface import Authenticator
from apiserver.authn.union import RequestAuthenticator, build_authenticator

__all__ = ["Authenticator", "RequestAuthenticator", "build_authenticator"]

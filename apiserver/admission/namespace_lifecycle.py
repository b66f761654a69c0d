"""NamespaceLifecycle (upstream ``plugin/pkg/admission/namespace/lifecycle``): no content in
a namespace that does not exist, no new content in a terminating one, and the immortal
namespaces cannot be deleted.

As upstream (informer first, then a live read): the namespace is read at resourceVersion "0"
(the watch cache when one is configured); a miss is confirmed with a live read, and a
namespace this server deleted in the last 10 seconds is always read live, so a create racing
the delete sees the Terminating phase."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, Final

from apiserver import status
from apiserver.admission.interface import CREATE, DELETE, Attributes

Object = dict[str, Any]
IMMORTAL_NAMESPACES: Final = frozenset({"default", "platform-system", "platform-public"})
ACCESS_REVIEWS: Final = frozenset({"localsubjectaccessreviews"})
FORCE_LIVE_LOOKUP_TTL: Final = 10.0
# (name, live) -> the namespace or None
NamespaceGetter = Callable[[str, bool], Awaitable[Object | None]]


def _resource_name(attrs: Attributes) -> str:
    """Upstream extractResourceName: the name, else the object's name or generateName."""
    if attrs.name:
        return attrs.name
    if attrs.object is not None:
        meta = attrs.object.get("metadata") or {}
        return str(meta.get("name") or meta.get("generateName") or "Unknown")
    return "Unknown"


class NamespaceLifecycle:
    def __init__(self, get_namespace: NamespaceGetter,
                 immortal: frozenset[str] = IMMORTAL_NAMESPACES) -> None:
        self._get = get_namespace
        self._immortal = immortal
        self._force_live: dict[str, float] = {}

    def _must_read_live(self, namespace: str) -> bool:
        until = self._force_live.get(namespace)
        if until is None:
            return False
        if until < time.monotonic():
            del self._force_live[namespace]
            return False
        return True

    async def admit(self, attrs: Attributes) -> None:
        res = attrs.resource
        is_namespace = res.group == "" and res.resource == "namespaces"
        if is_namespace:
            if attrs.operation == DELETE and not res.subresource \
                    and attrs.name in self._immortal:
                raise status.APIError(
                    403, "Forbidden",
                    f'namespaces "{attrs.name}" is forbidden: this namespace may not be deleted',
                    details={"name": attrs.name, "kind": "namespaces"})
            if attrs.operation == DELETE:
                now = time.monotonic()
                self._force_live = {k: t for k, t in self._force_live.items() if t > now}
                self._force_live[attrs.name] = now + FORCE_LIVE_LOOKUP_TTL
            return
        if not attrs.namespace or attrs.operation == DELETE:
            return
        if res.resource in ACCESS_REVIEWS:
            return
        live = self._must_read_live(attrs.namespace)
        ns = await self._get(attrs.namespace, live)
        if ns is None and not live:
            ns = await self._get(attrs.namespace, True)
        if ns is None:
            raise status.not_found("namespaces", "", attrs.namespace)
        if attrs.operation != CREATE:
            return
        if (ns.get("status") or {}).get("phase") != "Terminating":
            return
        name = _resource_name(attrs)
        qr = status.qualified_resource(res.resource, res.group)
        details: dict[str, Any] = {"name": name}
        if res.group:
            details["group"] = res.group
        details["kind"] = res.resource
        details["causes"] = [{"reason": "NamespaceTerminating",
                              "message": f"namespace {attrs.namespace} is being terminated",
                              "field": "metadata.namespace"}]
        raise status.APIError(
            403, "Forbidden",
            f'{qr} "{name}" is forbidden: unable to create new content in namespace '
            f"{attrs.namespace} because it is being terminated", details=details)

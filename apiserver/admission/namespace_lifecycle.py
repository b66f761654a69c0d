"""NamespaceLifecycle (upstream ``plugin/pkg/admission/namespace/lifecycle``): no content in
a namespace that does not exist, no new content in a terminating one, and the immortal
namespaces cannot be deleted.

Upstream reads the namespace from an informer and falls back to a live read; here the read
goes to the namespace store itself (through the watch cache when one is configured), so a
namespace created a moment ago is always seen."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

from apiserver import status
from apiserver.admission.interface import CREATE, DELETE, Attributes

Object = dict[str, Any]
IMMORTAL_NAMESPACES: Final = frozenset({"default", "platform-system", "platform-public"})
ACCESS_REVIEWS: Final = frozenset({"localsubjectaccessreviews"})
NamespaceGetter = Callable[[str], Awaitable[Object | None]]


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
            return
        if not attrs.namespace or attrs.operation == DELETE:
            return
        if res.resource in ACCESS_REVIEWS:
            return
        ns = await self._get(attrs.namespace)
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

"""Key layout in the store (DESIGN.md): ``/registry/<group>/<resource>/<namespace>/<name>``;
the core group has no group segment; cluster-scoped objects have no namespace segment."""

from __future__ import annotations

from typing import Final

ROOT: Final = "/registry"


def resource_prefix(group: str, resource: str) -> str:
    """``/registry/configmaps`` or ``/registry/apps/statefulsets`` (no trailing slash)."""
    return f"{ROOT}/{group}/{resource}" if group else f"{ROOT}/{resource}"


def namespace_prefix(group: str, resource: str, namespace: str) -> str:
    """Prefix of one namespace's objects, ending with ``/`` so ``ns1`` never matches ``ns10``."""
    return f"{resource_prefix(group, resource)}/{namespace}/"


def object_key(group: str, resource: str, namespace: str, name: str) -> str:
    base = resource_prefix(group, resource)
    return f"{base}/{namespace}/{name}" if namespace else f"{base}/{name}"

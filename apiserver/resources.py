"""``ResourceInfo``: what discovery, routing, authorization and the registry know about one
served resource (or sub-resource). The catalog of built-in resources lives in
``apiserver.registry.catalog`` (``builtin_resources()``); discovery renders it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceInfo:
    group: str  # "" for core
    version: str
    resource: str  # plural, lowercase: "configmaps"
    kind: str  # "ConfigMap"
    namespaced: bool
    singular: str = ""  # "configmap"
    verbs: tuple[str, ...] = (
        "create", "delete", "deletecollection", "get", "list", "patch", "update", "watch",
    )
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresource: str = ""  # "status", "scale"; "" for the main resource
    # For sub-resources whose object is another kind (scale -> autoscaling/v1 Scale).
    sub_kind_group: str = ""
    sub_kind_version: str = ""
    sub_kind: str = ""
    storage_version_hash: str = ""

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def path_name(self) -> str:
        """``statefulsets`` or ``statefulsets/status``."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource

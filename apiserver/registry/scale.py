"""The ``scale`` sub-resource (upstream ``pkg/registry/apps/statefulset/storage``
``ScaleREST``): an autoscaling/v1 Scale view of the parent's spec.replicas, status.replicas
and selector. Updates go through the parent store, so the parent's resourceVersion, generation
and validation rules apply."""

from __future__ import annotations

import builtins
import functools
from typing import TYPE_CHECKING, Any

from apiserver import status
from apiserver.api import printers_workloads
from apiserver.api.fieldmanager import FieldManager
from apiserver.registry import validation as v
from apiserver.registry.interface import (
    Column,
    Context,
    GetOptions,
    Object,
    TransformFunc,
    WriteOptions,
)
from apiserver.registry.partial import PartialStore
from apiserver.registry.strategies.statefulsets import selector_string
from apiserver.registry.strategy import as_dict
from apiserver.registry.treecopy import deep_copy

if TYPE_CHECKING:
    from apiserver.registry.generic import GenericStore
    from apiserver.resources import ResourceInfo


@functools.lru_cache(maxsize=64)
def _scale_field_manager(group: str, version: str, kind: str) -> FieldManager | None:
    try:
        return FieldManager.for_kind(group, version, kind, subresource="scale",
                                     reset_fields=("status",))
    except KeyError:
        return None


def scale_from(obj: Object) -> Object:
    meta = obj.get("metadata") or {}
    out_meta: dict[str, Any] = {k: meta[k] for k in ("name", "namespace", "uid",
                                                    "resourceVersion", "creationTimestamp")
                                if k in meta}
    spec = as_dict(obj.get("spec"))
    st = as_dict(obj.get("status"))
    sel = spec.get("selector")
    if isinstance(sel, dict) and sel and (obj.get("kind") == "ReplicationController"
                                          or all(isinstance(x, str) for x in sel.values())):
        sel = {"matchLabels": sel}  # a ReplicationController's selector is a label map
    return {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": out_meta,
            "spec": {"replicas": int(spec.get("replicas") or 0)},
            "status": {"replicas": int(st.get("replicas") or 0),
                       "selector": selector_string(sel)}}


class ScaleStore(PartialStore):
    def __init__(self, info: ResourceInfo, parent: GenericStore) -> None:
        self._info = info
        self.parent = parent

    def new_list_kind(self) -> str:
        return "ScaleList"

    async def get(self, ctx: Context, name: str, opts: GetOptions) -> Object:
        return scale_from(await self.parent.get(ctx, name, opts))

    async def update(self, ctx: Context, name: str, transform: TransformFunc,
                     opts: WriteOptions, *, force_allow_create: bool = False,
                     ) -> tuple[Object, bool]:
        parent = self.parent

        async def to_parent(current: Object | None) -> Object:
            if current is None:
                raise status.not_found(parent.resource, parent.group, name)
            scale = await transform(scale_from(current))
            replicas = as_dict(scale.get("spec")).get("replicas")
            causes: list[v.Cause] = []
            if replicas is None:
                replicas = 0
            v.nonneg(causes, "spec.replicas", replicas)
            if causes:
                raise status.invalid("Scale", "autoscaling", name, causes)
            rv = str(as_dict(scale.get("metadata")).get("resourceVersion") or "")
            cur_rv = str(current["metadata"].get("resourceVersion") or "")
            if rv and rv != cur_rv:
                from apiserver.registry.generic_update import OPTIMISTIC_LOCK_MSG
                raise status.conflict(parent.resource, parent.group, name, OPTIMISTIC_LOCK_MSG)
            out = deep_copy(current)
            out.setdefault("spec", {})["replicas"] = replicas
            # the parent's managedFields record the writer as an Update through "scale"
            # (upstream ScaleHandler): it owns spec.replicas when it changed it
            fm = _scale_field_manager(parent.strategy.group, parent.strategy.version,
                                      parent.strategy.kind)
            if fm is not None and opts.field_manager:
                out = fm.update(current, out, opts.field_manager)
            return out

        obj, _ = await parent.update(ctx, name, to_parent, opts)
        return scale_from(obj), False

    def table_columns(self) -> builtins.list[Column]:
        # a Scale's own columns, whatever the parent (upstream's Scale printer)
        return list(printers_workloads.SCALE_COLUMNS)

    def table_cells(self, obj: Object) -> builtins.list[Any]:
        return printers_workloads.scale_cells(obj)

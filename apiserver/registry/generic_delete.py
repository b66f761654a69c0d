"""Delete and deletecollection of the generic store (upstream ``Store.Delete``,
``rest.BeforeDelete``, ``updateForGracefulDeletionAndFinalizers``, ``DeleteCollection``; the
namespace store's two-phase delete).

State machine (SPEC 3.1), for kinds without graceful deletion (all served kinds)::

    live, no finalizers   --delete-->  removed            (Status Success / the object)
    live, finalizers      --delete-->  deletionTimestamp=now, deletionGracePeriodSeconds=0
    deleting, finalizers  --update empties finalizers-->  removed (generic_update)

propagationPolicy Orphan / orphanDependents=true adds the ``orphan`` finalizer, Foreground
adds ``foregroundDeletion``; both then count as pending finalizers. No garbage collector
exists yet to act on them: such objects stay until a client removes the finalizer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from apiserver import status
from apiserver.admission.interface import DELETE
from apiserver.registry.strategy import GC_ORPHAN_DEPENDENTS, GC_UNSUPPORTED
from apiserver.registry.treecopy import deep_copy
from storage import interface as si
from storage.errors import Code, StorageError

if TYPE_CHECKING:
    from apiserver.registry.generic import GenericStore
    from apiserver.registry.interface import Context, DeleteOptions, ListOptions, Object

FINALIZER_ORPHAN: Final = "orphan"
FINALIZER_FOREGROUND: Final = "foregroundDeletion"
UNSAFE_DELETE_GATE: Final = "AllowUnsafeMalformedObjectDeletion"


class _DeleteNow(Exception):
    pass


def success_status(store: GenericStore, obj: Object) -> Object:
    meta = obj.get("metadata") or {}
    details: dict[str, Any] = {"name": meta.get("name", "")}
    if store.group:
        details["group"] = store.group
    details["kind"] = store.resource
    if meta.get("uid"):
        details["uid"] = meta["uid"]
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": details}


def finalize_delete(store: GenericStore, obj: Object) -> Object:
    if store.strategy.return_deleted_object:
        return store.decorate(obj)
    return success_status(store, obj)


def _kind_qualified(store: GenericStore) -> str:
    k = store.strategy.kind
    return f"{k}.{store.group}" if store.group else k


def check_preconditions(store: GenericStore, obj: Object, opts: DeleteOptions) -> None:
    """Upstream rest.BeforeDelete's early precondition check (409 naming the Kind)."""
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    uid = str(meta.get("uid") or "")
    rv = str(meta.get("resourceVersion") or "")
    if opts.precondition_uid is not None and opts.precondition_uid != uid:
        raise status.APIError(409, "Conflict", (
            f'Operation cannot be fulfilled on {_kind_qualified(store)} "{name}": the UID in '
            f"the precondition ({opts.precondition_uid}) does not match the UID in record "
            f"({uid}). The object might have been deleted and then recreated"),
            details=_details(store, name))
    if opts.precondition_resource_version is not None \
            and opts.precondition_resource_version != rv:
        raise status.APIError(409, "Conflict", (
            f'Operation cannot be fulfilled on {_kind_qualified(store)} "{name}": the '
            f"ResourceVersion in the precondition ({opts.precondition_resource_version}) does "
            f"not match the ResourceVersion in record ({rv}). The object might have been "
            "modified"), details=_details(store, name))


def _details(store: GenericStore, name: str) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name}
    if store.group:
        d["group"] = store.group
    d["kind"] = store.strategy.kind
    return d


def _should_orphan(store: GenericStore, finalizers: list[str], opts: DeleteOptions) -> bool:
    policy = store.strategy.gc_policy
    if policy == GC_UNSUPPORTED:
        return False
    if opts.orphan_dependents is not None:
        return opts.orphan_dependents
    if opts.propagation_policy is not None:
        return opts.propagation_policy == "Orphan"
    for f in finalizers:
        if f == FINALIZER_ORPHAN:
            return True
        if f == FINALIZER_FOREGROUND:
            return False
    return policy == GC_ORPHAN_DEPENDENTS


def _should_foreground(store: GenericStore, finalizers: list[str], opts: DeleteOptions) -> bool:
    if store.strategy.gc_policy == GC_UNSUPPORTED:
        return False
    if opts.orphan_dependents is not None:
        return False
    if opts.propagation_policy is not None:
        return opts.propagation_policy == "Foreground"
    for f in finalizers:
        if f == FINALIZER_FOREGROUND:
            return True
        if f == FINALIZER_ORPHAN:
            return False
    return False


def gc_finalizers(store: GenericStore, finalizers: list[str],
                  opts: DeleteOptions) -> tuple[bool, list[str]]:
    """Upstream deletionFinalizersForGarbageCollection: (changed, new finalizers)."""
    new = [f for f in finalizers if f not in (FINALIZER_ORPHAN, FINALIZER_FOREGROUND)]
    if _should_orphan(store, finalizers, opts):
        new.append(FINALIZER_ORPHAN)
    if _should_foreground(store, finalizers, opts):
        new.append(FINALIZER_FOREGROUND)
    if set(new) == set(finalizers):
        return False, finalizers
    return True, new


async def delete(store: GenericStore, ctx: Context, name: str,
                 opts: DeleteOptions) -> tuple[Object, bool]:
    key = store.key(ctx, name)
    # upstream's handler drops the option while the gate is off
    unsafe = opts.ignore_store_read_error and store.config.gates.get(UNSAFE_DELETE_GATE, False)
    await store.config.admission.admit(store.attrs(ctx, DELETE, None, None, name, opts.dry_run))
    try:
        existing = await store.storage.get(key, si.GetOptions())
    except StorageError as e:
        if e.code is Code.INVALID_OBJ and unsafe:
            return await _unsafe_delete(store, key, name, opts)
        raise store.storage_error(e, name) from None
    if existing is None:
        raise status.not_found(store.resource, store.group, name)
    if store.strategy.resource == "namespaces" and not store.strategy.subresource:
        from apiserver.registry.strategies.namespaces import delete_namespace
        done = await delete_namespace(store, ctx, name, existing, opts)
        if done is not None:
            return done
    return await delete_existing(store, ctx, name, key, existing, opts)


async def _unsafe_delete(store: GenericStore, key: str, name: str,
                         opts: DeleteOptions) -> tuple[Object, bool]:
    if opts.dry_run:
        return success_status(store, {"metadata": {"name": name}}), True
    try:
        await store.storage.delete(key)
    except StorageError as e:
        raise store.storage_error(e, name) from None
    return success_status(store, {"metadata": {"name": name}}), True


async def delete_existing(store: GenericStore, ctx: Context, name: str, key: str,
                          existing: Object, opts: DeleteOptions) -> tuple[Object, bool]:
    check_preconditions(store, existing, opts)
    pre = si.Preconditions(uid=opts.precondition_uid,
                           resource_version=opts.precondition_resource_version)
    admission = store.config.admission

    async def validate_deletion(current: Object) -> None:
        await admission.validate(store.attrs(ctx, DELETE, None, deep_copy(current), name,
                                             opts.dry_run))

    finalizers = list((existing.get("metadata") or {}).get("finalizers") or [])
    needs, _ = gc_finalizers(store, finalizers, opts)
    if finalizers or needs:
        pending = False

        async def mark(current: Object | None) -> Object:
            nonlocal pending
            assert current is not None
            check_preconditions(store, current, opts)
            await validate_deletion(current)
            obj = deep_copy(current)
            meta = obj["metadata"]
            cur_f = list(meta.get("finalizers") or [])
            changed, new_f = gc_finalizers(store, cur_f, opts)
            if changed:
                meta["finalizers"] = new_f
            pending = bool(meta.get("finalizers"))
            if not pending:
                raise _DeleteNow()
            mark_as_deleting(obj)
            return obj

        try:
            if opts.dry_run:
                out = await mark(existing)
            else:
                out = await store.storage.guaranteed_update(key, mark, preconditions=pre)
            return store.decorate(out), False
        except _DeleteNow:
            pass
        except StorageError as e:
            raise store.storage_error(e, name) from None
    if opts.dry_run:
        return finalize_delete(store, existing), True
    try:
        out = await store.storage.delete(key, preconditions=pre,
                                         validate_deletion=validate_deletion)
    except StorageError as e:
        raise store.storage_error(e, name) from None
    await store.strategy.release(store.storage, out)
    return finalize_delete(store, out), True


def mark_as_deleting(obj: Object) -> None:
    """Upstream markAsDeleting: generation bump (first time, for kinds that track it),
    deletionTimestamp (kept when already set), deletionGracePeriodSeconds 0."""
    from apiserver.registry.generic import now_rfc3339

    meta = obj["metadata"]
    if not meta.get("deletionTimestamp"):
        if int(meta.get("generation") or 0) > 0:
            meta["generation"] = int(meta["generation"]) + 1
        meta["deletionTimestamp"] = now_rfc3339()
    meta["deletionGracePeriodSeconds"] = 0


async def delete_collection(store: GenericStore, ctx: Context, opts: DeleteOptions,
                            list_opts: ListOptions) -> Object:
    """List with the selectors, delete each item; NotFound (deleted meanwhile) is skipped.
    Returns the list as listed, as upstream's Store.DeleteCollection does: the items left
    terminating (finalizers) and those gone meanwhile included."""
    listed = await store.list(ctx, list_opts)
    for item in listed["items"]:
        meta = item.get("metadata") or {}
        item_ctx = ctx
        if store.strategy.namespaced and not ctx.namespace:
            from apiserver.registry.interface import Context as Ctx
            item_ctx = Ctx(namespace=str(meta.get("namespace") or ""), user=ctx.user,
                           info=ctx.info)
        try:
            await delete(store, item_ctx, str(meta.get("name") or ""), opts)
        except status.APIError as e:
            if e.code == 404:
                continue
            raise
    return {"kind": store.new_list_kind(), "apiVersion": store.strategy.group_version,
            "metadata": {"resourceVersion": listed["metadata"]["resourceVersion"]},
            "items": listed["items"]}


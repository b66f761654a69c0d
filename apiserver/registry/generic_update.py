"""Update of the generic store (upstream ``Store.Update`` and ``rest.BeforeUpdate``).

One compare-and-swap through ``guaranteed_update``; the callback decides between create
(absent and create-on-update allowed), unconditional update (no resourceVersion in the body
and the kind allows it) and conditional update (the body's resourceVersion must be the
stored one, else 409). The callback may run more than once on a lost race; it is pure apart
from admission. It works on copies of the stored object (shared with the watch cache) and of
what the transform returns, unless the transform ``reads_only`` and hands its result over
(``treecopy.give``). An update that changes nothing is a no-op in storage (same
resourceVersion). When the update empties the finalizers of an object already being deleted
the object is deleted instead (upstream ShouldDeleteDuringUpdate).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, TypeVar

from apiserver import status
from apiserver.admission.interface import CREATE, UPDATE
from apiserver.api import required
from apiserver.registry import shape
from apiserver.registry import validation as v
from apiserver.registry.treecopy import copy_stored, take
from storage import interface as si
from storage.errors import Code, StorageError

if TYPE_CHECKING:
    from apiserver.registry.generic import GenericStore
    from apiserver.registry.interface import Context, Object, TransformFunc, WriteOptions
    from apiserver.registry.strategy import Allocation

OPTIMISTIC_LOCK_MSG: Final = ("the object has been modified; please apply your changes to the "
                              "latest version and try again")


_READS_ONLY: Final = "_plat_transform_reads_only"
F = TypeVar("F", bound=Callable[..., Any])


def reads_only(transform: F) -> F:
    """Declares that ``transform`` never changes the object it is given (it may return one
    that shares parts of it: the store copies whatever was not handed over with
    ``treecopy.give``). The store then passes the stored object, which the watch cache
    shares, without copying it first."""
    setattr(transform, _READS_ONLY, True)
    return transform


class _DeleteInstead(Exception):
    """The update emptied the finalizers of an object being deleted."""

    def __init__(self, obj: Object) -> None:
        super().__init__("delete instead of update")
        self.obj = obj


def should_delete_during_update(store: GenericStore, new: Object, old: Object) -> bool:
    nm = new.get("metadata") or {}
    om = old.get("metadata") or {}
    if nm.get("finalizers"):
        return False
    spec = new.get("spec")
    if store.strategy.resource == "namespaces" and isinstance(spec, dict) \
            and spec.get("finalizers"):
        return False
    if not om.get("deletionTimestamp"):
        return False
    return om.get("deletionGracePeriodSeconds") in (None, 0)


async def update(store: GenericStore, ctx: Context, name: str, transform: TransformFunc,
                 opts: WriteOptions, *, force_allow_create: bool = False) -> tuple[Object, bool]:
    key = store.key(ctx, name)
    created = False
    strategy = store.strategy
    alloc: Allocation | None = None

    async def allocate(obj: Object, old: Object | None) -> None:
        # the callback may run again on a lost race: drop what the last run reserved
        nonlocal alloc
        if alloc is not None:
            await alloc.rollback()
            alloc = None
        alloc = await strategy.allocate(store.storage, obj, old, opts.dry_run)

    async def apply(current: Object | None) -> Object:
        nonlocal created
        if current is None:
            if not (strategy.allow_create_on_update or force_allow_create) \
                    or strategy.subresource:
                raise status.not_found(store.resource, store.group, name)
            obj = take(await transform(None))
            if not isinstance(obj, dict):
                raise status.bad_request(f"the body of the request must be a {strategy.kind} "
                                         "object")
            shape.check(obj, strategy.kind, strategy.typed_fields, strategy.group_version)
            if not isinstance(obj.get("metadata"), dict):
                obj["metadata"] = {}
            meta = obj["metadata"]
            store.fill_namespace(ctx, meta)
            obj["kind"] = strategy.kind
            obj["apiVersion"] = strategy.group_version
            if not meta.get("name"):
                meta["name"] = name
            await store.config.admission.admit(
                store.attrs(ctx, CREATE, obj, None, name, opts.dry_run))
            meta = obj["metadata"]
            meta.pop("resourceVersion", None)
            store.before_create(obj)
            check_name(store, obj, name)
            await store.config.admission.validate(
                store.attrs(ctx, CREATE, obj, None, name, opts.dry_run))
            await allocate(obj, None)
            created = True
            obj["apiVersion"] = strategy.storage_group_version
            return obj
        created = False
        # ``old`` goes to strategies and admission, which may copy parts of it into the new
        # object: a private copy, so that nothing done to the new object reaches the cache
        old = copy_stored(current)
        given = current if getattr(transform, _READS_ONLY, False) else copy_stored(current)
        obj = take(await transform(store.decorate(given)))
        if not isinstance(obj, dict):
            raise status.bad_request(f"the body of the request must be a {strategy.kind} "
                                     "object")
        shape.check(obj, strategy.kind, strategy.typed_fields, strategy.group_version)
        if not isinstance(obj.get("metadata"), dict):
            obj["metadata"] = {}
        meta = obj["metadata"]
        stored_uid = str(old["metadata"].get("uid") or "")
        body_uid = str(meta.get("uid") or "")
        if body_uid and body_uid != stored_uid and ctx.info is not None \
                and ctx.info.verb == "update":
            # a PUT body's uid is a storage precondition upstream (a PATCH's is not: it
            # fails validation as an immutable field instead)
            raise status.conflict(store.resource, store.group, name,
                                  f"Precondition failed: UID in precondition: {body_uid}, "
                                  f"UID in object meta: {stored_uid}")
        stored_rv = str(old["metadata"].get("resourceVersion") or "")
        new_rv = str(meta.get("resourceVersion") or "")
        if not new_rv:
            if not strategy.allow_unconditional_update:
                raise status.invalid(store.resource, store.group, name, [v.invalid(
                    "metadata.resourceVersion", v.Raw("0x0"), "must be specified for an update")])
        elif new_rv != stored_rv:
            raise status.conflict(store.resource, store.group, name, OPTIMISTIC_LOCK_MSG)
        obj["kind"] = strategy.kind
        obj["apiVersion"] = strategy.group_version
        check_name(store, obj, name)
        await store.config.admission.admit(
            store.attrs(ctx, UPDATE, obj, old, name, opts.dry_run))
        before_update(store, ctx, obj, old)
        await store.config.admission.validate(
            store.attrs(ctx, UPDATE, obj, old, name, opts.dry_run))
        obj["metadata"]["resourceVersion"] = stored_rv
        obj["apiVersion"] = strategy.storage_group_version
        if should_delete_during_update(store, obj, old):
            raise _DeleteInstead(obj)
        await allocate(obj, old)
        return obj

    try:
        if opts.dry_run:
            try:
                current = await store.storage.get(key, si.GetOptions(ignore_not_found=True))
            except StorageError as e:
                raise store.storage_error(e, name) from None
            out = await apply(current)
            if created:
                out["metadata"].pop("resourceVersion", None)
            return store.decorate(out), created
        try:
            ttl = store.ttl()
            out = await (store.storage.guaranteed_update(key, apply, ignore_not_found=True,
                                                         ttl=ttl) if ttl
                         else store.storage.guaranteed_update(key, apply,
                                                              ignore_not_found=True))
        except StorageError as e:
            raise store.storage_error(e, name) from None
        if alloc is not None:
            await alloc.commit()
            alloc = None
        return store.decorate(out), created
    except _DeleteInstead as d:
        return await _delete_emptied(store, key, name, d.obj, opts.dry_run), False
    finally:
        if alloc is not None:
            await alloc.rollback()


async def _delete_emptied(store: GenericStore, key: str, name: str, obj: Object,
                          dry_run: bool) -> Object:
    meta = obj["metadata"]
    pre = si.Preconditions(uid=meta.get("uid") or None,
                           resource_version=meta.get("resourceVersion") or None)
    if dry_run:
        return store.decorate(obj)
    try:
        await store.storage.delete(key, preconditions=pre)
    except StorageError as e:
        if e.code is Code.KEY_NOT_FOUND:
            return store.decorate(obj)
        raise store.storage_error(e, name) from None
    await store.strategy.release(store.storage, obj)
    return store.decorate(obj)


def check_name(store: GenericStore, obj: Object, name: str) -> None:
    """The body's name must be the path's (upstream: 400 BadRequest)."""
    got = str(obj["metadata"].get("name") or "")
    if got != name:
        raise status.bad_request(
            f"the name of the object ({got}) does not match the name on the URL ({name})")


def before_update(store: GenericStore, ctx: Context, obj: Object, old: Object) -> None:
    """Upstream rest.BeforeUpdate."""
    meta: dict[str, Any] = obj["metadata"]
    om: dict[str, Any] = old["metadata"]
    store.fill_namespace(ctx, meta)
    if om.get("generation") is not None:
        meta["generation"] = om["generation"]
    else:
        meta.pop("generation", None)
    store.strategy.default(obj)
    store.strategy.drop_empty_fields(obj)
    store.strategy.prepare_for_update(obj, old)
    if not meta.get("uid"):
        meta["uid"] = om.get("uid")
    if om.get("creationTimestamp"):
        meta["creationTimestamp"] = om["creationTimestamp"]
    if om.get("deletionTimestamp"):
        meta["deletionTimestamp"] = om["deletionTimestamp"]
    if om.get("deletionGracePeriodSeconds") is not None \
            and meta.get("deletionGracePeriodSeconds") is None:
        meta["deletionGracePeriodSeconds"] = om["deletionGracePeriodSeconds"]
    causes = v.validate_object_meta(meta, namespaced=store.strategy.namespaced,
                                    name_validator=store.strategy.name_errors)
    causes += v.validate_object_meta_update(meta, om)
    causes += store.strategy.validate_update(obj, old)
    causes += required.causes(store.strategy.group_version, store.strategy.kind, obj, causes)
    if causes:
        raise store.invalid(str(meta.get("name") or ""), causes)
    store.strategy.canonicalize(obj)

"""The namespace controller (upstream ``pkg/controller/namespace`` and its
``deletion/namespaced_resources_deleter.go``), running in-process over the stores.

For each namespace with a deletionTimestamp:

1. deletecollection on every namespaced resource in it;
2. count what is left (objects held by finalizers) and record the upstream conditions
   (NamespaceDeletionContentFailure, NamespaceContentRemaining, NamespaceFinalizersRemaining)
   through the ``status`` sub-resource;
3. while anything is left, retry later (an object whose finalizer is removed disappears
   without touching the namespace, so the controller polls rather than waits for an event);
4. when empty: remove "platform" from spec.finalizers through ``finalize``, then delete the
   namespace again, which removes it (unless other spec/metadata finalizers remain).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from apiserver import status
from apiserver.registry.catalog import SYSTEM_USER, ensure_system_namespaces
from apiserver.registry.converting import ConvertingStore
from apiserver.registry.generic import now_rfc3339
from apiserver.registry.interface import (
    Context,
    DeleteOptions,
    GetOptions,
    ListOptions,
    Object,
    WriteOptions,
)
from apiserver.registry.strategies.namespaces import FINALIZER_PLATFORM
from apiserver.registry.treecopy import deep_copy

if TYPE_CHECKING:
    from apiserver.registry.interface import RESTStore

log = logging.getLogger(__name__)

NS_KEY: Final = ("", "v1", "namespaces")
CONDITION_TYPES: Final = (
    "NamespaceDeletionDiscoveryFailure", "NamespaceDeletionGroupVersionParsingFailure",
    "NamespaceDeletionContentFailure", "NamespaceContentRemaining",
    "NamespaceFinalizersRemaining",
)
_OK: Final = {
    "NamespaceDeletionDiscoveryFailure": ("ResourcesDiscovered",
                                          "All resources successfully discovered"),
    "NamespaceDeletionGroupVersionParsingFailure": ("ParsedGroupVersions",
                                                    "All legacy kube types successfully "
                                                    "parsed"),
    "NamespaceDeletionContentFailure": ("ContentDeleted", "All content successfully deleted, "
                                                          "may be waiting on finalization"),
    "NamespaceContentRemaining": ("ContentRemoved", "All content successfully removed"),
    "NamespaceFinalizersRemaining": ("ContentHasNoFinalizers",
                                     "All content-preserving finalizers have been removed"),
}


def _ctx(namespace: str = "") -> Context:
    return Context(namespace=namespace, user=SYSTEM_USER)


class NamespaceController:
    def __init__(self, stores: Mapping[tuple[str, str, str], RESTStore], *,
                 retry_interval: float = 1.0, max_retry_interval: float = 15.0) -> None:
        self._stores = stores
        self._ns = stores[NS_KEY]
        self._status = stores[("", "v1", "namespaces/status")]
        self._finalize = stores[("", "v1", "namespaces/finalize")]
        # every namespaced resource once (a kind served in two groups shares its storage)
        self._content = [s for (g, ver, r), s in stores.items()
                         if "/" not in r and s.info.namespaced
                         and "deletecollection" in s.info.verbs and "list" in s.info.verbs
                         and not isinstance(s, ConvertingStore)]
        self._retry = retry_interval
        self._max_retry = max_retry_interval
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._queued: set[str] = set()
        self._tasks: list[asyncio.Task[None]] = []
        self._delays: dict[str, float] = {}

    async def start(self) -> None:
        """Ensure the system namespaces exist (upstream's apiserver does it at start; the
        all-in-one server starts this controller, so default, platform-system, ... exist
        before the first client arrives), then watch namespaces."""
        self._tasks = [asyncio.create_task(self._watch_loop(), name="namespace-watch"),
                       asyncio.create_task(self._work_loop(), name="namespace-worker")]
        try:
            await ensure_system_namespaces(self._stores)
        except Exception:
            log.exception("namespace controller: creating the system namespaces failed; "
                          "retrying in the background")
            self._tasks.append(asyncio.create_task(self._ensure_loop(),
                                                   name="system-namespaces"))

    async def _ensure_loop(self) -> None:
        while True:
            await asyncio.sleep(self._retry)
            try:
                await ensure_system_namespaces(self._stores)
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("namespace controller: creating the system namespaces failed")

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._tasks = []

    def _enqueue(self, name: str) -> None:
        if name not in self._queued:
            self._queued.add(name)
            self._queue.put_nowait(name)

    def _enqueue_later(self, name: str) -> None:
        delay = self._delays.get(name, self._retry)
        self._delays[name] = min(delay * 2, self._max_retry)
        asyncio.get_running_loop().call_later(delay, self._enqueue, name)

    async def _watch_loop(self) -> None:
        while True:
            try:
                listed = await self._ns.list(_ctx(), ListOptions())
                for ns in listed["items"]:
                    if ns["metadata"].get("deletionTimestamp"):
                        self._enqueue(ns["metadata"]["name"])
                rv = listed["metadata"]["resourceVersion"]
                stream = await self._ns.watch(_ctx(), ListOptions(resource_version=rv,
                                                                  watch=True))
                try:
                    async for ev in stream:
                        if ev.type == "ERROR":
                            break
                        if ev.type in ("ADDED", "MODIFIED") \
                                and ev.object["metadata"].get("deletionTimestamp"):
                            self._enqueue(ev.object["metadata"]["name"])
                finally:
                    stream.stop()
            except asyncio.CancelledError:
                raise
            except status.APIError as e:
                # The store unreachable or a member gone (503), a timeout (504), a compacted
                # version (410): expected while the store fails over; no stack trace.
                log.warning("namespace controller: watch failed (%d %s); relisting",
                            e.code, e.message)
                await asyncio.sleep(self._retry)
            except Exception:
                log.exception("namespace controller: watch failed; relisting")
                await asyncio.sleep(self._retry)

    async def _work_loop(self) -> None:
        while True:
            name = await self._queue.get()
            self._queued.discard(name)
            try:
                again = await self.sync(name)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("namespace controller: sync of %s failed", name)
                again = True
            if again:
                self._enqueue_later(name)
            else:
                self._delays.pop(name, None)

    async def sync(self, name: str) -> bool:
        """One pass over a terminating namespace; True when it must be retried."""
        try:
            ns = await self._ns.get(_ctx(), name, GetOptions())
        except status.APIError as e:
            if e.code == 404:
                return False
            raise
        if not ns["metadata"].get("deletionTimestamp"):
            return False
        fins = list((ns.get("spec") or {}).get("finalizers") or [])
        if FINALIZER_PLATFORM in fins:
            failures, remaining, finalizers = await self._delete_content(name)
            await self._set_conditions(name, failures, remaining, finalizers)
            if failures or remaining:
                return True
            await self._remove_finalizer(name)
        try:
            await self._ns.delete(_ctx(), name, DeleteOptions())
        except status.APIError as e:
            if e.code != 404:
                raise
        return False

    async def _delete_content(self, namespace: str
                              ) -> tuple[list[str], dict[str, int], dict[str, int]]:
        failures: list[str] = []
        remaining: dict[str, int] = {}
        finalizers: dict[str, int] = {}
        ctx = _ctx(namespace)
        for store in self._content:
            info = store.info
            qr = status.qualified_resource(info.resource, info.group)
            # the condition names a resource "<resource>.<group>", "configmaps." for the core
            # group (upstream's "%s.%s")
            gr = f"{info.resource}.{info.group}"
            try:
                # Background, as upstream's namespace deleter: a kind whose default is to
                # orphan its dependents (jobs, replication controllers) would otherwise get
                # the orphan finalizer, which only a garbage collector removes.
                await store.delete_collection(
                    ctx, DeleteOptions(propagation_policy="Background"), ListOptions())
            except status.APIError as e:
                failures.append(f"{qr}: {e.message}")
            try:
                left = await store.list(ctx, ListOptions())
            except status.APIError as e:
                failures.append(f"{qr}: {e.message}")
                continue
            if left["items"]:
                remaining[gr] = len(left["items"])
                for item in left["items"]:
                    for f in item["metadata"].get("finalizers") or []:
                        finalizers[f] = finalizers.get(f, 0) + 1
        return failures, remaining, finalizers

    async def _set_conditions(self, name: str, failures: list[str], remaining: dict[str, int],
                              finalizers: dict[str, int]) -> None:
        bad: dict[str, tuple[str, str]] = {}
        if failures:
            bad["NamespaceDeletionContentFailure"] = (
                "ContentDeletionFailed", f"Failed to delete all resource types, "
                f"{len(failures)} remaining: {', '.join(failures)}")
        if remaining:
            parts = sorted(f"{r} has {n} resource instances" for r, n in remaining.items())
            bad["NamespaceContentRemaining"] = (
                "SomeResourcesRemain", "Some resources are remaining: " + ", ".join(parts))
        if finalizers:
            parts = sorted(f"{f} in {n} resource instances" for f, n in finalizers.items())
            bad["NamespaceFinalizersRemaining"] = (
                "SomeFinalizersRemain",
                "Some content in the namespace has finalizers remaining: " + ", ".join(parts))

        async def transform(current: Object | None) -> Object:
            if current is None:
                raise status.not_found("namespaces", "", name)
            obj = deep_copy(current)
            st = obj.setdefault("status", {})
            old = {c.get("type"): c for c in st.get("conditions") or []}
            conds: list[dict[str, Any]] = []
            for t in CONDITION_TYPES:
                cstatus, (reason, msg) = ("True", bad[t]) if t in bad else ("False", _OK[t])
                prev = old.get(t)
                when = prev.get("lastTransitionTime") if prev and \
                    prev.get("status") == cstatus else now_rfc3339()
                if prev and prev.get("status") == cstatus and prev.get("reason") == reason \
                        and prev.get("message") == msg:
                    conds.append(prev)
                    continue
                conds.append({"type": t, "status": cstatus, "lastTransitionTime": when,
                              "reason": reason, "message": msg})
            st["conditions"] = conds
            return obj

        await self._status.update(_ctx(), name, transform, WriteOptions(
            field_manager="namespace-controller"))

    async def _remove_finalizer(self, name: str) -> None:
        async def transform(current: Object | None) -> Object:
            if current is None:
                raise status.not_found("namespaces", "", name)
            obj = deep_copy(current)
            spec = obj.setdefault("spec", {})
            spec["finalizers"] = [f for f in spec.get("finalizers") or []
                                  if f != FINALIZER_PLATFORM]
            return obj

        await self._finalize.update(_ctx(), name, transform, WriteOptions(
            field_manager="namespace-controller"))

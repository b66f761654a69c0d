"""What the HTTP handlers (``apiserver.endpoints``) need from the registry: one ``RESTStore``
per served resource and sub-resource (upstream ``rest.Getter``, ``rest.Lister``,
``rest.Watcher``, ``rest.Creater``, ``rest.Updater``, ``rest.GracefulDeleter``,
``rest.CollectionDeleter``, ``rest.TableConvertor``).

Objects are ``dict`` trees in the served version's JSON form. The handler decodes the body,
checks the query parameters (SPEC 4.2 / 8.1: invalid cells are rejected there with 400, so a
store only sees valid option combinations), and renders what the store returns. The store
does metadata rules (SPEC 2.2), defaulting, validation, admission, the deletion state machine
(SPEC 3.1), dryRun (everything but the write) and translates storage errors to ``APIError``
(``apiserver.status.from_storage_error``). Every method raises ``apiserver.status.APIError``
for expected failures and nothing else.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from apiserver.request import RequestInfo, UserInfo
    from apiserver.resources import ResourceInfo

Object = dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class Context:
    """Who asks and where: namespace is "" for cluster-scoped resources and for lists across
    all namespaces."""

    namespace: str
    user: UserInfo
    info: RequestInfo | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GetOptions:
    resource_version: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOptions:
    label_selector: str = ""  # upstream grammar; the store parses it (400 on a bad selector)
    field_selector: str = ""
    resource_version: str = ""
    resource_version_match: str = ""
    limit: int = 0
    continue_token: str = ""
    watch: bool = False
    allow_watch_bookmarks: bool = False
    send_initial_events: bool | None = None
    timeout_seconds: int = 0  # watch only; 0: the server's default (a random 30-60 min)


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteOptions:
    """Create / update / patch options. ``field_manager`` is already defaulted from the
    User-Agent by the handler for non-apply requests."""

    dry_run: bool = False
    field_manager: str = ""
    field_validation: str = "Warn"  # "Ignore" | "Warn" | "Strict"


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteOptions:
    """Body and query of a delete (SPEC 4.6). The handler has already enforced the
    ``ignoreStoreReadErrorWithClusterBreakingPotential`` exclusion rule."""

    dry_run: bool = False
    grace_period_seconds: int | None = None
    precondition_uid: str | None = None
    precondition_resource_version: str | None = None
    propagation_policy: str | None = None  # "Orphan" | "Background" | "Foreground"
    orphan_dependents: bool | None = None
    ignore_store_read_error: bool = False


# An update or patch: called with the current object (None when it does not exist) and
# returns the object to store. The handler builds it: PUT returns the body (after checking
# its resourceVersion is not stale is the store's job, through the CAS), PATCH applies the
# patch to a deep copy of the current object. Raise APIError to abort.
TransformFunc = Callable[[Object | None], Awaitable[Object]]


@dataclass(frozen=True, slots=True, kw_only=True)
class WatchItem:
    """One event for the handler to frame: ``type`` ADDED / MODIFIED / DELETED / BOOKMARK /
    ERROR; ``object`` is the full object (BOOKMARK: kind, apiVersion and metadata with only
    resourceVersion and, for the initial-events end, the annotation); for ERROR a Status
    dict."""

    type: str
    object: Object


class WatchStream(Protocol):
    def __aiter__(self) -> AsyncIterator[WatchItem]: ...

    def stop(self) -> None:
        """End the stream (client went away or timeout); idempotent."""


# A direct consumer of watch items, called as (type, object) with what the stream would
# yield as WatchItem(type, object), in the stream's order; False when it cannot take the
# item now (it is then yielded by the iterator). Never raises.
ItemSink = Callable[[str, Object], bool]


@runtime_checkable
class DirectWatchStream(WatchStream, Protocol):
    """Optional extra of a WatchStream: ``attach_sink`` asks for items to be handed to
    ``sink`` while the iterator is idle (see ``storage.interface.DirectWatcher``); False when
    the stream cannot (its items then all come from the iterator). Call it before iterating.
    ERROR items always come from the iterator."""

    def attach_sink(self, sink: ItemSink) -> bool: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Column:
    """A Table column definition (meta.plat.io/v1 TableColumnDefinition)."""

    name: str
    type: str  # "string" | "integer" | "number" | "boolean" | "date"
    format: str = ""  # "name" for the Name column
    description: str = ""
    priority: int = 0


class RESTStore(Protocol):
    """One resource or sub-resource. ``info`` describes it (the catalog entry). A store may
    not support every verb: ``info.verbs`` lists those it does; the handler answers 405 for
    the others before calling it."""

    @property
    def info(self) -> ResourceInfo: ...

    def new_list_kind(self) -> str:
        """``ConfigMapList``."""

    async def get(self, ctx: Context, name: str, opts: GetOptions) -> Object:
        """The object (404 NotFound; 504 with Retry-After for a too-large version)."""

    async def list(self, ctx: Context, opts: ListOptions) -> Object:
        """The ``<Kind>List`` object with ``metadata`` (resourceVersion, continue,
        remainingItemCount per SPEC 2.2) and ``items`` (each with kind and apiVersion)."""

    async def watch(self, ctx: Context, opts: ListOptions) -> WatchStream:
        """A stream of events (SPEC 6.1). Selector filtering follows the object across
        matching states (stops matching -> DELETED). A too-old version yields one ERROR
        event with a 410 Status, then the end of the stream."""

    async def create(self, ctx: Context, obj: Object, opts: WriteOptions) -> Object:
        """Create (generateName with retry on collision, uid, creationTimestamp, generation
        1, namespace from the context). 409 AlreadyExists, 422 Invalid, 403 for a namespace
        that is terminating (upstream's message)."""

    async def update(
        self, ctx: Context, name: str, transform: TransformFunc, opts: WriteOptions,
        *, force_allow_create: bool = False,
    ) -> tuple[Object, bool]:
        """Update through ``transform`` with compare-and-swap; returns (object, created).
        A non-empty metadata.resourceVersion in the transformed object that differs from the
        stored one is a 409 Conflict (``the object has been modified; please apply your
        changes to the latest version and try again``). Creates when absent and the kind
        allows create-on-update (or ``force_allow_create``). Spec changes bump generation;
        status changes through the main resource are ignored where the strategy resets
        status (and vice versa for the status sub-resource)."""

    async def delete(
        self, ctx: Context, name: str, opts: DeleteOptions,
    ) -> tuple[Object, bool]:
        """Graceful delete (SPEC 3.1). Returns (result, deleted_now). As upstream's generic
        store: when finalizers remain, result is the object with deletionTimestamp set and
        deleted_now False; when the object is gone, result is a ``Status`` with
        ``status: Success`` and details {name, group, kind (the resource), uid} (kinds whose
        strategy returns the deleted object return it instead). The handler answers 200, or
        202 when not deleted now and ``orphanDependents`` is false (upstream)."""

    async def delete_collection(
        self, ctx: Context, opts: DeleteOptions, list_opts: ListOptions,
    ) -> Object:
        """Delete every matching object; returns the ``<Kind>List`` of what was deleted."""

    def table_columns(self) -> builtins.list[Column]:
        """Column definitions for Table output (default: Name, Created At)."""

    def table_cells(self, obj: Object) -> builtins.list[Any]:
        """One row's cells, in column order."""

"""The storage interface (upstream ``k8s.io/apiserver/pkg/storage/interfaces.go``), async.

Objects are plain ``dict`` trees (decoded JSON). In the store they are JSON bytes under
``/registry/<group>/<resource>/<namespace>/<name>`` (core group: ``/registry/<resource>/...``)
without ``metadata.resourceVersion``; every object an implementation returns has
``metadata.resourceVersion`` set to the decimal string of the key's mod_revision.

Ownership: objects returned by an implementation may be shared with a cache (the cacher hands
out the same dict to every reader). Treat them as read-only; ``copy.deepcopy`` before changing.
Objects passed in are not kept after the call returns (implementations encode them).

Keys passed to ``get_list`` and ``watch`` with ``recursive=True`` are prefixes; an
implementation appends ``/`` when it is missing, so ``/registry/configmaps/ns1`` never matches
``ns10``.

Every method raises ``storage.errors.StorageError`` and nothing else for expected failures.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from storage.errors import StorageError

Object = dict[str, Any]

# resourceVersionMatch values (SPEC 8.1); "" is unset.
RV_MATCH_EXACT = "Exact"
RV_MATCH_NOT_OLDER_THAN = "NotOlderThan"


@dataclass(frozen=True, slots=True, kw_only=True)
class Predicate:
    """Selection predicate (upstream ``SelectionPredicate``). ``matches`` is called on full
    objects; ``everything`` True means no selector was given (then remainingItemCount may be
    reported and the cacher may skip filtering). ``label_selector`` / ``field_selector`` are
    the original strings, for logs and for indexes."""

    matches: Callable[[Object], bool] = field(default=lambda obj: True)
    everything: bool = True
    label_selector: str = ""
    field_selector: str = ""


EVERYTHING = Predicate()


@dataclass(frozen=True, slots=True, kw_only=True)
class Preconditions:
    """Delete / update preconditions on the stored object (None: not checked).
    A mismatch raises StorageError(CONFLICT) with upstream's message, e.g.
    ``Precondition failed: UID in precondition: X, UID in object meta: Y``."""

    uid: str | None = None
    resource_version: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GetOptions:
    """``resource_version``: "" -> the latest (quorum read); "0" -> any version (the cacher
    may answer from memory); "N" -> not older than N (StorageError TOO_LARGE_RESOURCE_VERSION
    when the store has not reached N within a few seconds)."""

    resource_version: str = ""
    ignore_not_found: bool = False  # return None instead of raising KEY_NOT_FOUND


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOptions:
    """Options of ``get_list`` and ``watch`` (upstream ``storage.ListOptions``).

    List semantics are SPEC 8.1 exactly: the handler has already rejected invalid cells, so an
    implementation sees only valid combinations. ``continue_token`` (opaque, produced by this
    layer) carries its own revision; ``limit`` 0 means no limit. Paging with a predicate never
    returns an empty page while items remain: it keeps reading until ``limit`` matching items
    are found or the range ends.

    For ``watch``: ``resource_version`` "" -> synthetic ADDED for the current state (consistent
    read) then changes; "0" -> the same from any recent state; "N" -> every change after N.
    ``send_initial_events`` True (with NotOlderThan) -> synthetic ADDED then, when
    ``allow_watch_bookmarks``, one BOOKMARK whose object carries the annotation
    ``k8s.io/initial-events-end: "true"`` (renamed ``plat.io/initial-events-end``).
    ``progress_notify`` lets an implementation emit BOOKMARK events (only when
    ``allow_watch_bookmarks``). ``timeout_seconds`` (0: none) is when the caller will end the
    watch; the watch cache sends its bookmark two seconds before (upstream cacheWatcher
    nextBookmarkTime), so that a client resumes from a recent revision."""

    resource_version: str = ""
    resource_version_match: str = ""
    limit: int = 0
    continue_token: str = ""
    predicate: Predicate = EVERYTHING
    recursive: bool = True
    allow_watch_bookmarks: bool = False
    send_initial_events: bool | None = None
    timeout_seconds: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ListResult:
    items: list[Object]
    resource_version: int  # the list's revision (ListMeta.resourceVersion)
    continue_token: str = ""  # "" when complete
    remaining_item_count: int | None = None  # None with a selector or when nothing remains


WatchEventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]


@dataclass(frozen=True, slots=True, kw_only=True)
class WatchEvent:
    """One watch event. ``object`` is the new state (for DELETED: the last state, with
    resourceVersion set to the deletion's revision, as upstream); for BOOKMARK an object
    with only ``kind``/``apiVersion`` absent and ``metadata.resourceVersion`` set (the
    handler fills kind/apiVersion). ERROR carries ``error`` (e.g. RESOURCE_EXPIRED with
    upstream's ``too old resource version: X (Y)``) and ends the stream."""

    type: WatchEventType
    object: Object
    error: StorageError | None = None


class Watcher(Protocol):
    """An async iterator of WatchEvents. Iteration ends after ``stop()``, after an ERROR
    event, or when the implementation closes a slow watcher (it then emits no ERROR: the
    client sees the stream end and re-watches from its last resourceVersion, as upstream).
    Never skips events silently."""

    def __aiter__(self) -> AsyncIterator[WatchEvent]: ...

    def stop(self) -> None:
        """Stop the watch; idempotent; safe from any task of the loop."""


@runtime_checkable
class ProgressRequester(Protocol):
    """Optional extra of a backend Watcher (etcd's WatchProgressRequest): after
    ``request_progress()`` a watch opened with ``allow_watch_bookmarks`` soon yields a BOOKMARK
    at the store's current revision, ordered after every event at or below it. The cacher
    uses it to serve consistent lists from memory on a prefix with no recent writes (upstream
    ``RequestWatchProgress``); without it the cacher falls back to the backend for them."""

    async def request_progress(self) -> None: ...


# A direct consumer of watch events: called with the type and object of the next event in
# the stream's order (the object as the sink's transform made it, if it has one); returns
# False when it cannot take the event now (the event then waits in the watcher's queue for
# the iterator, as every event would without a sink). Never raises.
WatchSink = Callable[[str, Object], bool]
# What a direct consumer makes of an event's object before its sink sees it:
# (type, object) -> object, e.g. the API's kind and apiVersion added. Watchers given the same
# function object share its result: it runs once per event for all of them, not once per
# watcher, so it must depend on nothing but its arguments. It may raise; the event then
# goes through the iterator, which meets the failure.
SinkTransform = Callable[[str, Object], Object]


@runtime_checkable
class DirectWatcher(Protocol):
    """Optional extra of a Watcher (the watch cache's): events may be handed to ``sink``
    synchronously from the dispatcher instead of waking the iterating task, whenever the
    iterator is idle, i.e. it asked for the next event and nothing is queued. Order is kept:
    the sink sees event N+1 only after every earlier event was handed to it or returned by
    the iterator. A refused event turns the sink off until the iterator has drained the
    queue again. The iterator still ends the stream (stop, close, slow watcher) as usual.
    ERROR events never reach the sink."""

    def attach_sink(self, sink: WatchSink, transform: SinkTransform | None = None) -> None: ...


# guaranteed_update's callback: (current object, or None when absent and ignore_not_found)
# -> the new object. Raise StorageError or any API error to abort (it propagates unchanged).
# Returning an object equal to the current one is a no-op: nothing is written and the
# current object (same resourceVersion) is returned.
UpdateFunc = Callable[[Object | None], Awaitable[Object]]
# delete's validation callback: called with the current object before the delete; raise to
# abort (it propagates unchanged).
ValidateDeletion = Callable[[Object], Awaitable[None]]


class Interface(Protocol):
    async def create(self, key: str, obj: Object, *, ttl: int = 0) -> Object:
        """Store ``obj`` at ``key`` only if the key does not exist (a txn comparing
        mod_revision == 0). Returns the stored object with resourceVersion set. With
        ``ttl`` (seconds) the key is deleted by the store after at least that long (a
        lease; events). Raises KEY_EXISTS."""

    async def get(self, key: str, opts: GetOptions) -> Object | None:
        """The object at ``key`` (see GetOptions for resource_version). Raises KEY_NOT_FOUND
        (unless ``ignore_not_found``), TOO_LARGE_RESOURCE_VERSION."""

    async def get_list(self, key: str, opts: ListOptions) -> ListResult:
        """Objects under prefix ``key`` (recursive) or the one object at ``key``, filtered by
        ``opts.predicate``, following SPEC 8.1 for resource_version / match / limit / continue.
        Raises RESOURCE_EXPIRED (compacted revision or expired continue token, with the fresh
        inconsistent continue token when upstream gives one), TOO_LARGE_RESOURCE_VERSION,
        INVALID (a continue token that does not decode or names another prefix)."""

    async def guaranteed_update(
        self,
        key: str,
        update: UpdateFunc,
        *,
        ignore_not_found: bool = False,
        preconditions: Preconditions | None = None,
        cached_existing: Object | None = None,
        ttl: int = 0,
    ) -> Object:
        """Read-modify-write with compare-and-swap on mod_revision, retrying ``update`` on a
        lost race with the freshly read object. ``cached_existing`` may be used as the first
        guess (a stale guess costs one retry). ``ttl`` as for ``create``, from the write.
        Preconditions are checked against the current object on every attempt. Raises
        KEY_NOT_FOUND (absent and not ignore_not_found), CONFLICT (preconditions), whatever
        ``update`` raises."""

    async def delete(
        self,
        key: str,
        *,
        preconditions: Preconditions | None = None,
        validate_deletion: ValidateDeletion | None = None,
        cached_existing: Object | None = None,
    ) -> Object:
        """Delete ``key`` if it still holds the object validated (CAS on mod_revision, retried
        on a lost race). Returns the last state of the object. Raises KEY_NOT_FOUND, CONFLICT,
        whatever ``validate_deletion`` raises."""

    async def watch(self, key: str, opts: ListOptions) -> Watcher:
        """Watch ``key`` (prefix when ``opts.recursive``). Filtering by ``opts.predicate``
        uses old and new state: an object that starts matching arrives as ADDED, one that stops
        matching as DELETED, as upstream. A resource_version older than the retained history
        gives a watcher whose single event is ERROR with RESOURCE_EXPIRED (not an exception),
        as upstream. Raises TOO_LARGE_RESOURCE_VERSION only for a version the store has not
        reached within a few seconds."""

    async def current_revision(self) -> int:
        """The store's current revision (a quorum read)."""

    async def compact(self, revision: int) -> None:
        """Compact the store's history up to ``revision`` (ignores an already-compacted
        revision)."""

    async def compacted_revision(self) -> int:
        """The last revision compacted (0 if never)."""

    async def count(self, key: str) -> int:
        """Number of objects under prefix ``key`` (for apiserver_storage_objects)."""

    async def close(self) -> None:
        """Release connections and background tasks; idempotent."""

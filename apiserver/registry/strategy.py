"""Per-kind behaviour of the generic store (upstream ``rest.RESTCreateStrategy``,
``RESTUpdateStrategy``, ``RESTDeleteStrategy``, ``ResetFieldsStrategy`` and the store's
options). A kind subclasses ``Strategy`` and overrides what differs; a sub-resource store uses
a second strategy for the same kind (``status_strategy()``).

Hooks run in upstream's order. Create: ``default`` -> ``prepare_for_create`` -> metadata and
``validate`` -> ``canonicalize``. Update: ``default`` -> ``prepare_for_update`` (resets what
this endpoint may not change, bumps generation) -> metadata and ``validate_update``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol

from apiserver import selectors
from apiserver.api import printers
from apiserver.registry import tables
from apiserver.registry import validation as v
from apiserver.registry.treecopy import deep_copy

if TYPE_CHECKING:
    from apiserver.registry.interface import Column
    from apiserver.registry.validation import Cause
    from apiserver.selectors import FieldGetter
    from storage.interface import Interface

Object = dict[str, Any]

# DefaultGarbageCollectionPolicy values
GC_DELETE_DEPENDENTS = "DeleteDependents"
GC_ORPHAN_DEPENDENTS = "OrphanDependents"
GC_UNSUPPORTED = "Unsupported"


class Allocation(Protocol):
    """What ``Strategy.allocate`` reserved for one write (service IPs and node ports)."""

    async def commit(self) -> None:
        """The write is stored: release what the old object held and the new one does not."""

    async def rollback(self) -> None:
        """The write failed: release what was reserved for it."""


# ObjectMeta's maps and lists, all ``omitempty`` upstream (managedFields is not here: an empty
# list in a request asks for its reset).
_META_OMIT_EMPTY: Final = ("labels", "annotations", "finalizers", "ownerReferences")


class Strategy:
    group: ClassVar[str] = ""
    # The group whose keys hold the objects when it differs from the served group
    # (events.plat.io/v1 Events are stored with core v1 Events).
    storage_group: ClassVar[str | None] = None
    version: ClassVar[str] = "v1"
    kind: ClassVar[str] = ""
    resource: ClassVar[str] = ""
    singular: ClassVar[str] = ""
    namespaced: ClassVar[bool] = True
    short_names: ClassVar[tuple[str, ...]] = ()
    categories: ClassVar[tuple[str, ...]] = ()
    allow_create_on_update: ClassVar[bool] = False
    allow_unconditional_update: ClassVar[bool] = True
    # The whole object is returned from a delete instead of a Status (upstream
    # ReturnDeletedObject: namespaces).
    return_deleted_object: ClassVar[bool] = False
    # kept by the store for --event-ttl after each write (events), as upstream's TTLFunc
    uses_event_ttl: ClassVar[bool] = False
    gc_policy: ClassVar[str] = GC_DELETE_DEPENDENTS
    # Kinds with a spec whose changes bump metadata.generation (generation starts at 1).
    tracks_generation: ClassVar[bool] = False
    # The main resource keeps the stored .status on update (a status sub-resource exists).
    has_status: ClassVar[bool] = False
    # Field selectors beyond ``common_fields``.
    field_getters: ClassVar[Mapping[str, FieldGetter]] = {}
    common_fields: ClassVar[Mapping[str, FieldGetter]] = selectors.COMMON_FIELDS
    # Top-level fields with a JSON type the decoder enforces (field -> Go type), see shape.
    typed_fields: ClassVar[Mapping[str, str]] = {}
    # Which endpoint this strategy serves: "" main resource, "status", "finalize".
    subresource: ClassVar[str] = ""

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def storage_group_version(self) -> str:
        """The apiVersion objects carry in the store."""
        g = self.group if self.storage_group is None else self.storage_group
        return f"{g}/{self.version}" if g else self.version

    def field_label_error(self, label: str) -> str:
        """The message for an unsupported field selector label."""
        return selectors.default_unsupported(label)

    def configure(self, gates: Mapping[str, bool]) -> None:
        """Take the server's feature gates (by name; missing means off). Called once when
        the catalog builds the store."""

    def name_errors(self, name: str) -> list[str]:
        """Name rule of the kind (upstream NameIsDNSSubdomain for most)."""
        return v.dns1123_subdomain_errors(name)

    def default(self, obj: Object) -> None:
        """Defaulting of the served version (upstream SetDefaults_*), on create and update."""

    # Top-level fields Go writes with omitempty that this kind holds as maps or lists: empty,
    # they are not kept (ObjectMeta's are dropped for every kind: drop_empty_fields).
    omit_empty: tuple[str, ...] = ()

    def drop_empty_fields(self, obj: Object) -> None:
        """What an object read back from upstream lacks when it was sent empty: Go decodes
        into typed structs whose optional maps and lists are ``omitempty``, so ``labels: {}``
        or ``finalizers: []`` are gone (and own no field). Run before the field manager and
        the store's checks."""
        meta = obj.get("metadata")
        if type(meta) is dict:
            for key in _META_OMIT_EMPTY:
                if key in meta and meta[key] in ({}, []):
                    del meta[key]
        for key in self.omit_empty:
            if key in obj and obj[key] in ({}, []):
                del obj[key]

    def prepare_for_create(self, obj: Object) -> None:
        if self.has_status:
            obj.pop("status", None)
        if self.tracks_generation:
            obj["metadata"]["generation"] = 1

    def prepare_for_update(self, new: Object, old: Object) -> None:
        if self.subresource == "status":
            # a status update may not change the spec (upstream status strategies)
            for k in list(new):
                if k not in ("status", "metadata", "kind", "apiVersion"):
                    new.pop(k)
            for k, val in old.items():
                if k not in ("status", "metadata", "kind", "apiVersion"):
                    new[k] = deep_copy(val)
            return
        if self.has_status:
            if "status" in old:
                new["status"] = deep_copy(old["status"])
            else:
                new.pop("status", None)
        if self.tracks_generation and new.get("spec") != old.get("spec"):
            new["metadata"]["generation"] = int(old["metadata"].get("generation") or 0) + 1

    def validate(self, obj: Object) -> list[Cause]:
        return []

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        return self.validate(new)

    def canonicalize(self, obj: Object) -> None:
        """Normalize after validation (upstream Canonicalize)."""

    async def allocate(self, storage: Interface, new: Object, old: Object | None,
                       dry_run: bool) -> Allocation | None:
        """Reserve what the object needs outside itself before it is written (``old`` is None
        on create); may fill fields of ``new`` and raise a 422. Dry runs only check."""
        return None

    async def release(self, storage: Interface, obj: Object) -> None:
        """The object was removed from storage: free what ``allocate`` reserved for it."""

    def table_columns(self) -> list[Column]:
        """Table columns: upstream's printer for the kind (``apiserver.api.printers``, by
        group and kind), else the default Name / Created At."""
        printer = printers.printer_for(self.group, self.kind)
        return list(printer.columns if printer is not None else tables.DEFAULT_COLUMNS)

    def table_cells(self, obj: Object) -> list[Any]:
        """One row's cells, one per column of ``table_columns``."""
        printer = printers.printer_for(self.group, self.kind)
        return printer.cells(obj) if printer is not None else tables.default_cells(obj)

    def for_subresource(self, subresource: str) -> Strategy:
        """A copy of this strategy serving ``subresource``."""
        sub = copy.copy(self)
        object.__setattr__(sub, "subresource", subresource)
        return sub


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def dict_at(holder: dict[str, Any], key: str) -> dict[str, Any]:
    """``holder[key]`` as an object for defaulting into: a missing or non-object value is
    replaced with ``{}``."""
    value = holder.get(key)
    if not isinstance(value, dict):
        value = holder[key] = {}
    return value


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []

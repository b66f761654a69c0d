"""The field manager of one endpoint (resource or sub-resource at one API version): records
field ownership in ``metadata.managedFields`` on every write and performs server-side apply
(upstream ``k8s.io/apimachinery/pkg/util/managedfields/internal``: ``fieldmanager.go`` and
the managers it chains, innermost last)::

    versionCheck      apply: the configuration's apiVersion/kind must be the endpoint's
    lastAppliedUpdater  apply by "kubectl": keeps client-side apply's annotation in step
    lastAppliedManager  apply by "kubectl": conflicts on fields the last-applied annotation
                      still describes are forced (client-side -> server-side upgrade)
    capManagers       at most 10 Update entries, older ones merged into "ancient-changes"
    buildManagerInfo  manager name -> identifier (operation, apiVersion, sub-resource)
    managedFieldsUpdater  an update's fields join the manager's entry; its time is now
    stripMeta         nobody owns apiVersion, kind, metadata.name, uid, resourceVersion, ...
    structuredMerge   the Updater over the schema

Errors are API errors (:class:`apiserver.status.APIError`): 409 for conflicts, 400 for a bad
configuration, 500 when stored managedFields cannot be read.
"""

from __future__ import annotations

import json
import marshal
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from apiserver import status
from apiserver.api.gofmt import go_format

from . import managedfields as mf
from .fieldpath import EMPTY, FieldSet, parse_path, path_string
from .options import printable
from .typed import MISSING, Atom, TypedError, compile_node, for_kind, to_field_set
from .typed_compare import compare
from .updater import Conflicts, ManagedFields, Updater, VersionedSet

# what stock kubectl writes on client-side apply (kubectl's own name, not renamed)
LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"
# only applies with this manager name upgrade from / keep in step with client-side apply
KUBECTL_MANAGER: Final = "kubectl"
BEFORE_FIRST_APPLY: Final = "before-first-apply"
FIELD_MANAGER_MAX_LENGTH: Final = 128
ANNOTATIONS_MAX_BYTES: Final = 256 * 1024

STRIPPED: Final = FieldSet.of(
    ("f:apiVersion",), ("f:kind",), ("f:metadata",),
    *(("f:metadata", "f:" + n) for n in (
        "name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName",
        "generation", "managedFields", "resourceVersion")),
)
_CURRENT: Final = "current-operation"

# Struct fields Go always writes (non-pointer structs), so that the zero object a create
# compares against has them: their absence there would make the creator own them as
# members, which upstream's zero object does not.
_ALWAYS_PRESENT: Final = frozenset({"metadata", "spec", "status", "template", "strategy",
                                    "updateStrategy", "jobTemplate"})


def manager_from_user_agent(user_agent: str) -> str:
    """Upstream ``prefixFromUserAgent``: the part before the first ``/``, printable
    characters only, at most 128 bytes."""
    out: list[str] = []
    size = 0
    for ch in user_agent.split("/", 1)[0]:
        if not printable(ch):
            continue
        n = len(ch.encode())
        if size + n > FIELD_MANAGER_MAX_LENGTH:
            break
        out.append(ch)
        size += n
    return "".join(out)


def manager_or_user_agent(field_manager: str | None, user_agent: str) -> str:
    return field_manager if field_manager else manager_from_user_agent(user_agent)


@dataclass(frozen=True, slots=True, kw_only=True)
class ApplyResult:
    """The object after an apply (managedFields set) and whether it differs from the live
    object; an unchanged apply returns the live object with the same managedFields, so
    storage need not write."""

    object: dict[str, Any]
    changed: bool


def _print_manager(ident: str) -> str:
    info = mf.parse_identifier(ident)
    if not info:
        return json.dumps(ident)
    out = json.dumps(info.get("manager", ""), ensure_ascii=False)
    if info.get("subresource"):
        out += f' with subresource {json.dumps(info["subresource"], ensure_ascii=False)}'
    if info.get("operation") == mf.UPDATE:
        out += f" using {info.get('apiVersion', '')}"
    return out


def conflict_error(conflicts: Conflicts) -> status.APIError:
    """The 409 of upstream ``NewConflictError``."""
    items = conflicts.items
    causes = [{"reason": "FieldManagerConflict",
               "message": f"conflict with {_print_manager(m)}",
               "field": path_string(p)} for m, p in items]
    if len(items) == 1:
        m, p = items[0]
        message = (f"Apply failed with 1 conflict: conflict with {_print_manager(m)}: "
                   f"{path_string(p)}")
    else:
        lines: list[str] = []
        by_manager: dict[str, list[str]] = {}
        for m, p in items:
            by_manager.setdefault(m, []).append(path_string(p))
        for m in sorted(by_manager):
            lines.append(f"conflicts with {_print_manager(m)}:")
            lines.extend(f"- {p}" for p in by_manager[m])
        message = f"Apply failed with {len(items)} conflicts: " + "\n".join(lines)
    return status.APIError(409, "Conflict", message, details={"causes": causes})


class UnknownError(status.APIError):
    """A 500 without a reason, as upstream answers errors that are not API statuses (an
    applied configuration its typed objects cannot hold: undeclared field, item without
    its key, duplicate keys; kubernetes/kubernetes#122480)."""

    def __init__(self, message: str) -> None:
        super().__init__(500, "", message)

    def body(self) -> dict[str, Any]:
        out = super().body()
        out.pop("reason", None)
        return out


def _gvk_string(api_version: str, kind: str) -> str:
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={kind}"


class FieldManager:
    """Ownership for objects of one kind written through one endpoint.

    ``api_version`` is the endpoint's (``apps/v1``); ``subresource`` is ``""`` or e.g.
    ``status``; ``reset_fields`` are dotted paths nobody owns through this endpoint
    (upstream's strategy ResetFields: ``status`` on the main resource, ``spec`` on
    ``/status``)."""

    def __init__(self, atom: Atom, *, api_version: str, kind: str, subresource: str = "",
                 reset_fields: tuple[str, ...] = (),
                 max_update_managers: int = mf.MAX_UPDATE_MANAGERS) -> None:
        self.atom = atom
        self.api_version = api_version
        self.kind = kind
        self.subresource = subresource
        ignored = FieldSet.of(*(parse_path(p) for p in reset_fields)) if reset_fields \
            else EMPTY
        self.updater = Updater(atom=atom, api_version=api_version, ignored=ignored,
                               stripped=STRIPPED)
        self.max_update_managers = max_update_managers

    @classmethod
    def for_kind(cls, group: str, version: str, kind: str, *, subresource: str = "",
                 reset_fields: tuple[str, ...] = ()) -> FieldManager:
        atom = for_kind(group, version, kind)
        if atom is None:
            raise KeyError(f"no schema for {group}/{version} {kind}")
        return cls(atom, api_version=f"{group}/{version}" if group else version, kind=kind,
                   subresource=subresource, reset_fields=reset_fields)

    @classmethod
    def for_schema(cls, node: dict[str, Any], *, api_version: str, kind: str,
                   subresource: str = "", reset_fields: tuple[str, ...] = ()) -> FieldManager:
        return cls(compile_node(node), api_version=api_version, kind=kind,
                   subresource=subresource, reset_fields=reset_fields)

    # --- update ----------------------------------------------------------------------------

    def update(self, live: dict[str, Any] | None, new: dict[str, Any], manager: str, *,
               now: datetime | None = None) -> dict[str, Any]:
        """``new`` (a create when ``live`` is None) with managedFields recording that
        ``manager`` wrote it (upstream ``UpdateNoErrors``: never fails; an object whose
        fields cannot be tracked comes back without managedFields). ``new`` is not
        modified; the result shares all but its metadata with it."""
        try:
            return self._update(live, new, manager, now)
        except (TypedError, mf.ManagedFieldsError):
            out = dict(new)
            out["metadata"] = {k: v for k, v in (new.get("metadata") or {}).items()
                               if k != "managedFields"}
            return out

    def _update(self, live: dict[str, Any] | None, new: dict[str, Any], manager: str,
                now: datetime | None) -> dict[str, Any]:
        live_meta = (live or {}).get("metadata") or {}
        new_meta = new.get("metadata") or {}
        managed = self._decode_live_or_new(live_meta, new_meta)
        new_v = _without_managed_fields(new)
        live_v = self._zero_like(_without_managed_fields(live), new_v, self.atom)
        result = self._record_update(live_v, new_v, managed, manager, now)
        return _with_managed_fields(new_v, result)

    def _record_update(self, live_v: dict[str, Any], new_v: dict[str, Any],
                       managed: mf.Managed, manager: str, now: datetime | None) -> mf.Managed:
        """Ownership after ``manager``'s non-apply write of ``new_v`` over ``live_v``: the
        fields it changed join its entry, whose time is then now."""
        ident = mf.identifier(manager, mf.UPDATE, self.api_version, self.subresource)
        fields = self.updater.update(live_v, new_v, managed.fields, _CURRENT)
        fields = _strip(fields)
        times = dict(managed.times)
        cur = fields.pop(_CURRENT, None)
        if cur is not None:
            prev = fields.get(ident)
            s = cur.set if prev is None else cur.set.union(prev.set)
            fields[ident] = VersionedSet(set=s, api_version=cur.api_version, applied=False)
            times[ident] = mf.now_string(now)
        result = mf.Managed(fields=fields, times=times)
        return mf.cap_update_managers(result, self.max_update_managers)

    def _decode_live_or_new(self, live_meta: dict[str, Any],
                            new_meta: dict[str, Any]) -> mf.Managed:
        if self.subresource:
            return _decode_or_empty(live_meta.get("managedFields"))
        new_entries = new_meta.get("managedFields")
        if mf.is_reset(new_entries):
            return mf.Managed()
        live_entries = live_meta.get("managedFields")
        if new_entries is not None and new_entries == live_entries:
            return _decode_or_empty(live_entries)  # sent back as read: the live decoding
        try:
            managed = mf.decode(new_entries)
        except mf.ManagedFieldsError:
            managed = mf.Managed()
        if not managed.fields:
            return _decode_or_empty(live_entries)
        return managed

    def _zero_like(self, live: Any, new: Any, atom: Atom) -> dict[str, Any]:
        """``live`` (``{}`` for a create) with what Go's zero object of the kind has and
        ``new`` sets: the structs Go always writes (empty) and the required lists and maps
        it writes even when unset (null). Without them, the writer would own those structs
        and lists as members where upstream does not."""
        out: dict[str, Any] = live if type(live) is dict else {}
        if type(new) is not dict:
            return out
        required = _required(atom)
        copied = False
        for k, v in new.items():
            lv = out.get(k, MISSING)
            if k in _ALWAYS_PRESENT and type(v) is dict and (lv is MISSING or type(lv) is dict):
                ca, declared = atom.field(k)
                if not declared or ca.atomic or not ca.props:
                    continue
                zv = self._zero_like({} if lv is MISSING else lv, v, ca)
                if zv is lv:
                    continue
            elif lv is MISSING and k in required and type(v) in (dict, list):
                zv = None
            else:
                continue
            if not copied:
                out = dict(out)
                copied = True
            out[k] = zv
        return out

    # --- apply -----------------------------------------------------------------------------

    def apply(self, live: dict[str, Any] | None, config: dict[str, Any], manager: str, *,
              force: bool = False, now: datetime | None = None) -> ApplyResult:
        """``config`` applied by ``manager`` to ``live`` (None: the object is created).
        Raises APIError: 409 with every conflicting field (unless ``force``), 400 for a
        configuration of another kind or that sets managedFields, and upstream's reasonless
        500 for one its typed objects cannot hold (undeclared field, list item without its
        key, duplicate keys) or stored managedFields that cannot be read."""
        api_version = config.get("apiVersion")
        kind = config.get("kind")
        if api_version != self.api_version or kind != self.kind:
            raise status.bad_request(
                f"invalid object type: {_gvk_string(str(api_version or ''), str(kind or ''))}")
        meta = config.get("metadata")
        if isinstance(meta, dict) and meta.get("managedFields") is not None:
            raise status.bad_request("metadata.managedFields must be nil")
        if meta is not None and not isinstance(meta, dict):
            # the typed conversion of the configuration is where upstream stops (its %v of
            # an unstructured value prints the struct that wraps it)
            raise UnknownError(
                "failed to create typed patch object ("
                f"/; {_gvk_string(self.api_version, self.kind)}): "
                f".metadata: expected map, got &{{{go_format(meta)}}}")
        live_meta = (live or {}).get("metadata") or {}
        try:
            managed = mf.decode_shared(live_meta.get("managedFields"))
        except mf.ManagedFieldsError as e:
            raise UnknownError(f"failed to decode managed fields: {e}") from None
        live_v = _without_managed_fields(live) if live is not None else {}
        if live is not None and not managed.fields:
            # an object nobody owns yet (written before fields were tracked): what it has
            # is owned by "before-first-apply", so the first apply conflicts on changing it
            try:
                managed = self._record_update(self._zero_like({}, live_v, self.atom),
                                              live_v, managed, BEFORE_FIRST_APPLY, now)
            except TypedError as e:
                # a stored object the typed walk cannot hold (e.g. a keyed list item without
                # its key, which a create accepts, leaving the object untracked): upstream's
                # skipNonAppliedManager fails the apply with this reasonless 500
                raise UnknownError(
                    "failed to create manager for existing fields: failed to create typed "
                    f"new object ({live_meta.get('namespace') or ''}/"
                    f"{live_meta.get('name') or ''}; "
                    f"{_gvk_string(self.api_version, self.kind)}): {e}") from None
        ident = mf.identifier(manager, mf.APPLY, "", self.subresource)
        try:
            try:
                new, fields = self.updater.apply(live_v, config, managed.fields, ident, force)
            except Conflicts as conflicts:
                if manager != KUBECTL_MANAGER:
                    raise
                allowed = self._allowed_from_last_applied(live_v)
                if allowed is None:
                    raise
                rest = [(m, p) for m, p in conflicts.items if not allowed.has(p)]
                if rest:
                    raise Conflicts(rest) from None
                new, fields = self.updater.apply(live_v, config, managed.fields, ident, True)
        except Conflicts as conflicts:
            raise conflict_error(conflicts) from None
        except TypedError as e:
            meta = meta if isinstance(meta, dict) else {}
            raise UnknownError(
                "failed to create typed patch object ("
                f"{meta.get('namespace') or ''}/{meta.get('name') or ''}; "
                f"{_gvk_string(self.api_version, self.kind)}): {e}") from None
        fields = _strip(fields)
        times = dict(managed.times)
        changed = new is not MISSING
        if changed:
            times[ident] = mf.now_string(now)
            obj = _copy(new)
        else:
            obj = _copy(live_v)
        result = mf.cap_update_managers(mf.Managed(fields=fields, times=times),
                                        self.max_update_managers)
        # upstream looks at the object the apply produced (the live annotation merged in)
        if manager == KUBECTL_MANAGER and _has_last_applied(obj):
            changed = _set_last_applied(obj, config) or changed
        out = _with_managed_fields(obj, result)
        if not changed and live is not None:
            changed = (out.get("metadata") or {}).get("managedFields") != \
                live_meta.get("managedFields")
        return ApplyResult(object=out, changed=changed)

    def _allowed_from_last_applied(self, live: dict[str, Any]) -> FieldSet | None:
        """Fields the client-side apply annotation still describes exactly (upstream
        ``allowedConflictsFromLastApplied``); None when there is none to use."""
        annotations = (live.get("metadata") or {}).get("annotations") or {}
        text = annotations.get(LAST_APPLIED)
        if not text:
            return None
        try:
            last = json.loads(text)
        except ValueError:
            return None
        if not isinstance(last, dict) or last.get("apiVersion") != self.api_version:
            return None
        try:
            s = to_field_set(last, self.atom)
            cmp = compare(last, live, self.atom)
        except TypedError:
            return None
        return s.difference(cmp.modified).difference(cmp.added).difference(cmp.removed)


def _required(atom: Atom) -> frozenset[str]:
    node = atom.node
    req = node.get("required") if node is not None else None
    return frozenset(req) if isinstance(req, list) else frozenset()


def _copy(v: Any) -> Any:
    """A deep copy of parsed JSON: marshal (C, twice as fast as walking it in Python) for
    plain dicts, lists and scalars, a walk for anything else."""
    try:
        return marshal.loads(marshal.dumps(v))
    except ValueError:
        return _walk_copy(v)


def _walk_copy(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _walk_copy(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_walk_copy(x) for x in v]
    return v


def _decode_or_empty(entries: Any) -> mf.Managed:
    """The live object's entries (a stored object: cached decoding), empty when bad."""
    try:
        return mf.decode_shared(entries)
    except mf.ManagedFieldsError:
        return mf.Managed()


def _without_managed_fields(obj: dict[str, Any] | None) -> dict[str, Any]:
    if obj is None:
        return {}
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    out = dict(obj)
    out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return out


def _with_managed_fields(obj: dict[str, Any], managed: mf.Managed) -> dict[str, Any]:
    out = dict(obj)
    meta = dict(obj.get("metadata") or {})
    entries = mf.encode(managed)
    if entries:
        meta["managedFields"] = entries
    else:
        meta.pop("managedFields", None)
    out["metadata"] = meta
    return out


def _strip(fields: ManagedFields) -> ManagedFields:
    out: ManagedFields = {}
    for m, vs in fields.items():
        s = vs.set.difference(STRIPPED)
        if s.empty():
            continue
        out[m] = vs if s is vs.set else VersionedSet(set=s, api_version=vs.api_version,
                                                     applied=vs.applied)
    return out


def _has_last_applied(obj: dict[str, Any]) -> bool:
    annotations = (obj.get("metadata") or {}).get("annotations")
    return isinstance(annotations, dict) and bool(annotations.get(LAST_APPLIED))


def _set_last_applied(obj: dict[str, Any], config: dict[str, Any]) -> bool:
    """Writes the applied configuration (without the annotation) as client-side apply's
    annotation, as kubectl would have; True when that changed ``obj``."""
    cfg = dict(config)
    cmeta = dict(cfg.get("metadata") or {})
    cann = dict(cmeta.get("annotations") or {})
    cann.pop(LAST_APPLIED, None)
    if cmeta.get("annotations") is not None:
        cmeta["annotations"] = cann  # emptied stays {} as upstream's SetAnnotations leaves it
    if "metadata" in cfg:
        cfg["metadata"] = cmeta
    value = json.dumps(cfg, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"
    for c, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        value = value.replace(c, esc)
    meta = obj.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    old = annotations.get(LAST_APPLIED)
    annotations[LAST_APPLIED] = value
    if sum(len(k) + len(v) for k, v in annotations.items()) > ANNOTATIONS_MAX_BYTES:
        del annotations[LAST_APPLIED]
    meta["annotations"] = annotations
    return annotations.get(LAST_APPLIED) != old

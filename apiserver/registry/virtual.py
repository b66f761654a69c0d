"""Resources and sub-resources that are not stored objects (upstream's hand-written REST
handlers): the review resources (SelfSubjectReview, TokenReview, SubjectAccessReview,
LocalSubjectAccessReview, SelfSubjectAccessReview, SelfSubjectRulesReview) answered from the
server's authenticator and authorizer, bindings and pods/binding (assign a pod to a node),
pods/eviction (delete a pod, unless a PodDisruptionBudget forbids it), componentstatuses, and
the sub-resources that need a node agent or a token signer, which answer a clear error.
"""

from __future__ import annotations

import builtins
import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from apiserver import status
from apiserver.registry import tables
from apiserver.registry import validation as v
from apiserver.registry.interface import (
    Column,
    Context,
    DeleteOptions,
    GetOptions,
    ListOptions,
    Object,
    TransformFunc,
    WriteOptions,
)
from apiserver.registry.partial import PartialStore
from apiserver.registry.strategy import as_dict, as_list
from apiserver.registry.treecopy import deep_copy
from apiserver.request import RequestInfo, UserInfo
from storage.errors import StorageError

if TYPE_CHECKING:
    from apiserver.authn.interface import Authenticator
    from apiserver.authz.interface import Authorizer
    from apiserver.registry.interface import RESTStore
    from apiserver.resources import ResourceInfo

StoreKey = tuple[str, str, str]
AUTHN_GROUP = "authentication.plat.io"
AUTHZ_GROUP = "authorization.plat.io"


@dataclass(slots=True, kw_only=True)
class AuthDelegates:
    """The server's authorizer and authenticator, bound after the stores are built."""

    authorizer: Authorizer | None = None
    authenticator: Authenticator | None = None


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class VirtualStore(PartialStore):
    """A ``RESTStore`` answering only the verbs its resource lists; the others are 405."""

    def __init__(self, info: ResourceInfo, stores: Mapping[StoreKey, RESTStore],
                 auth: AuthDelegates) -> None:
        self._info = info
        self.stores = stores
        self.auth = auth

    def new_list_kind(self) -> str:
        return (self._info.sub_kind or self._info.kind) + "List"

    def table_columns(self) -> builtins.list[Column]:
        return list(tables.DEFAULT_COLUMNS)

    def table_cells(self, obj: Object) -> builtins.list[Any]:
        return tables.default_cells(obj)

    # -- helpers ------------------------------------------------------------------------------

    def _answer(self, obj: Object, st: Object) -> Object:
        """The request object echoed back with its status (upstream review REST)."""
        out = deep_copy(obj)
        meta = as_dict(out.get("metadata"))
        meta.setdefault("creationTimestamp", None)
        out["metadata"] = meta
        out["status"] = st
        return out


def _user_info(user: UserInfo) -> Object:
    out: Object = {"username": user.name}
    if user.uid:
        out["uid"] = user.uid
    if user.groups:
        out["groups"] = list(user.groups)
    if user.extra:
        out["extra"] = {k: list(val) for k, val in user.extra.items()}
    return out


# ---- authentication.plat.io -----------------------------------------------------------------


class SelfSubjectReviewStore(VirtualStore):
    """Answers with the requesting user (upstream selfsubjectreview REST)."""

    async def create(self, ctx: Context, obj: Object, opts: WriteOptions) -> Object:
        return self._answer(obj, {"userInfo": _user_info(ctx.user)})


class TokenReviewStore(VirtualStore):
    """Authenticates ``spec.token`` through the configured authenticators."""

    async def create(self, ctx: Context, obj: Object, opts: WriteOptions) -> Object:
        meta = as_dict(obj.get("metadata"))
        if meta.get("namespace"):
            raise status.bad_request(f"namespace is not allowed on this type: "
                                     f"{meta['namespace']}")
        spec = as_dict(obj.get("spec"))
        token = spec.get("token")
        if not isinstance(token, str) or not token:
            raise status.bad_request(f"token is required for TokenReview in {AUTHN_GROUP}")
        user = await self._authenticate(token)
        audiences = [str(a) for a in as_list(spec.get("audiences"))]
        st: Object
        if user is None:
            st = {"user": {}, "error": "invalid bearer token"}
        else:
            st = {"authenticated": True, "user": _user_info(user)}
        if audiences:
            st["audiences"] = audiences
        return self._answer(obj, st)

    async def _authenticate(self, token: str) -> UserInfo | None:
        authn = self.auth.authenticator
        if authn is None:
            return None
        from aiohttp.test_utils import make_mocked_request

        request = make_mocked_request("GET", "/", headers={"Authorization": f"Bearer {token}"})
        try:
            user = await authn.authenticate(request)
        except status.APIError:
            return None
        if user is None or user.name == "system:anonymous":
            return None
        return user


# ---- authorization.plat.io ------------------------------------------------------------------


def _go_struct(name: str, fields: Object, keys: tuple[str, ...]) -> v.Raw:
    """Go's %#v of a small struct of strings (how field.Invalid prints it)."""
    inner = ", ".join(f"{k[0].upper()}{k[1:]}:{v.go_quote(str(fields.get(k) or ''))}"
                      for k in keys)
    return v.Raw(f"{name}{{{inner}}}")


def _attributes_causes(spec: Object) -> builtins.list[v.Cause]:
    """ValidateSubjectAccessReviewSpec: exactly one of the two attribute sets."""
    ra, nra = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if ra is not None and nra is not None:
        return [v.invalid("spec.nonResourceAttributes",
                          _go_struct("authorization.NonResourceAttributes", as_dict(nra),
                                     ("path", "verb")),
                          "cannot be specified in combination with resourceAttributes")]
    if ra is None and nra is None:
        return [v.invalid("spec.resourceAttributes", "null",
                          "exactly one of nonResourceAttributes or resourceAttributes must be "
                          "specified")]
    return []


def _metadata_causes(obj: Object, *, namespace_allowed: bool = False) -> builtins.list[v.Cause]:
    """A review's metadata must be empty (LocalSubjectAccessReview: but for the namespace)."""
    meta = {k: val for k, val in as_dict(obj.get("metadata")).items()
            if val not in (None, "", [], {}) and k != "managedFields"
            and not (namespace_allowed and k == "namespace")}
    if not meta:
        return []
    keys = ("name", "generateName", "namespace", "uid", "resourceVersion")
    shown = _go_struct("v1.ObjectMeta", as_dict(obj.get("metadata")), keys)
    return [v.invalid("metadata", shown, "must be empty except for namespace"
                      if namespace_allowed else "must be empty")]


def _request_info(spec: Object, namespace_override: str | None = None) -> RequestInfo:
    ra = spec.get("resourceAttributes")
    if isinstance(ra, dict):
        ns = str(ra.get("namespace") or "") if namespace_override is None \
            else namespace_override
        return RequestInfo(is_resource_request=True, path="", verb=str(ra.get("verb") or ""),
                           api_group=str(ra.get("group") or ""),
                           api_version=str(ra.get("version") or ""), namespace=ns,
                           resource=str(ra.get("resource") or ""),
                           subresource=str(ra.get("subresource") or ""),
                           name=str(ra.get("name") or ""))
    nra = as_dict(spec.get("nonResourceAttributes"))
    return RequestInfo(is_resource_request=False, path=str(nra.get("path") or ""),
                       verb=str(nra.get("verb") or ""))


class _AccessReviewStore(VirtualStore):
    kind = ""

    def subject(self, ctx: Context, obj: Object) -> UserInfo:
        return ctx.user

    def validate(self, ctx: Context, obj: Object) -> builtins.list[v.Cause]:
        return _attributes_causes(as_dict(obj.get("spec"))) + _metadata_causes(obj)

    async def create(self, ctx: Context, obj: Object, opts: WriteOptions) -> Object:
        spec = as_dict(obj.get("spec"))
        causes = self.validate(ctx, obj)
        if causes:
            raise status.invalid(self.kind, AUTHZ_GROUP, "", causes)
        user = self.subject(ctx, obj)
        info = _request_info(spec, self.namespace_override(ctx))
        st: Object = {"allowed": False}
        authz = self.auth.authorizer
        if authz is None:
            st["reason"] = "no authorizer is configured"
            return self._answer(obj, st)
        try:
            d = await authz.authorize(user, info)
        except Exception as e:  # an evaluation failure is reported, not raised (upstream)
            st["evaluationError"] = str(e)
            return self._answer(obj, st)
        if d.decision == "allow":
            st["allowed"] = True
        elif d.decision == "deny":
            st["denied"] = True
        if d.reason:
            st["reason"] = d.reason
        return self._answer(obj, st)

    def namespace_override(self, ctx: Context) -> str | None:
        return None


class SelfSubjectAccessReviewStore(_AccessReviewStore):
    kind = "SelfSubjectAccessReview"


class SubjectAccessReviewStore(_AccessReviewStore):
    kind = "SubjectAccessReview"

    def validate(self, ctx: Context, obj: Object) -> builtins.list[v.Cause]:
        spec = as_dict(obj.get("spec"))
        causes = _attributes_causes(spec)
        if not spec.get("user") and not as_list(spec.get("groups")):
            causes.append(v.invalid("spec.user", spec.get("user") or "",
                                    "at least one of user or group must be specified"))
        return causes + self.metadata_causes(obj)

    def metadata_causes(self, obj: Object) -> builtins.list[v.Cause]:
        return _metadata_causes(obj)

    def subject(self, ctx: Context, obj: Object) -> UserInfo:
        spec = as_dict(obj.get("spec"))
        extra = {str(k): [str(x) for x in as_list(val)]
                 for k, val in as_dict(spec.get("extra")).items()}
        return UserInfo(name=str(spec.get("user") or ""), uid=str(spec.get("uid") or ""),
                        groups=tuple(str(g) for g in as_list(spec.get("groups"))),
                        extra=extra)


class LocalSubjectAccessReviewStore(SubjectAccessReviewStore):
    kind = "LocalSubjectAccessReview"

    def metadata_causes(self, obj: Object) -> builtins.list[v.Cause]:
        return _metadata_causes(obj, namespace_allowed=True)

    def validate(self, ctx: Context, obj: Object) -> builtins.list[v.Cause]:
        causes = super().validate(ctx, obj)
        spec = as_dict(obj.get("spec"))
        meta = as_dict(obj.get("metadata"))
        ns = str(meta.get("namespace") or "")
        ra = spec.get("resourceAttributes")
        if isinstance(ra, dict) and str(ra.get("namespace") or "") != ns:
            causes.append(v.invalid("spec.resourceAttributes.namespace",
                                    str(ra.get("namespace") or ""),
                                    "must match metadata.namespace"))
        if spec.get("nonResourceAttributes") is not None:
            causes.append(v.invalid("spec.nonResourceAttributes", "<object>",
                                    "disallowed on this kind of request"))
        return causes

    async def create(self, ctx: Context, obj: Object, opts: WriteOptions) -> Object:
        ns = str(as_dict(obj.get("metadata")).get("namespace") or "")
        if ns != ctx.namespace:
            raise status.bad_request(f"spec.resourceAttributes.namespace must match "
                                     f"namespace: {ctx.namespace}")
        return await super().create(ctx, obj, opts)


class SelfSubjectRulesReviewStore(VirtualStore):
    """The rules the requesting user has in ``spec.namespace``. The authorizers here cannot
    list rules; a user allowed everything gets the wildcard rules, anyone else an incomplete
    answer (as upstream for authorizers that cannot enumerate)."""

    async def create(self, ctx: Context, obj: Object, opts: WriteOptions) -> Object:
        spec = as_dict(obj.get("spec"))
        ns = str(spec.get("namespace") or "")
        if not ns:
            raise status.bad_request("no namespace on request")
        authz = self.auth.authorizer
        st: Object = {"resourceRules": [], "nonResourceRules": [], "incomplete": True}
        if authz is not None:
            everything = RequestInfo(is_resource_request=True, path="", verb="*",
                                     api_group="*", namespace=ns, resource="*")
            d = await authz.authorize(ctx.user, everything)
            if d.decision == "allow":
                st = {"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"],
                                         "resources": ["*"]}],
                      "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                      "incomplete": False}
        return self._answer(obj, st)


# ---- core v1 ----------------------------------------------------------------------------------


def _pods(stores: Mapping[StoreKey, RESTStore]) -> Any:
    return stores[("", "v1", "pods")]


class BindingStore(VirtualStore):
    """``bindings`` and ``pods/binding`` (upstream BindingREST): sets spec.nodeName and the
    PodScheduled condition of a pod that has no node yet."""

    async def create(self, ctx: Context, obj: Object, opts: WriteOptions) -> Object:
        meta = as_dict(obj.get("metadata"))
        name = str(meta.get("name") or "")
        if self._info.subresource and ctx.info is not None and ctx.info.name != name:
            raise status.bad_request("name in URL does not match name in Binding object")
        target = as_dict(obj.get("target"))
        causes: builtins.list[v.Cause] = []
        if target.get("kind") not in (None, "", "Node"):
            causes.append(v.not_supported("target.kind", target.get("kind"),
                                          ["Node", "<empty>"]))
        if not target.get("name"):
            causes.append(v.required("target.name"))
        if causes:
            raise status.invalid("Binding", "", name, causes)
        if opts.dry_run:
            return {"kind": "Status", "apiVersion": "v1", "metadata": {},
                    "status": "Success", "code": 201}
        pods = _pods(self.stores)
        node = str(target["name"])
        annotations = as_dict(meta.get("annotations"))

        async def assign(current: Object | None) -> Object:
            if current is None:
                raise status.not_found("pods", "", name)
            pod = deep_copy(current)
            pmeta = pod.setdefault("metadata", {})
            if pmeta.get("deletionTimestamp"):
                raise status.conflict("pods/binding", "", name,
                                      f"pod {name} is being deleted, cannot be assigned to "
                                      "a host")
            spec = pod.setdefault("spec", {})
            if spec.get("nodeName"):
                raise status.conflict("pods/binding", "", name,
                                      f'pod {name} is already assigned to node '
                                      f'"{spec["nodeName"]}"')
            spec["nodeName"] = node
            if annotations:
                pmeta["annotations"] = {**as_dict(pmeta.get("annotations")),
                                        **{str(k): str(x) for k, x in annotations.items()}}
            st = pod.setdefault("status", {})
            conds = [c for c in as_list(st.get("conditions"))
                     if as_dict(c).get("type") != "PodScheduled"]
            conds.append({"type": "PodScheduled", "status": "True",
                          "lastProbeTime": None, "lastTransitionTime": _now()})
            st["conditions"] = conds
            return pod
        try:
            await pods.storage.guaranteed_update(pods.key(ctx, name), assign)
        except StorageError as e:
            raise pods.storage_error(e, name) from e
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "code": 201}


def _selector_matches(sel: Any, labels: Mapping[str, str]) -> bool:
    s = as_dict(sel)
    for k, val in as_dict(s.get("matchLabels")).items():
        if labels.get(str(k)) != val:
            return False
    for req in as_list(s.get("matchExpressions")):
        r = as_dict(req)
        key, op, vals = str(r.get("key")), r.get("operator"), as_list(r.get("values"))
        have = key in labels
        if op == "In" and (not have or labels[key] not in vals):
            return False
        if op == "NotIn" and have and labels[key] in vals:
            return False
        if op == "Exists" and not have:
            return False
        if op == "DoesNotExist" and have:
            return False
    return True


def _pod_ready(pod: Object) -> bool:
    return any(as_dict(c).get("type") == "Ready" and as_dict(c).get("status") == "True"
               for c in as_list(as_dict(pod.get("status")).get("conditions")))


class EvictionStore(VirtualStore):
    """``pods/eviction`` (upstream EvictionREST): deletes the pod, unless the
    PodDisruptionBudget selecting it allows no disruption now (429). A pod that is pending,
    finished or already being deleted is deleted without looking at budgets; an allowed
    eviction takes one disruption from the budget's status."""

    async def create(self, ctx: Context, obj: Object, opts: WriteOptions) -> Object:
        meta = as_dict(obj.get("metadata"))
        name = ctx.info.name if ctx.info is not None else str(meta.get("name") or "")
        if meta.get("name") and meta.get("name") != name:
            raise status.bad_request("name in URL does not match name in Eviction object")
        pods = _pods(self.stores)
        pod = await pods.get(ctx, name, GetOptions())
        phase = as_dict(pod.get("status")).get("phase")
        deleting = bool(as_dict(pod.get("metadata")).get("deletionTimestamp"))
        do = as_dict(obj.get("deleteOptions"))
        dry_run = opts.dry_run or bool(as_list(do.get("dryRun")))
        if phase not in ("Succeeded", "Failed", "Pending") and not deleting:
            await self._take_disruption(ctx, pod, dry_run)
        pre = as_dict(do.get("preconditions"))
        dopts = DeleteOptions(
            dry_run=dry_run, grace_period_seconds=do.get("gracePeriodSeconds"),
            precondition_uid=pre.get("uid"),
            precondition_resource_version=pre.get("resourceVersion"),
            propagation_policy=do.get("propagationPolicy"))
        await pods.delete(ctx, name, dopts)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "code": 201}

    async def _take_disruption(self, ctx: Context, pod: Object, dry_run: bool) -> None:
        pdbs = self.stores.get(("policy", "v1", "poddisruptionbudgets"))
        if pdbs is None:
            return
        lst = await pdbs.list(ctx, ListOptions())
        labels = {str(k): str(x) for k, x in
                  as_dict(as_dict(pod.get("metadata")).get("labels")).items()}
        matching = [p for p in as_list(lst.get("items"))
                    if _selector_matches(as_dict(p.get("spec")).get("selector"), labels)]
        if len(matching) > 1:
            raise status.internal("This pod has more than one PodDisruptionBudget, which the "
                                  "eviction subresource does not support.")
        if not matching:
            return
        pdb = matching[0]
        pname = str(as_dict(pdb.get("metadata")).get("name") or "")
        st = as_dict(pdb.get("status"))
        spec = as_dict(pdb.get("spec"))
        if not _pod_ready(pod):
            # unhealthyPodEvictionPolicy: AlwaysAllow, or IfHealthyBudget (the default) when
            # the budget is met
            policy = spec.get("unhealthyPodEvictionPolicy") or "IfHealthyBudget"
            desired = int(st.get("desiredHealthy") or 0)
            if policy == "AlwaysAllow" or (
                    desired > 0 and int(st.get("currentHealthy") or 0) >= desired):
                return
        gen = int(as_dict(pdb.get("metadata")).get("generation") or 0)
        if int(st.get("observedGeneration") or 0) < gen:
            raise self._too_many(f"Cannot evict pod as it would violate the pod's disruption "
                                 f"budget. The disruption budget {pname} is still being "
                                 "processed by the server.", 10)
        allowed = int(st.get("disruptionsAllowed") or 0)
        if allowed < 0:
            raise status.APIError(403, "Forbidden", f'poddisruptionbudget.policy "{pname}" is '
                                  "forbidden: pdb disruptions allowed is negative",
                                  details={"name": pname, "group": "policy",
                                           "kind": "poddisruptionbudget"})
        if allowed == 0:
            raise self._too_many(
                "Cannot evict pod as it would violate the pod's disruption budget.", 0,
                f"The disruption budget {pname} needs {st.get('desiredHealthy', 0)} healthy "
                f"pods and has {st.get('currentHealthy', 0)} currently")
        if dry_run:
            return
        pod_name = str(as_dict(pod.get("metadata")).get("name") or "")
        rv = str(as_dict(pdb.get("metadata")).get("resourceVersion") or "")

        async def decrement(current: Object | None) -> Object:
            if current is None:
                raise status.not_found("poddisruptionbudgets", "policy", pname)
            out = deep_copy(current)
            out["metadata"]["resourceVersion"] = rv  # a changed budget is a conflict
            cur = out.setdefault("status", {})
            cur["disruptionsAllowed"] = int(cur.get("disruptionsAllowed") or 0) - 1
            cur.setdefault("disruptedPods", {})[pod_name] = _now()
            return out
        pdb_status = self.stores.get(("policy", "v1", "poddisruptionbudgets/status"))
        if pdb_status is not None:
            await pdb_status.update(ctx, pname, decrement, WriteOptions())

    @staticmethod
    def _too_many(message: str, retry_after: int, cause: str = "") -> status.APIError:
        details: dict[str, Any] = {}
        if cause:
            details["causes"] = [{"reason": "DisruptionBudget", "message": cause}]
        if retry_after:
            details["retryAfterSeconds"] = retry_after
        return status.APIError(429, "TooManyRequests", message, details=details,
                               headers={"Retry-After": str(retry_after)} if retry_after
                               else {})


class ComponentStatusStore(VirtualStore):
    """``componentstatuses`` (deprecated upstream): the storage backend as ``etcd-0``."""

    def _item(self) -> Object:
        return {"kind": "ComponentStatus", "apiVersion": "v1",
                "metadata": {"name": "etcd-0", "creationTimestamp": None},
                "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]}

    async def get(self, ctx: Context, name: str, opts: GetOptions) -> Object:
        if name != "etcd-0":
            raise status.not_found("componentstatuses", "", name)
        return self._item()

    async def list(self, ctx: Context, opts: ListOptions) -> Object:
        item = self._item()
        return {"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {},
                "items": [item]}

    def table_columns(self) -> builtins.list[Column]:
        return [Column(name="Name", type="string", format="name"),
                Column(name="Status", type="string"), Column(name="Message", type="string"),
                Column(name="Error", type="string")]

    def table_cells(self, obj: Object) -> builtins.list[Any]:
        return [as_dict(obj.get("metadata")).get("name", ""), "Healthy", "ok", ""]


class NodeConnectStore(VirtualStore):
    """pods/log, exec, attach, portforward, proxy; nodes/proxy; services/proxy: these need a
    node agent connection, which this server does not have."""

    # upstream's connecters read no body (ConnectResource takes its options from the query):
    # every verb is answered by ``refuse`` before a body is decoded
    connect = True

    async def refuse(self, ctx: Context, name: str) -> NoReturn:
        await self._refuse(ctx, name)

    async def _refuse(self, ctx: Context, name: str) -> NoReturn:
        info = self._info
        parent = self.stores.get((info.group, info.version, info.resource))
        if parent is not None:
            obj = await parent.get(ctx, name, GetOptions())
            if info.resource == "pods" and not as_dict(obj.get("spec")).get("nodeName"):
                raise status.bad_request(f"pod {name} does not have a host assigned")
        raise status.service_unavailable(
            f"{info.path_name} is not available: this server has no connection to node "
            "agents")

    async def get(self, ctx: Context, name: str, opts: GetOptions) -> Object:
        await self._refuse(ctx, name)

    async def create(self, ctx: Context, obj: Object, opts: WriteOptions) -> Object:
        name = ctx.info.name if ctx.info is not None else ""
        await self._refuse(ctx, name)

    async def update(self, ctx: Context, name: str, transform: TransformFunc,
                     opts: WriteOptions, *, force_allow_create: bool = False,
                     ) -> tuple[Object, bool]:
        await self._refuse(ctx, name)

    async def delete(self, ctx: Context, name: str, opts: DeleteOptions) -> tuple[Object, bool]:
        await self._refuse(ctx, name)


class TokenRequestStore(VirtualStore):
    """serviceaccounts/token: there is no service-account token signer yet."""

    async def create(self, ctx: Context, obj: Object, opts: WriteOptions) -> Object:
        name = ctx.info.name if ctx.info is not None else ""
        sas = self.stores.get(("", "v1", "serviceaccounts"))
        if sas is not None:
            await sas.get(ctx, name, GetOptions())
        raise status.service_unavailable(
            "serviceaccounts/token is not available: no service account token signer is "
            "configured")


_MAIN: dict[tuple[str, str], type[VirtualStore]] = {
    (AUTHN_GROUP, "selfsubjectreviews"): SelfSubjectReviewStore,
    (AUTHN_GROUP, "tokenreviews"): TokenReviewStore,
    (AUTHZ_GROUP, "selfsubjectaccessreviews"): SelfSubjectAccessReviewStore,
    (AUTHZ_GROUP, "subjectaccessreviews"): SubjectAccessReviewStore,
    (AUTHZ_GROUP, "localsubjectaccessreviews"): LocalSubjectAccessReviewStore,
    (AUTHZ_GROUP, "selfsubjectrulesreviews"): SelfSubjectRulesReviewStore,
    ("", "bindings"): BindingStore,
    ("", "componentstatuses"): ComponentStatusStore,
}
_SUB: dict[tuple[str, str], type[VirtualStore]] = {
    ("pods", "binding"): BindingStore,
    ("pods", "eviction"): EvictionStore,
    ("serviceaccounts", "token"): TokenRequestStore,
}


def main_store(info: ResourceInfo, stores: Mapping[StoreKey, RESTStore],
               auth: AuthDelegates) -> VirtualStore:
    group = info.group.removesuffix(".k8s.io") + ".plat.io" if info.group.endswith(".k8s.io") \
        else info.group  # the upstream-named aliases of the reviews
    cls = _MAIN.get((group, info.resource), VirtualStore)
    return cls(info, stores, auth)


def sub_store(info: ResourceInfo, stores: Mapping[StoreKey, RESTStore],
              auth: AuthDelegates) -> VirtualStore:
    cls = _SUB.get((info.resource, info.subresource), NodeConnectStore)
    return cls(info, stores, auth)

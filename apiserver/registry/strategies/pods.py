"""Pod (core v1; upstream ``pkg/registry/core/pod/strategy.go``, ``SetDefaults_Pod``,
``ValidatePodCreate`` / ``ValidatePodUpdate`` / ``ValidatePodStatusUpdate`` and the Priority
admission plug-in's defaults).

On create the status is reset to ``{phase: Pending, qosClass: ...}`` (plus the
SchedulingGated condition when the pod has scheduling gates), ``priority`` is 0 and
``preemptionPolicy`` PreemptLowerPriority when no priority class is named. Updates may only
change images, activeDeadlineSeconds (set or lowered), tolerations (additions) and a negative
terminationGracePeriodSeconds to 1; the rest is forbidden with upstream's message.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from apiserver import selectors
from apiserver.api.podspec import (
    MAX_INT32,
    default_pod,
    parse_quantity,
    validate_pod_spec,
)
from apiserver.registry import validation as v
from apiserver.registry.strategy import Object, Strategy, as_dict, as_list
from apiserver.registry.treecopy import deep_copy

if TYPE_CHECKING:
    from apiserver.registry.validation import Cause

UPDATABLE_FIELDS_MSG: Final = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)")
SYSTEM_PRIORITIES: Final = {"system-node-critical": 2000001000,
                            "system-cluster-critical": 2000000000}
QOS_RESOURCES: Final = ("cpu", "memory")
SCHEDULING_GATED_MSG: Final = "Scheduling is blocked due to non-empty scheduling gates"


def _has_quantity(m: Any, name: str) -> bool:
    q = as_dict(m).get(name)
    parsed = parse_quantity(q)
    return parsed is not None and parsed[0] != 0


def qos_class(spec: Any) -> str:
    """Upstream qos.GetPodQOS over cpu and memory of every (init) container."""
    containers = [as_dict(c) for key in ("initContainers", "containers")
                  for c in as_list(as_dict(spec).get(key))]
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    guaranteed = True
    for c in containers:
        res = as_dict(c.get("resources"))
        req, lim = as_dict(res.get("requests")), as_dict(res.get("limits"))
        for name in QOS_RESOURCES:
            if _has_quantity(req, name):
                requests.setdefault(name, []).append(parse_quantity(req[name]))
            if _has_quantity(lim, name):
                limits.setdefault(name, []).append(parse_quantity(lim[name]))
        if not all(_has_quantity(lim, name) for name in QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed:
        for c in containers:
            res = as_dict(c.get("resources"))
            req, lim = as_dict(res.get("requests")), as_dict(res.get("limits"))
            for name in QOS_RESOURCES:
                rq, lq = parse_quantity(req.get(name)), parse_quantity(lim.get(name))
                if rq is None or lq is None or rq[0] != lq[0]:
                    guaranteed = False
    return "Guaranteed" if guaranteed else "Burstable"


def _host_network(obj: Object) -> str:
    return "true" if as_dict(obj.get("spec")).get("hostNetwork") is True else "false"


class PodStrategy(Strategy):
    group = ""
    kind = "Pod"
    resource = "pods"
    singular = "pod"
    short_names = ("po",)
    categories = ("all",)
    has_status = True
    tracks_generation = True
    typed_fields = {"spec": "v1.PodSpec", "status": "v1.PodStatus"}
    field_getters = {
        "spec.nodeName": selectors.path_getter("spec.nodeName"),
        "spec.restartPolicy": selectors.path_getter("spec.restartPolicy"),
        "spec.schedulerName": selectors.path_getter("spec.schedulerName"),
        "spec.serviceAccountName": selectors.path_getter("spec.serviceAccountName"),
        "spec.hostNetwork": _host_network,
        "status.phase": selectors.path_getter("status.phase"),
        "status.podIP": selectors.path_getter("status.podIP"),
        "status.nominatedNodeName": selectors.path_getter("status.nominatedNodeName"),
    }

    def field_label_error(self, label: str) -> str:
        return selectors.core_unsupported(label)

    def default(self, obj: Object) -> None:
        default_pod(obj)

    def prepare_for_create(self, obj: Object) -> None:
        super().prepare_for_create(obj)
        spec = obj.get("spec")
        if isinstance(spec, dict):
            # the Priority admission plug-in (no default PriorityClass exists)
            pcn = spec.get("priorityClassName")
            if not pcn:
                spec.setdefault("priority", 0)
                spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
            elif pcn in SYSTEM_PRIORITIES:
                spec.setdefault("priority", SYSTEM_PRIORITIES[pcn])
                spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        status: dict[str, Any] = {"phase": "Pending", "qosClass": qos_class(spec)}
        if isinstance(spec, dict) and as_list(spec.get("schedulingGates")):
            status["conditions"] = [{"type": "PodScheduled", "status": "False",
                                     "lastProbeTime": None, "lastTransitionTime": None,
                                     "reason": "SchedulingGated",
                                     "message": SCHEDULING_GATED_MSG}]
        obj["status"] = status

    # -- validation ---------------------------------------------------------------------------

    def validate(self, obj: Object) -> list[Cause]:
        if self.subresource == "status":
            return self.validate_status(obj)
        spec = obj.get("spec")
        causes = validate_pod_spec(spec, "spec", for_pod=True)
        if as_list(as_dict(spec).get("ephemeralContainers")):
            causes.append(v.forbidden("spec.ephemeralContainers", "cannot be set on create"))
        return causes

    def prepare_for_update(self, new: Object, old: Object) -> None:
        if self.subresource == "ephemeralcontainers":
            # only spec.ephemeralContainers comes from the request
            # (upstream dropNonEphemeralContainerUpdates)
            eph = as_dict(new.get("spec")).get("ephemeralContainers")
            meta = as_dict(new.get("metadata"))
            keep = {k: meta[k] for k in ("name", "namespace", "resourceVersion", "uid")
                    if k in meta}
            new.clear()
            new.update(deep_copy(old))
            new["metadata"].update(keep)
            if eph is None:
                new["spec"].pop("ephemeralContainers", None)
            else:
                new["spec"]["ephemeralContainers"] = eph
            return
        super().prepare_for_update(new, old)
        if self.subresource == "status":
            # upstream podStatusStrategy: status writers (old kubelets) corrupted owner
            # references, which broke garbage collection; they stay as they were
            new_meta = new.get("metadata")
            if type(new_meta) is dict:
                refs = as_dict(old.get("metadata")).get("ownerReferences")
                if refs is None:
                    new_meta.pop("ownerReferences", None)
                else:
                    new_meta["ownerReferences"] = deep_copy(refs)

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        if self.subresource == "status":
            return self.validate_status(new)
        if self.subresource == "ephemeralcontainers":
            return self.validate_ephemeral_update(new, old)
        ns, os_ = as_dict(new.get("spec")), as_dict(old.get("spec"))
        causes = [c for c in validate_pod_spec(ns, "spec", for_pod=True)
                  if not c["field"].startswith("spec.ephemeralContainers")]
        ads_new, ads_old = ns.get("activeDeadlineSeconds"), os_.get("activeDeadlineSeconds")
        if ads_new is not None:
            if isinstance(ads_new, int) and isinstance(ads_old, int) and ads_old < ads_new:
                causes.append(v.invalid("spec.activeDeadlineSeconds", ads_new,
                                        "must be less than or equal to previous value"))
                return causes
        elif ads_old is not None:
            causes.append(v.invalid("spec.activeDeadlineSeconds", None,
                                    "must not update from a positive integer to nil value"))
        causes += _validate_only_added_tolerations(ns.get("tolerations"),
                                                   os_.get("tolerations"))
        munged = deep_copy(ns)
        for key in ("containers", "initContainers"):
            olds = as_list(os_.get(key))
            for i, c in enumerate(as_list(munged.get(key))):
                if isinstance(c, dict) and i < len(olds) and isinstance(olds[i], dict):
                    if "image" in olds[i]:
                        c["image"] = olds[i]["image"]
                    else:
                        c.pop("image", None)
        if self.subresource == "resize":
            # the resize sub-resource changes container resources (and resize policies)
            for key in ("containers", "initContainers"):
                olds = as_list(os_.get(key))
                for i, c in enumerate(as_list(munged.get(key))):
                    if isinstance(c, dict) and i < len(olds) and isinstance(olds[i], dict):
                        for f in ("resources", "resizePolicy"):
                            _copy_field(c, olds[i], f)
        _copy_field(munged, os_, "activeDeadlineSeconds")
        _copy_field(munged, os_, "tolerations")
        tgp_old = os_.get("terminationGracePeriodSeconds")
        if isinstance(tgp_old, int) and tgp_old < 0 and munged.get(
                "terminationGracePeriodSeconds") == 1:
            munged["terminationGracePeriodSeconds"] = tgp_old
        gates_new = as_list(munged.get("schedulingGates"))
        gates_old = as_list(os_.get("schedulingGates"))
        if all(g in gates_old for g in gates_new):
            # gates may only be removed
            _copy_field(munged, os_, "schedulingGates")
            if gates_old:
                # while gated, node selectors and affinity may be tightened
                for f in ("nodeSelector", "affinity"):
                    _copy_field(munged, os_, f)
        if munged != os_:
            causes.append(v.forbidden("spec", UPDATABLE_FIELDS_MSG + "\n" + _diff(os_, munged)))
        return causes

    def validate_ephemeral_update(self, new: Object, old: Object) -> list[Cause]:
        """ValidatePodEphemeralContainersUpdate: new ephemeral containers are validated,
        existing ones may be neither removed nor changed."""
        spec = as_dict(new.get("spec"))
        causes = [c for c in validate_pod_spec(spec, "spec", for_pod=True)
                  if c["field"].startswith("spec.ephemeralContainers")]
        by_name = {as_dict(c).get("name"): as_dict(c)
                   for c in as_list(spec.get("ephemeralContainers"))}
        for oc in as_list(as_dict(old.get("spec")).get("ephemeralContainers")):
            oc = as_dict(oc)
            name = str(oc.get("name", ""))
            nc = by_name.get(name)
            if nc is None:
                causes.append(v.forbidden("spec", f'existing ephemeral containers "{name}" '
                                          "may not be removed\n"))
            elif nc != oc:
                causes.append(v.forbidden("spec", f'existing ephemeral containers "{name}" '
                                          "may not be changed\n" + _diff(oc, nc)))
        return causes

    def validate_status(self, obj: Object) -> list[Cause]:
        causes: list[Cause] = []
        st = as_dict(obj.get("status"))
        nnn = st.get("nominatedNodeName")
        if isinstance(nnn, str) and nnn:
            for e in v.dns1123_subdomain_errors(nnn):
                causes.append(v.invalid("status.nominatedNodeName", nnn, e))
        for key in ("podIP", "hostIP"):
            ip = st.get(key)
            if isinstance(ip, str) and ip and not v.is_ip(ip):
                causes.append(v.invalid(f"status.{key}", ip, "must be a valid IP address, "
                                        '(e.g. 10.9.8.7 or 2001:db8::ffff)'))
        for key in ("podIPs", "hostIPs"):
            single = "podIP" if key == "podIPs" else "hostIP"
            ips = as_list(st.get(key))
            first = as_dict(ips[0]).get("ip") if ips else None
            if ips and st.get(single) and first != st.get(single):
                causes.append(v.invalid(f"status.{key}[0].ip", first or "",
                                        f"must be equal to {single}"))
            for i, item in enumerate(ips):
                ip = as_dict(item).get("ip")
                if not isinstance(ip, str) or not v.is_ip(ip):
                    causes.append(v.invalid(f"status.{key}[{i}].ip", ip or "",
                                            "must be a valid IP address, (e.g. 10.9.8.7 or "
                                            "2001:db8::ffff)"))
        for i, c in enumerate(as_list(st.get("conditions"))):
            ctype = as_dict(c).get("type")
            if isinstance(ctype, str):
                for e in v.qualified_name_errors(ctype):
                    causes.append(v.invalid(f"status.conditions[{i}].type", ctype, e))
        return causes


def _copy_field(dst: dict[str, Any], src: dict[str, Any], key: str) -> None:
    if key in src:
        dst[key] = deep_copy(src[key])
    else:
        dst.pop(key, None)


def _validate_only_added_tolerations(new: Any, old: Any) -> list[Cause]:
    """Every old toleration must still be there (tolerationSeconds aside)."""
    causes: list[Cause] = []
    news = [as_dict(t) for t in as_list(new)]
    for old_t in as_list(old):
        ot = as_dict(old_t)
        base = {k: val for k, val in ot.items() if k != "tolerationSeconds"}
        if not any({k: val for k, val in t.items() if k != "tolerationSeconds"} == base
                   for t in news):
            causes.append(v.forbidden("spec.tolerations",
                                      "existing toleration can not be modified except its "
                                      "tolerationSeconds"))
            break
    for i, t in enumerate(news):
        secs = t.get("tolerationSeconds")
        if isinstance(secs, int) and secs < 0:
            causes.append(v.invalid(f"spec.tolerations[{i}].tolerationSeconds", secs,
                                    "must be greater than or equal to 0"))
        if isinstance(secs, int) and secs > MAX_INT32:
            causes.append(v.invalid(f"spec.tolerations[{i}].tolerationSeconds", secs,
                                    f"must be between 0 and {MAX_INT32}, inclusive"))
    return causes


def _diff(old: dict[str, Any], new: dict[str, Any]) -> str:
    """A short account of what changed (upstream prints a cmp.Diff of the specs)."""
    lines = ["  core.PodSpec{"]
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            lines.append(f"-  \t{key}: {json.dumps(old.get(key), sort_keys=True)},")
            lines.append(f"+  \t{key}: {json.dumps(new.get(key), sort_keys=True)},")
    lines.append("  }")
    return "\n".join(lines) + "\n"

"""Validation of kinds served by the schema-driven strategy (no module of their own in
``registry/strategies``): upstream v1.33's rules that users meet most, with its messages
(``pkg/apis/<group>/validation``). ``SchemaStrategy.validate`` runs the function registered
for its (group, kind); a kind without one is checked by the schema and required fields only.

Covered: PodDisruptionBudget, PriorityClass, ResourceQuota, StorageClass, RuntimeClass,
NetworkPolicy (ports), LimitRange, Ingress (hosts, paths, backends), EndpointSlice
(addresses, ports), validating and mutating webhook configurations (docs/types.md).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any, Final

from apiserver.api.podspec import canonical_quantity, parse_quantity
from apiserver.registry import validation as v
from apiserver.registry.strategies import _workload as w
from apiserver.registry.strategy import Object, as_dict, as_list
from apiserver.registry.validation import Cause

Validator = Callable[[Object], list[Cause]]


# -- policy/v1 PodDisruptionBudget (ValidatePodDisruptionBudgetSpec) ---------------------------

_EVICTION_POLICIES: Final = ["AlwaysAllow", "IfHealthyBudget"]


def _go_pdb_spec(spec: dict[str, Any]) -> v.Raw:
    """The spec as Go's %#v prints a PodDisruptionBudgetSpec (pointers as addresses)."""
    fields = []
    for name, key in (("MinAvailable", "minAvailable"), ("Selector", "selector"),
                      ("MaxUnavailable", "maxUnavailable"),
                      ("UnhealthyPodEvictionPolicy", "unhealthyPodEvictionPolicy")):
        kind = {"Selector": "*v1.LabelSelector",
                "UnhealthyPodEvictionPolicy": "*policy.UnhealthyPodEvictionPolicyType"}.get(
            name, "*intstr.IntOrString")
        fields.append(f"{name}:({kind})({'0xc000000000' if key in spec else 'nil'})")
    return v.Raw("policy.PodDisruptionBudgetSpec{" + ", ".join(fields) + "}")


def validate_pdb(obj: Object) -> list[Cause]:
    spec = as_dict(obj.get("spec"))
    causes: list[Cause] = []
    min_a, max_u = spec.get("minAvailable"), spec.get("maxUnavailable")
    if min_a is not None and max_u is not None:
        causes.append(v.invalid("spec", _go_pdb_spec(spec),
                                "minAvailable and maxUnavailable cannot be both set"))
    for name, val in (("minAvailable", min_a), ("maxUnavailable", max_u)):
        if val is not None:
            causes += w.validate_int_or_percent(val, f"spec.{name}")
            causes += w.not_more_than_100(val, f"spec.{name}")
    causes += v.validate_label_selector(spec.get("selector"), "spec.selector")
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in _EVICTION_POLICIES:
        causes.append(v.not_supported("spec.unhealthyPodEvictionPolicy", policy,
                                      _EVICTION_POLICIES))
    return causes


# -- scheduling PriorityClass (ValidatePriorityClass) ------------------------------------------

HIGHEST_USER_DEFINABLE_PRIORITY: Final = 1_000_000_000
SYSTEM_PRIORITY_CLASSES: Final = {"system-node-critical": 2_000_001_000,
                                  "system-cluster-critical": 2_000_000_000}
_PREEMPTION_POLICIES: Final = ["Never", "PreemptLowerPriority"]


def _known_system_class(name: str, value: Any, global_default: bool) -> str:
    """scheduling.IsKnownSystemPriorityClass's error, or ""."""
    want = SYSTEM_PRIORITY_CLASSES.get(name)
    if want is None:
        return f"{name} is not a known system priority class"
    if value != want:
        return f"value of {name} PriorityClass must be {want}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return ""


def validate_priority_class(obj: Object) -> list[Cause]:
    name = str(as_dict(obj.get("metadata")).get("name") or "")
    value = obj.get("value")
    causes: list[Cause] = []
    if name.startswith("system-"):
        err = _known_system_class(name, value, bool(obj.get("globalDefault")))
        if err:
            causes.append(v.forbidden("metadata.name", "priority class names with 'system-' "
                                      f"prefix are reserved for system use only. error: {err}"))
    elif isinstance(value, int) and value > HIGHEST_USER_DEFINABLE_PRIORITY:
        causes.append(v.forbidden("value", "maximum allowed value of a user defined priority "
                                  f"is {HIGHEST_USER_DEFINABLE_PRIORITY}"))
    policy = obj.get("preemptionPolicy")
    if policy is not None and policy not in _PREEMPTION_POLICIES:
        causes.append(v.not_supported("preemptionPolicy", policy, _PREEMPTION_POLICIES))
    return causes


# -- core ResourceQuota (ValidateResourceQuotaSpec, the parts users meet) ----------------------

_STANDARD_SCOPES: Final = frozenset({
    "Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass",
    "CrossNamespacePodAffinity", "VolumeAttributesClass"})
_INTEGER_RESOURCES: Final = frozenset({
    "pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
    "persistentvolumeclaims", "services.nodeports", "services.loadbalancers"})


_STANDARD_QUOTA_NAMES: Final = frozenset({
    "pods", "services", "replicationcontrollers", "resourcequotas", "secrets",
    "persistentvolumeclaims", "configmaps", "services.nodeports", "services.loadbalancers",
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
    "requests.ephemeral-storage", "requests.storage", "limits.cpu", "limits.memory",
    "limits.ephemeral-storage"})
_POD_COMPUTE: Final = frozenset({"pods", "cpu", "memory", "requests.cpu", "requests.memory",
                                 "limits.cpu", "limits.memory"})
# helper.IsResourceQuotaScopeValidForResource
_SCOPE_RESOURCES: Final = {
    "BestEffort": frozenset({"pods"}),
    "NotBestEffort": _POD_COMPUTE, "Terminating": _POD_COMPUTE,
    "NotTerminating": _POD_COMPUTE, "PriorityClass": _POD_COMPUTE,
    "CrossNamespacePodAffinity": _POD_COMPUTE,
}


def _standard_quota_name(name: str) -> bool:
    """helper.IsStandardQuotaResourceName."""
    return name in _STANDARD_QUOTA_NAMES or name.startswith("requests.hugepages-")


def _scopes_value(scopes: list[Any]) -> v.Raw:
    return v.Raw("[]core.ResourceQuotaScope{" + ", ".join(
        v.go_quote(str(s)) for s in scopes) + "}")


def validate_resource_quota(obj: Object) -> list[Cause]:
    spec = as_dict(obj.get("spec"))
    causes: list[Cause] = []
    hard = as_dict(spec.get("hard"))
    for name in sorted(hard):
        field = f"spec.hard[{name}]"
        parsed = parse_quantity(hard[name])
        if parsed is None:
            continue  # the decoder refused it already
        amount = parsed[0]
        if amount < 0:
            causes.append(v.invalid(field, str(hard[name]),
                                    "must be greater than or equal to 0"))
        if (name in _INTEGER_RESOURCES or name.startswith("count/")) \
                and amount != amount.to_integral_value():
            causes.append(v.invalid(field, str(hard[name]), "must be an integer"))
    scopes = as_list(spec.get("scopes"))
    seen = set()
    for scope in scopes:
        if scope not in _STANDARD_SCOPES:
            causes.append(v.invalid("spec.scopes", _scopes_value(scopes), "unsupported scope"))
        allowed = _SCOPE_RESOURCES.get(scope)
        if allowed is not None:
            # only standard quota names are checked (extended resources never are)
            for name in sorted(hard):
                if _standard_quota_name(name) and name not in allowed:
                    causes.append(v.invalid("spec.scopes", _scopes_value(scopes),
                                            "unsupported scope applied to resource"))
        seen.add(scope)
    for pair in (("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating")):
        if seen.issuperset(pair):
            causes.append(v.invalid("spec.scopes", _scopes_value(scopes), "conflicting scopes"))
    return causes


# -- storage StorageClass, node RuntimeClass ----------------------------------------------------

_RECLAIM_POLICIES: Final = ["Delete", "Retain"]
_BINDING_MODES: Final = ["Immediate", "WaitForFirstConsumer"]


def validate_storage_class(obj: Object) -> list[Cause]:
    causes: list[Cause] = []
    provisioner = obj.get("provisioner")
    if not provisioner:
        causes.append(v.required("provisioner"))
    elif isinstance(provisioner, str):
        causes += [v.invalid("provisioner", provisioner, e)  # upstream lower-cases it
                   for e in v.qualified_name_errors(provisioner.lower())]
    policy = obj.get("reclaimPolicy")
    if policy is not None and policy not in _RECLAIM_POLICIES:
        causes.append(v.not_supported("reclaimPolicy", policy, _RECLAIM_POLICIES))
    mode = obj.get("volumeBindingMode")
    if mode is not None and mode not in _BINDING_MODES:
        causes.append(v.not_supported("volumeBindingMode", mode, _BINDING_MODES))
    return causes


def validate_runtime_class(obj: Object) -> list[Cause]:
    handler = obj.get("handler")
    if not handler:
        return [v.required("handler")]
    if not isinstance(handler, str):
        return []
    return [v.invalid("handler", handler, e) for e in v.dns1123_label_errors(handler)]


# -- networking NetworkPolicy (ports and protocols) ---------------------------------------------

_PROTOCOLS: Final = ["SCTP", "TCP", "UDP"]
_PORT_RANGE_MSG: Final = "must be between 1 and 65535, inclusive"


def _validate_policy_ports(ports: list[Any], field: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, p in enumerate(ports):
        port = as_dict(p)
        f = f"{field}[{i}]"
        proto = port.get("protocol")
        if proto is not None and proto not in _PROTOCOLS:
            causes.append(v.not_supported(f"{f}.protocol", proto, _PROTOCOLS))
        num, end = port.get("port"), port.get("endPort")
        if isinstance(num, int) and not isinstance(num, bool):
            if not 1 <= num <= 65535:
                causes.append(v.invalid(f"{f}.port", num, _PORT_RANGE_MSG))
            if isinstance(end, int) and end < num:
                causes.append(v.invalid(f"{f}.endPort", end,
                                        "must be greater than or equal to `port`"))
        elif end is not None:
            causes.append(v.invalid(f"{f}.endPort", end,
                                    "may not be specified when `port` is non-numeric"
                                    if num is not None else
                                    "may not be specified when `port` is not specified"))
        if isinstance(end, int) and not 1 <= end <= 65535:
            causes.append(v.invalid(f"{f}.endPort", end, _PORT_RANGE_MSG))
    return causes


def validate_network_policy(obj: Object) -> list[Cause]:
    spec = as_dict(obj.get("spec"))
    causes = v.validate_label_selector(spec.get("podSelector"), "spec.podSelector")
    for direction in ("ingress", "egress"):
        for i, rule in enumerate(as_list(spec.get(direction))):
            causes += _validate_policy_ports(as_list(as_dict(rule).get("ports")),
                                             f"spec.{direction}[{i}].ports")
    return causes


# -- core LimitRange (ValidateLimitRange: types, Pod defaults, orderings) -----------------------

_LIMIT_TYPES: Final = ["Container", "PersistentVolumeClaim", "Pod"]


def _quantities(values: Any) -> dict[str, tuple[Any, str]]:
    """name -> (numeric value, canonical text) of the quantities that parse."""
    out = {}
    for name, text in as_dict(values).items():
        parsed = parse_quantity(text)
        if parsed is not None:
            out[str(name)] = (parsed[0], str(canonical_quantity(text)))
    return out


def validate_limit_range(obj: Object) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, item in enumerate(as_list(as_dict(obj.get("spec")).get("limits"))):
        limit = as_dict(item)
        base = f"spec.limits[{i}]"
        kind = limit.get("type")
        if isinstance(kind, str):
            if kind in seen:
                causes.append(v.duplicate(f"{base}.type", kind))
            seen.add(kind)
        lo, hi = _quantities(limit.get("min")), _quantities(limit.get("max"))
        default, request = _quantities(limit.get("default")), _quantities(
            limit.get("defaultRequest"))
        ratio = _quantities(limit.get("maxLimitRequestRatio"))
        if kind == "Pod":
            for name in ("default", "defaultRequest"):
                if limit.get(name):
                    causes.append(v.forbidden(f"{base}.{name}",
                                              "may not be specified when `type` is 'Pod'"))
        for k in sorted({*lo, *hi, *default, *request, *ratio}):
            if k in lo and k in hi and lo[k][0] > hi[k][0]:
                causes.append(v.invalid(f"{base}.min[{k}]", v.Raw(lo[k][1]),
                                        f"min value {lo[k][1]} is greater than max value "
                                        f"{hi[k][1]}"))
            if k in request and k in lo and lo[k][0] > request[k][0]:
                causes.append(v.invalid(f"{base}.defaultRequest[{k}]", v.Raw(request[k][1]),
                                        f"min value {lo[k][1]} is greater than default "
                                        f"request value {request[k][1]}"))
            if k in request and k in hi and request[k][0] > hi[k][0]:
                causes.append(v.invalid(f"{base}.defaultRequest[{k}]", v.Raw(request[k][1]),
                                        f"default request value {request[k][1]} is greater "
                                        f"than max value {hi[k][1]}"))
            if k in request and k in default and request[k][0] > default[k][0]:
                causes.append(v.invalid(f"{base}.defaultRequest[{k}]", v.Raw(request[k][1]),
                                        f"default request value {request[k][1]} is greater "
                                        f"than default limit value {default[k][1]}"))
            if k in default and k in lo and lo[k][0] > default[k][0]:
                causes.append(v.invalid(f"{base}.default[{k}]", v.Raw(lo[k][1]),
                                        f"min value {lo[k][1]} is greater than default value "
                                        f"{default[k][1]}"))
            if k in default and k in hi and default[k][0] > hi[k][0]:
                causes.append(v.invalid(f"{base}.default[{k}]", v.Raw(hi[k][1]),
                                        f"default value {default[k][1]} is greater than max "
                                        f"value {hi[k][1]}"))
            if k in ratio and ratio[k][0] < 1:
                causes.append(v.invalid(f"{base}.maxLimitRequestRatio[{k}]",
                                        v.Raw(ratio[k][1]), f"ratio {ratio[k][1]} is less "
                                        "than 1"))
    return causes


# -- networking Ingress (ValidateIngressSpec, the rules users meet) -----------------------------

_PATH_TYPES: Final = ["Exact", "ImplementationSpecific", "Prefix"]
_BAD_PATH_PARTS: Final = ("//", "/./", "/../", "%2f", "%2F")
_BAD_PATH_ENDS: Final = ("/..", "/.")


def _ingress_backend(backend: dict[str, Any], field: str) -> list[Cause]:
    """validateIngressBackend."""
    service, resource = backend.get("service"), backend.get("resource")
    if service is not None and resource is not None:
        return [v.invalid(field, "", "cannot set both resource and service backends")]
    if service is None and resource is None:
        return [v.invalid(field, "", "resource or service backend is required")]
    if service is None:
        return []
    svc = as_dict(service)
    causes: list[Cause] = []
    if not svc.get("name"):
        causes.append(v.required(f"{field}.service.name"))
    port = as_dict(svc.get("port"))
    name, number = port.get("name"), port.get("number")
    if name and number:
        causes.append(v.invalid(field, "", "cannot set both port name & port number"))
    elif not name and not number:
        causes.append(v.required(field, "port name or number is required"))
    elif isinstance(number, int) and not 1 <= number <= 65535:
        causes.append(v.invalid(f"{field}.service.port.number", number, _PORT_RANGE_MSG))
    return causes


def validate_ingress(obj: Object) -> list[Cause]:
    spec = as_dict(obj.get("spec"))
    causes: list[Cause] = []
    rules = as_list(spec.get("rules"))
    if not rules and spec.get("defaultBackend") is None:
        causes.append(v.invalid("spec", v.Raw("networking.IngressSpec{...}"),
                                "either `defaultBackend` or `rules` must be specified"))
    if spec.get("defaultBackend") is not None:
        causes += _ingress_backend(as_dict(spec.get("defaultBackend")), "spec.defaultBackend")
    for i, rule in enumerate(rules):
        r = as_dict(rule)
        host = r.get("host")
        if isinstance(host, str) and host:
            if v.is_ip(host):
                causes.append(v.invalid(f"spec.rules[{i}].host", host,
                                        "must be a DNS name, not an IP address"))
            else:
                name = host[2:] if host.startswith("*.") else host
                causes += [v.invalid(f"spec.rules[{i}].host", host, e)
                           for e in v.dns1123_subdomain_errors(name)]
        for j, p in enumerate(as_list(as_dict(r.get("http")).get("paths"))):
            path = as_dict(p)
            f = f"spec.rules[{i}].http.paths[{j}]"
            kind, text = path.get("pathType"), path.get("path")
            if kind is None:
                causes.append(v.required(f"{f}.pathType", "pathType must be specified"))
            elif kind not in _PATH_TYPES:
                causes.append(v.not_supported(f"{f}.pathType", kind, _PATH_TYPES))
            elif kind in ("Exact", "Prefix") and isinstance(text, str):
                if not text.startswith("/"):
                    causes.append(v.invalid(f"{f}.path", text, "must be an absolute path"))
                else:
                    for part in _BAD_PATH_PARTS:
                        if part in text:
                            causes.append(v.invalid(f"{f}.path", text,
                                                    f"must not contain '{part}'"))
                    for end in _BAD_PATH_ENDS:
                        if text.endswith(end):
                            causes.append(v.invalid(f"{f}.path", text,
                                                    f"cannot end with '{end}'"))
            causes += _ingress_backend(as_dict(path.get("backend")), f"{f}.backend")
    return causes


# -- discovery EndpointSlice (ValidateEndpointSlice: address type, addresses, ports) -----------

_ADDRESS_TYPES: Final = ["FQDN", "IPv4", "IPv6"]
_MAX_ADDRESSES: Final = 100


def _sloppy_ip(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """netutils.ParseIPSloppy: IPv4 octets may carry leading zeros (read as decimal)."""
    try:
        return ipaddress.ip_address(address)
    except ValueError:
        pass
    parts = address.split(".")
    if len(parts) == 4 and all(p.isdigit() and p.isascii() for p in parts):
        try:
            return ipaddress.IPv4Address(".".join(str(int(p)) for p in parts))
        except ValueError:
            return None
    return None


def _address_errors(kind: Any, address: Any) -> str:
    """IsValidIPv4Address / IsValidIPv6Address: an IPv4-mapped IPv6 address counts as IPv4
    (Go's To4), not as IPv6."""
    if not isinstance(address, str) or kind not in ("IPv4", "IPv6"):
        return ""
    ip = _sloppy_ip(address)
    is4 = ip is not None and (ip.version == 4 or (
        isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None))
    if ip is None or is4 != (kind == "IPv4"):
        return f"must be a valid {kind} address"
    return ""


def validate_endpoint_slice(obj: Object) -> list[Cause]:
    causes: list[Cause] = []
    kind = obj.get("addressType")
    if kind is None:
        causes.append(v.required("addressType"))
    elif kind not in _ADDRESS_TYPES:
        causes.append(v.not_supported("addressType", kind, _ADDRESS_TYPES))
    for i, ep in enumerate(as_list(obj.get("endpoints"))):
        addresses = as_list(as_dict(ep).get("addresses"))
        field = f"endpoints[{i}].addresses"
        if not addresses:
            causes.append(v.required(field, "must contain at least 1 address"))
        elif len(addresses) > _MAX_ADDRESSES:
            causes.append({"reason": "FieldValueTooMany", "field": field,
                           "message": f"Too many: {len(addresses)}: must have at most "
                                      f"{_MAX_ADDRESSES} items"})
        for j, address in enumerate(addresses):
            err = _address_errors(kind, address)
            if err:
                causes.append(v.invalid(f"{field}[{j}]", address, err))
    for i, port in enumerate(as_list(obj.get("ports"))):
        p = as_dict(port)
        proto = p.get("protocol")
        if proto is not None and proto not in _PROTOCOLS:
            causes.append(v.not_supported(f"ports[{i}].protocol", proto, _PROTOCOLS))
    return causes


# -- admissionregistration webhook configurations (validateWebhook, v1 rules) ------------------

_SIDE_EFFECTS: Final = ["None", "NoneOnDryRun"]
_FAILURE_POLICIES: Final = ["Fail", "Ignore"]
_MATCH_POLICIES: Final = ["Equivalent", "Exact"]
_REVIEW_VERSIONS: Final = ["v1", "v1beta1"]


def validate_webhook_configuration(obj: Object) -> list[Cause]:
    causes: list[Cause] = []
    names: set[str] = set()
    for i, hook in enumerate(as_list(obj.get("webhooks"))):
        h = as_dict(hook)
        base = f"webhooks[{i}]"
        name = h.get("name")
        if isinstance(name, str):
            if name in names:
                causes.append(v.duplicate(f"{base}.name", name))
            names.add(name)
            causes += [v.invalid(f"{base}.name", name, e)
                       for e in v.dns1123_subdomain_errors(name)]
            if len(name.split(".")) < 3:
                causes.append(v.invalid(f"{base}.name", name, "should be a domain with at "
                                        "least three segments separated by dots"))
        side = h.get("sideEffects")
        if side is None:
            causes.append(v.required(f"{base}.sideEffects", "must specify one of None, "
                                     "NoneOnDryRun"))
        elif side not in _SIDE_EFFECTS:
            causes.append(v.not_supported(f"{base}.sideEffects", side, _SIDE_EFFECTS))
        versions = as_list(h.get("admissionReviewVersions"))
        if not versions:
            causes.append(v.required(f"{base}.admissionReviewVersions",
                                     "must specify one of v1, v1beta1"))
        elif not any(x in _REVIEW_VERSIONS for x in versions):
            causes.append(v.invalid(f"{base}.admissionReviewVersions", versions,
                                    "must include at least one of v1, v1beta1"))
        for key, allowed in (("failurePolicy", _FAILURE_POLICIES),
                             ("matchPolicy", _MATCH_POLICIES)):
            val = h.get(key)
            if val is not None and val not in allowed:
                causes.append(v.not_supported(f"{base}.{key}", val, allowed))
        timeout = h.get("timeoutSeconds")
        if isinstance(timeout, int) and not 1 <= timeout <= 30:
            causes.append(v.invalid(f"{base}.timeoutSeconds", timeout,
                                    "the timeout value must be between 1 and 30 seconds"))
        client = as_dict(h.get("clientConfig"))
        if bool(client.get("url")) == bool(client.get("service")):
            causes.append(v.required(f"{base}.clientConfig",
                                     "exactly one of url or service is required"))
    return causes


VALIDATORS: Final[dict[tuple[str, str], Validator]] = {
    ("discovery.plat.io", "EndpointSlice"): validate_endpoint_slice,
    ("admissionregistration.plat.io", "ValidatingWebhookConfiguration"):
        validate_webhook_configuration,
    ("admissionregistration.plat.io", "MutatingWebhookConfiguration"):
        validate_webhook_configuration,
    ("", "LimitRange"): validate_limit_range,
    ("networking.plat.io", "Ingress"): validate_ingress,
    ("policy", "PodDisruptionBudget"): validate_pdb,
    ("scheduling.plat.io", "PriorityClass"): validate_priority_class,
    ("", "ResourceQuota"): validate_resource_quota,
    ("storage.plat.io", "StorageClass"): validate_storage_class,
    ("node.plat.io", "RuntimeClass"): validate_runtime_class,
    ("networking.plat.io", "NetworkPolicy"): validate_network_policy,
}

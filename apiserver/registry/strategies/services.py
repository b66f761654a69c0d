"""Service (core v1; upstream ``pkg/registry/core/service/strategy.go``, the allocation in
``pkg/registry/core/service/storage/alloc.go``, ``SetDefaults_Service`` and
``ValidateService``).

Cluster IPs come from ``--service-cluster-ip-range`` and node ports from
``--service-node-port-range`` through ``apiserver.registry.allocators`` (records in the store,
so two API servers on one store never hand out one value twice).
"""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING, Any, Final, TypeGuard

from apiserver import selectors, status
from apiserver.registry import allocators
from apiserver.registry import validation as v
from apiserver.registry.strategy import Object, Strategy, as_dict, as_list, dict_at
from apiserver.registry.treecopy import deep_copy

if TYPE_CHECKING:
    from apiserver.registry.strategy import Allocation
    from apiserver.registry.validation import Cause
    from storage.interface import Interface

TYPES: Final = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
PROTOCOLS: Final = ["SCTP", "TCP", "UDP"]
AFFINITIES: Final = ["ClientIP", "None"]
TRAFFIC_POLICIES: Final = ["Cluster", "Local"]
FAMILY_POLICIES: Final = ["PreferDualStack", "RequireDualStack", "SingleStack"]
FAMILIES: Final = ["IPv4", "IPv6"]
DEFAULT_AFFINITY_TIMEOUT: Final = 10800
MAX_AFFINITY_TIMEOUT: Final = 86400
DNS1035_FMT: Final = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_RE: Final = re.compile(f"^{DNS1035_FMT}$")
_PORT_NAME_CHARS: Final = re.compile(r"^[-a-z0-9]+$")
_HAS_LETTER: Final = re.compile(r"[a-z]")
KUBELET_PORT: Final = 10250
CIDR_EXAMPLE: Final = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
IP_EXAMPLE: Final = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"


def dns1035_label_errors(value: str) -> list[str]:
    """Upstream IsDNS1035Label (Service names)."""
    errs: list[str] = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _DNS1035_RE.match(value):
        errs.append("a DNS-1035 label must consist of lower case alphanumeric characters or "
                    "'-', start with an alphabetic character, and end with an alphanumeric "
                    "character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
                    f"'{DNS1035_FMT}')")
    return errs


def port_name_errors(value: str) -> list[str]:
    """Upstream IsValidPortName (an IANA service name)."""
    errs: list[str] = []
    if len(value) > 15:
        errs.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARS.match(value):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _HAS_LETTER.search(value):
        errs.append("must contain at least one letter (a-z)")
    if "--" in value:
        errs.append("must not contain consecutive hyphens")
    if value and (value[0] == "-" or value[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def _is_int(x: Any) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool)


def stype(obj: Object) -> str:
    return str(as_dict(obj.get("spec")).get("type") or "ClusterIP")


def needs_cluster_ip(obj: Object) -> bool:
    return stype(obj) != "ExternalName"


def needs_node_ports(obj: Object) -> bool:
    t = stype(obj)
    if t == "NodePort":
        return True
    if t == "LoadBalancer":
        return as_dict(obj.get("spec")).get("allocateLoadBalancerNodePorts") is not False
    return False


def needs_health_check_port(obj: Object) -> bool:
    spec = as_dict(obj.get("spec"))
    return stype(obj) == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def externally_accessible(obj: Object) -> bool:
    """Upstream ExternallyAccessible: LoadBalancer, NodePort, or ClusterIP with externalIPs."""
    t = stype(obj)
    return t in ("LoadBalancer", "NodePort") or (
        t == "ClusterIP" and bool(as_list(as_dict(obj.get("spec")).get("externalIPs"))))


def is_headless(obj: Object) -> bool:
    spec = as_dict(obj.get("spec"))
    return spec.get("clusterIP") == "None" or as_list(spec.get("clusterIPs"))[:1] == ["None"]


class ServiceStrategy(Strategy):
    kind = "Service"
    resource = "services"
    singular = "service"
    short_names = ("svc",)
    categories = ("all",)
    has_status = True
    # upstream's service SelectableFields (v1.30+): kube-proxy and the kubelet watch
    # services with spec.clusterIP!=None
    field_getters = {"spec.clusterIP": selectors.path_getter("spec.clusterIP"),
                     "spec.type": selectors.path_getter("spec.type")}

    def name_errors(self, name: str) -> list[str]:
        return dns1035_label_errors(name)

    def field_label_error(self, label: str) -> str:
        return selectors.core_unsupported(label)

    # -- defaults -------------------------------------------------------------------------------

    def default(self, obj: Object) -> None:
        """SetDefaults_Service."""
        spec = dict_at(obj, "spec")
        spec.setdefault("sessionAffinity", "None")
        if spec.get("sessionAffinity") == "ClientIP":
            sac = spec.get("sessionAffinityConfig")
            if not isinstance(sac, dict) or not isinstance(sac.get("clientIP"), dict) \
                    or sac["clientIP"].get("timeoutSeconds") is None:
                sac = sac if isinstance(sac, dict) else {}
                cip: dict[str, Any] = sac["clientIP"] if isinstance(sac.get("clientIP"),
                                                                    dict) else {}
                cip["timeoutSeconds"] = DEFAULT_AFFINITY_TIMEOUT
                sac["clientIP"] = cip
                spec["sessionAffinityConfig"] = sac
        if not spec.get("type"):
            spec["type"] = "ClusterIP"
        for p in as_list(spec.get("ports")):
            if not isinstance(p, dict):
                continue
            if not p.get("protocol"):
                p["protocol"] = "TCP"
            if p.get("targetPort") in (None, 0, ""):
                p["targetPort"] = p.get("port")
        t = spec["type"]
        if externally_accessible(obj) and not spec.get("externalTrafficPolicy"):
            spec["externalTrafficPolicy"] = "Cluster"
        if t != "ExternalName" and not spec.get("internalTrafficPolicy"):
            spec["internalTrafficPolicy"] = "Cluster"
        if t == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
            spec["allocateLoadBalancerNodePorts"] = True
        st = obj.get("status")
        if isinstance(st, dict):
            if not isinstance(st.get("loadBalancer"), dict):
                st["loadBalancer"] = {}
            for ing in as_list(as_dict(st.get("loadBalancer")).get("ingress")):
                if isinstance(ing, dict) and ing.get("ip") and not ing.get("ipMode"):
                    ing["ipMode"] = "VIP"

    def _init_ip_fields(self, obj: Object) -> None:
        """Upstream normalizeClusterIPs + initIPFamilyFields for a single-stack cluster."""
        spec = obj["spec"]
        if not needs_cluster_ip(obj):
            return
        cip = spec.get("clusterIP")
        cips = spec.get("clusterIPs")
        if cip and not cips:
            spec["clusterIPs"] = [cip]
        elif cips and isinstance(cips, list) and not cip:
            spec["clusterIP"] = cips[0]
        family = allocators.ranges().family
        headless_no_selector = is_headless(obj) and not spec.get("selector")
        if spec.get("ipFamilyPolicy") is None:
            spec["ipFamilyPolicy"] = "RequireDualStack" if headless_no_selector \
                else "SingleStack"
        if not spec.get("ipFamilies"):
            first = as_list(spec.get("clusterIPs"))[:1]
            fam = family
            if first and first[0] != "None":
                try:
                    fam = "IPv6" if ipaddress.ip_address(str(first[0])).version == 6 else "IPv4"
                except ValueError:
                    pass
            spec["ipFamilies"] = [fam]

    def prepare_for_create(self, obj: Object) -> None:
        super().prepare_for_create(obj)
        # upstream resets the status to its zero value, which encodes as {"loadBalancer": {}}
        obj["status"] = {"loadBalancer": {}}
        self._init_ip_fields(obj)

    def prepare_for_update(self, new: Object, old: Object) -> None:
        super().prepare_for_update(new, old)
        if self.subresource == "status":
            return
        spec = new["spec"]
        ospec = as_dict(old.get("spec"))
        # upstream patchAllocatedValues: what the client left out keeps its allocated value
        if needs_cluster_ip(old) and needs_cluster_ip(new):
            if not spec.get("clusterIP") and ospec.get("clusterIP"):
                spec["clusterIP"] = ospec["clusterIP"]
            if not spec.get("clusterIPs") and ospec.get("clusterIPs") \
                    and spec.get("clusterIP") == ospec.get("clusterIP"):
                spec["clusterIPs"] = deep_copy(ospec["clusterIPs"])
            # upstream normalizeClusterIPs: the singular field changed and the plural did not
            # (a client that knows only clusterIP): the plural follows it
            cip = spec.get("clusterIP")
            if cip and cip != ospec.get("clusterIP") \
                    and spec.get("clusterIPs") == ospec.get("clusterIPs"):
                spec["clusterIPs"] = [cip]
            if spec.get("ipFamilyPolicy") is None and ospec.get("ipFamilyPolicy"):
                spec["ipFamilyPolicy"] = ospec["ipFamilyPolicy"]
            if not spec.get("ipFamilies") and ospec.get("ipFamilies"):
                spec["ipFamilies"] = deep_copy(ospec["ipFamilies"])
        if needs_node_ports(old) and needs_node_ports(new):
            # by port name, as upstream: the client may have changed the rest of the port
            old_ports = {p.get("name") or "": p.get("nodePort")
                         for p in as_list(ospec.get("ports")) if isinstance(p, dict)}
            for p in as_list(spec.get("ports")):
                if isinstance(p, dict) and not p.get("nodePort"):
                    np = old_ports.get(p.get("name") or "")
                    used = {q.get("nodePort") for q in as_list(spec.get("ports"))
                            if isinstance(q, dict)}
                    if np and np not in used:
                        p["nodePort"] = np
        if needs_health_check_port(old) and needs_health_check_port(new) \
                and not spec.get("healthCheckNodePort") and ospec.get("healthCheckNodePort"):
            spec["healthCheckNodePort"] = ospec["healthCheckNodePort"]
        self._drop_type_dependent(new, old)
        self._init_ip_fields(new)

    def _drop_type_dependent(self, new: Object, old: Object) -> None:
        """Upstream dropTypeDependentFields: values the new type does not use and the client
        did not change are cleared."""
        spec = new["spec"]
        ospec = as_dict(old.get("spec"))
        if needs_cluster_ip(old) and not needs_cluster_ip(new):
            if spec.get("clusterIP") == ospec.get("clusterIP"):
                spec.pop("clusterIP", None)
            if spec.get("clusterIPs") == ospec.get("clusterIPs"):
                spec.pop("clusterIPs", None)
            if spec.get("ipFamilies") == ospec.get("ipFamilies"):
                spec.pop("ipFamilies", None)
            if spec.get("ipFamilyPolicy") == ospec.get("ipFamilyPolicy"):
                spec.pop("ipFamilyPolicy", None)
            if spec.get("internalTrafficPolicy") == ospec.get("internalTrafficPolicy"):
                spec.pop("internalTrafficPolicy", None)
        if needs_node_ports(old) and not needs_node_ports(new):
            old_np = {(p.get("port"), p.get("protocol")): p.get("nodePort")
                      for p in as_list(ospec.get("ports")) if isinstance(p, dict)}
            for p in as_list(spec.get("ports")):
                if isinstance(p, dict) and p.get("nodePort") \
                        and old_np.get((p.get("port"), p.get("protocol"))) == p["nodePort"]:
                    p.pop("nodePort")
        if needs_health_check_port(old) and not needs_health_check_port(new) \
                and spec.get("healthCheckNodePort") == ospec.get("healthCheckNodePort"):
            spec.pop("healthCheckNodePort", None)
        if stype(new) != "LoadBalancer" and stype(old) == "LoadBalancer":
            if spec.get("allocateLoadBalancerNodePorts") == \
                    ospec.get("allocateLoadBalancerNodePorts"):
                spec.pop("allocateLoadBalancerNodePorts", None)
            if spec.get("loadBalancerClass") == ospec.get("loadBalancerClass"):
                spec.pop("loadBalancerClass", None)
        if stype(new) not in ("NodePort", "LoadBalancer") \
                and stype(old) in ("NodePort", "LoadBalancer") \
                and spec.get("externalTrafficPolicy") == ospec.get("externalTrafficPolicy"):
            spec.pop("externalTrafficPolicy", None)

    # -- validation -----------------------------------------------------------------------------

    def validate(self, obj: Object) -> list[Cause]:
        if self.subresource == "status":
            return self._validate_status(obj)
        causes: list[Cause] = []
        spec = as_dict(obj.get("spec"))
        t = spec.get("type") or "ClusterIP"
        if t not in TYPES:
            causes.append(v.not_supported("spec.type", t, TYPES))
        ports = as_list(spec.get("ports"))
        headless = is_headless(obj)
        if t == "ExternalName":
            causes += self._validate_external_name(spec)
        elif not ports and not headless:
            causes.append(v.required("spec.ports"))
        if t in ("NodePort", "LoadBalancer") and headless:
            causes.append(v.invalid("spec.clusterIPs[0]", "None",
                                    f"may not be set to 'None' for {t} services"))
        causes += self._validate_ports(spec, t)
        aff = spec.get("sessionAffinity") or "None"
        if aff not in AFFINITIES:
            causes.append(v.not_supported("spec.sessionAffinity", aff, AFFINITIES))
        sac = as_dict(spec.get("sessionAffinityConfig"))
        if aff == "ClientIP":
            tmo = as_dict(sac.get("clientIP")).get("timeoutSeconds")
            if _is_int(tmo) and not 0 < tmo <= MAX_AFFINITY_TIMEOUT:
                causes.append(v.invalid("spec.sessionAffinityConfig.clientIP.timeoutSeconds",
                                        tmo, f"must be greater than 0 and less than "
                                        f"{MAX_AFFINITY_TIMEOUT}"))
        elif aff == "None" and spec.get("sessionAffinityConfig") is not None:
            causes.append(v.forbidden("spec.sessionAffinityConfig",
                                      "must not be set when session affinity is None"))
        for key in ("selector",):
            causes += v.validate_labels(spec.get(key), f"spec.{key}") if spec.get(key) \
                else []
        etp = spec.get("externalTrafficPolicy")
        if externally_accessible(obj):
            if not etp:
                causes.append(v.required("spec.externalTrafficPolicy", ""))
            elif etp not in TRAFFIC_POLICIES:
                causes.append(v.not_supported("spec.externalTrafficPolicy", etp,
                                              TRAFFIC_POLICIES))
        elif etp:
            causes.append(v.invalid("spec.externalTrafficPolicy", etp,
                                    "may only be set for externally-accessible services"))
        itp = spec.get("internalTrafficPolicy")
        if itp is None and t != "ExternalName":
            causes.append(v.required("spec.internalTrafficPolicy", ""))
        elif itp is not None and itp not in TRAFFIC_POLICIES:
            causes.append(v.not_supported("spec.internalTrafficPolicy", itp, TRAFFIC_POLICIES))
        hc = spec.get("healthCheckNodePort")
        if hc:
            if not needs_health_check_port(obj):
                causes.append(v.invalid("spec.healthCheckNodePort", hc,
                                        "may only be set when `type` is 'LoadBalancer' and "
                                        "`externalTrafficPolicy` is 'Local'"))
            elif not _is_int(hc) or not 0 < hc <= 65535:
                causes.append(v.invalid("spec.healthCheckNodePort", hc,
                                        "must be between 1 and 65535, inclusive"))
        if spec.get("allocateLoadBalancerNodePorts") is not None and t != "LoadBalancer":
            causes.append(v.forbidden("spec.allocateLoadBalancerNodePorts",
                                      "may only be used when `type` is 'LoadBalancer'"))
        if t == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
            causes.append(v.required("spec.allocateLoadBalancerNodePorts", ""))
        lbc = spec.get("loadBalancerClass")
        if lbc is not None and t != "LoadBalancer":
            causes.append(v.forbidden("spec.loadBalancerClass",
                                      "may only be used when `type` is 'LoadBalancer'"))
        elif lbc is not None:
            for e in v.qualified_name_errors(str(lbc)):
                causes.append(v.invalid("spec.loadBalancerClass", lbc, e))
        for i, ip in enumerate(as_list(spec.get("externalIPs"))):
            if not isinstance(ip, str) or not v.is_ip(ip):
                causes.append(v.invalid(f"spec.externalIPs[{i}]", ip, IP_EXAMPLE))
            else:
                causes += _special_ip(ip, f"spec.externalIPs[{i}]")
        if t == "LoadBalancer":
            for i, p in enumerate(as_list(spec.get("ports"))):
                if as_dict(p).get("port") == KUBELET_PORT:
                    causes.append(v.invalid(f"spec.ports[{i}]", KUBELET_PORT,
                                            f"may not expose port {KUBELET_PORT} externally "
                                            "since it is used by kubelet"))
        ranges = as_list(spec.get("loadBalancerSourceRanges"))
        if ranges and t != "LoadBalancer":
            causes.append(v.forbidden("spec.LoadBalancerSourceRanges",
                                      "may only be used when `type` is 'LoadBalancer'"))
        for i, cidr in enumerate(ranges):
            try:
                ipaddress.ip_network(str(cidr).strip(), strict=True)
                ok = "/" in str(cidr)
            except ValueError:
                ok = False
            if not ok:
                causes.append(v.invalid(f"spec.LoadBalancerSourceRanges[{i}]",
                                        str(cidr).strip(), CIDR_EXAMPLE))
        causes += self._validate_ip_fields(spec, t)
        return causes

    def _validate_external_name(self, spec: dict[str, Any]) -> list[Cause]:
        causes: list[Cause] = []
        if spec.get("clusterIPs") or spec.get("clusterIP"):
            causes.append(v.forbidden("spec.clusterIPs",
                                      "may not be set for ExternalName services"))
        if spec.get("ipFamilies"):
            causes.append(v.forbidden("spec.ipFamilies",
                                      "may not be set for ExternalName services"))
        if spec.get("ipFamilyPolicy"):
            causes.append(v.forbidden("spec.ipFamilyPolicy",
                                      "may not be set for ExternalName services"))
        name = spec.get("externalName")
        if not name:
            causes.append(v.required("spec.externalName", ""))
        else:
            clean = str(name)[:-1] if str(name).endswith(".") else str(name)
            for e in v.dns1123_subdomain_errors(clean):
                causes.append(v.invalid("spec.externalName", clean, e))
        return causes

    def _validate_ports(self, spec: dict[str, Any], t: str) -> list[Cause]:
        causes: list[Cause] = []
        ports = as_list(spec.get("ports"))
        names: set[str] = set()
        seen: set[tuple[Any, Any]] = set()
        node_ports: set[tuple[Any, Any]] = set()
        for i, p in enumerate(ports):
            pf = f"spec.ports[{i}]"
            p = as_dict(p)
            name = p.get("name") or ""
            if len(ports) > 1 and not name:
                causes.append(v.required(f"{pf}.name", ""))
            elif name:
                for e in v.dns1123_label_errors(str(name)):
                    causes.append(v.invalid(f"{pf}.name", name, e))
                if name in names:
                    causes.append(v.duplicate(f"{pf}.name", name))
                names.add(str(name))
            port = p.get("port")
            if not _is_int(port) or not 1 <= port <= 65535:
                causes.append(v.invalid(f"{pf}.port", port if port is not None else 0,
                                        "must be between 1 and 65535, inclusive"))
            proto = p.get("protocol") or ""
            if proto not in PROTOCOLS:
                causes.append(v.not_supported(f"{pf}.protocol", proto, PROTOCOLS))
            ap = p.get("appProtocol")
            if ap is not None:
                for e in v.qualified_name_errors(str(ap)):
                    causes.append(v.invalid(f"{pf}.appProtocol", ap, e))
            tp = p.get("targetPort")
            if _is_int(tp):
                if not 1 <= tp <= 65535:
                    causes.append(v.invalid(f"{pf}.targetPort", tp,
                                            "must be between 1 and 65535, inclusive"))
            elif isinstance(tp, str):
                for e in port_name_errors(tp):
                    causes.append(v.invalid(f"{pf}.targetPort", tp, e))
            np = p.get("nodePort")
            if np:
                if t == "ClusterIP":
                    causes.append(v.forbidden(f"{pf}.nodePort",
                                              "may not be used when `type` is 'ClusterIP'"))
                elif t == "ExternalName":
                    causes.append(v.forbidden(f"{pf}.nodePort",
                                              "may not be used when `type` is 'ExternalName'"))
                elif not _is_int(np) or not 1 <= np <= 65535:
                    causes.append(v.invalid(f"{pf}.nodePort", np,
                                            "must be between 1 and 65535, inclusive"))
                else:
                    key = (np, proto)
                    if key in node_ports:
                        causes.append(v.duplicate(f"{pf}.nodePort", np))
                    node_ports.add(key)
            key2 = (port, proto)
            if key2 in seen:
                causes.append(v.duplicate(pf, v.Raw(_port_go(p))))
            seen.add(key2)
        return causes

    def _validate_ip_fields(self, spec: dict[str, Any], t: str) -> list[Cause]:
        """ValidateServiceClusterIPsRelatedFields and the single-stack checks of alloc.go."""
        if t == "ExternalName":
            return []
        causes: list[Cause] = []
        cip = spec.get("clusterIP") or ""
        cips = as_list(spec.get("clusterIPs"))
        if cip:
            if not cips:
                causes.append(v.required("spec.clusterIPs", ""))
            elif cips[0] != cip:
                causes.append(v.invalid("spec.clusterIPs", cips,
                                        "first value must match `clusterIP`"))
        elif cips:
            causes.append(v.invalid("spec.clusterIPs", cips,
                                    "must be empty when `clusterIP` is not specified"))
        seen: set[str] = set()
        fams = as_list(spec.get("ipFamilies"))
        for i, fam in enumerate(fams):
            if fam not in FAMILIES:
                causes.append(v.not_supported(f"spec.ipFamilies[{i}]", fam, FAMILIES))
            if fam in seen:
                causes.append(v.duplicate(f"spec.ipFamilies[{i}]", fam))
            seen.add(str(fam))
        pol = spec.get("ipFamilyPolicy")
        if pol is not None and pol not in FAMILY_POLICIES:
            causes.append(v.not_supported("spec.ipFamilyPolicy", pol, FAMILY_POLICIES))
        bad = False
        for i, ip in enumerate(cips):
            if i == 0 and ip == "None":
                if len(cips) > 1:
                    bad = True
                    causes.append(v.invalid("spec.clusterIPs", cips,
                                            "'None' must be the first and only value"))
                continue
            if not isinstance(ip, str) or not v.is_ip(ip):
                bad = True
                causes.append(v.invalid(f"spec.clusterIPs[{i}]", ip, IP_EXAMPLE))
        if len(cips) > 2:
            causes.append(v.invalid("spec.clusterIPs", cips, "may only hold up to 2 values"))
        if bad or causes:
            return causes
        headless = cips[:1] == ["None"]
        if not headless:
            for i, ip in enumerate(cips[:len(fams)]):
                v6 = ipaddress.ip_address(ip).version == 6
                if fams[i] == "IPv4" and v6:
                    causes.append(v.invalid(f"spec.clusterIPs[{i}]", ip, "expected an IPv4 "
                                            f"value as indicated by `ipFamilies[{i}]`"))
                if fams[i] == "IPv6" and not v6:
                    causes.append(v.invalid(f"spec.clusterIPs[{i}]", ip, "expected an IPv6 "
                                            f"value as indicated by `ipFamilies[{i}]`"))
        # this cluster is single-stack (one --service-cluster-ip-range)
        family = allocators.ranges().family
        headless_no_selector = headless and not spec.get("selector")
        if pol == "RequireDualStack" and not headless_no_selector:
            causes.append(v.invalid("spec.ipFamilyPolicy", pol,
                                    "this cluster is not configured for dual-stack services"))
        if not headless_no_selector:
            for i, fam in enumerate(fams):
                if fam != family:
                    causes.append(v.invalid(f"spec.ipFamilies[{i}]", fam,
                                            "not configured on this cluster"))
            if len(fams) > 1 and pol == "SingleStack":
                causes.append(v.invalid("spec.ipFamilies", fams,
                                        "when spec.ipFamilyPolicy is SingleStack, must contain "
                                        "no more than one value"))
        return causes

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        causes = self.validate(new)
        if self.subresource == "status":
            return causes
        ns, os_ = as_dict(new.get("spec")), as_dict(old.get("spec"))
        if stype(new) == "LoadBalancer" and stype(old) == "LoadBalancer" \
                and ns.get("loadBalancerClass") != os_.get("loadBalancerClass"):
            lbc = ns.get("loadBalancerClass")
            causes.append(v.invalid("spec.loadBalancerClass", v.Raw("null") if lbc is None
                                    else lbc, "may not change once set"))
        if stype(new) == "ExternalName" or stype(old) == "ExternalName":
            return causes
        ofams, nfams = as_list(os_.get("ipFamilies")), as_list(ns.get("ipFamilies"))
        if len(ofams) == len(nfams):
            for i, fam in enumerate(ofams):
                if fam != nfams[i]:
                    fams = ", ".join(v.go_quote(str(f)) for f in nfams)
                    causes.append(v.invalid(f"spec.ipFamilies[{i}]",
                                            v.Raw(f"[]core.IPFamily{{{fams}}}"),
                                            "may not change once set"))
        ocips = as_list(as_dict(old.get("spec")).get("clusterIPs"))
        ncips = as_list(as_dict(new.get("spec")).get("clusterIPs"))
        if is_headless(old) and is_headless(new):
            return causes
        if len(ocips) == len(ncips):
            for i, ip in enumerate(ocips):
                if ip != ncips[i]:
                    causes.append(v.invalid(f"spec.clusterIPs[{i}]", ncips,
                                            "may not change once set"))
        elif len(ocips) > len(ncips) and not ncips:
            causes.append(v.invalid("spec.clusterIPs[0]", ncips,
                                    "primary clusterIP can not be unset"))
        elif len(ocips) > len(ncips) or (ocips and ocips[0] != ncips[0]):
            causes.append(v.invalid("spec.clusterIPs[0]", ncips, "may not change once set"))
        return causes

    def _validate_status(self, obj: Object) -> list[Cause]:
        causes: list[Cause] = []
        lb = as_dict(as_dict(obj.get("status")).get("loadBalancer"))
        for i, ing in enumerate(as_list(lb.get("ingress"))):
            ing = as_dict(ing)
            f = f"status.loadBalancer.ingress[{i}]"
            ip = ing.get("ip")
            if ip and not v.is_ip(str(ip)):
                causes.append(v.invalid(f"{f}.ip", ip, "must be a valid IP address"))
            host = ing.get("hostname")
            if host:
                for e in v.dns1123_subdomain_errors(str(host)):
                    causes.append(v.invalid(f"{f}.hostname", host, e))
                if v.is_ip(str(host)):
                    causes.append(v.invalid(f"{f}.hostname", host,
                                            "must be a DNS name, not an IP address"))
            mode = ing.get("ipMode")
            if mode is not None:
                if not ip:
                    causes.append(v.required(f"{f}.ip", "must be specified when `ipMode` "
                                             "is set"))
                elif mode not in ("Proxy", "VIP"):
                    causes.append(v.not_supported(f"{f}.ipMode", mode, ["Proxy", "VIP"]))
        return causes

    # -- allocation -------------------------------------------------------------------------

    async def allocate(self, storage: Interface, new: Object, old: Object | None,
                       dry_run: bool) -> Allocation | None:
        if self.subresource:
            return None
        meta = new["metadata"]
        owner = allocators.Owner(str(meta.get("namespace") or ""), str(meta.get("name") or ""),
                                 str(meta.get("uid") or ""))
        res = allocators.Reservation(storage, owner)
        try:
            await self._alloc_ips(res, new, old, dry_run)
            await self._alloc_ports(res, new, old, dry_run)
        except BaseException:
            await res.rollback()
            raise
        if old is not None:
            res.free_ips = sorted(allocators.service_ips(old) - allocators.service_ips(new))
            res.free_ports = sorted(allocators.service_node_ports(old)
                                    - allocators.service_node_ports(new))
        return res

    async def _alloc_ips(self, res: allocators.Reservation, new: Object, old: Object | None,
                         dry_run: bool) -> None:
        if not needs_cluster_ip(new) or is_headless(new):
            return
        spec = new["spec"]
        held = allocators.service_ips(old) if old is not None else set()
        cip = spec.get("clusterIP")
        name = str(new["metadata"].get("name") or "")
        if cip:
            if cip in held:
                return
            try:
                await res.ip(str(cip), dry_run)
            except allocators.AllocationError as e:
                raise status.invalid(self.kind, self.group, name, [v.invalid(
                    "spec.clusterIPs", as_list(spec.get("clusterIPs")) or [cip],
                    f"failed to allocate IP {cip}: {e}")]) from None
            return
        try:
            ip = await res.next_ip(dry_run)
        except allocators.RangeFull:
            raise status.internal("failed to allocate a serviceIP: range is full") \
                from None
        spec["clusterIP"] = ip
        spec["clusterIPs"] = [ip]

    async def _alloc_ports(self, res: allocators.Reservation, new: Object,
                           old: Object | None, dry_run: bool) -> None:
        spec = new["spec"]
        name = str(new["metadata"].get("name") or "")
        held = allocators.service_node_ports(old) if old is not None else set()
        auto = needs_node_ports(new)
        by_port: dict[Any, int] = {}
        ports = [p for p in as_list(spec.get("ports")) if isinstance(p, dict)]
        if stype(new) in ("ClusterIP", "ExternalName"):
            return
        for i, p in enumerate(ports):
            np = p.get("nodePort")
            if not np and not auto:
                continue
            if not np:
                np = by_port.get(p.get("port"))
                if np is None:
                    # a later port with the same number may name the value to use
                    for q in ports[i + 1:]:
                        if q.get("port") == p.get("port") and q.get("nodePort"):
                            np = q["nodePort"]
                            break
            if np:
                if np not in held and np not in by_port.values():
                    try:
                        await res.port(int(np), dry_run)
                    except allocators.AllocationError as e:
                        raise status.invalid(self.kind, self.group, name, [v.invalid(
                            f"spec.ports[{i}].nodePort", np, str(e))]) from None
                p["nodePort"] = np
            else:
                try:
                    p["nodePort"] = await res.next_port(dry_run)
                except allocators.RangeFull:
                    raise status.internal(
                        "failed to allocate a nodePort: range is full") from None
            by_port.setdefault(p.get("port"), int(p["nodePort"]))
        if needs_health_check_port(new):
            hc = spec.get("healthCheckNodePort")
            if hc:
                if hc not in held:
                    try:
                        await res.port(int(hc), dry_run)
                    except allocators.AllocationError as e:
                        raise status.invalid(self.kind, self.group, name, [v.invalid(
                            "spec.healthCheckNodePort", hc,
                            f"failed to allocate requested HealthCheck NodePort {hc}: "
                            f"{e}")]) from None
            else:
                try:
                    spec["healthCheckNodePort"] = await res.next_port(dry_run)
                except allocators.RangeFull:
                    raise status.internal(
                        "failed to allocate a nodePort: range is full") from None

    async def release(self, storage: Interface, obj: Object) -> None:
        if self.subresource:
            return
        await allocators.release_service(storage, obj)

def _special_ip(ip: str, field: str) -> list[Cause]:
    """Upstream ValidateNonSpecialIP."""
    a = ipaddress.ip_address(ip)
    out: list[Cause] = []
    if a.is_unspecified:
        out.append(v.invalid(field, ip, f"may not be unspecified ({ip})"))
    if a.is_loopback:
        out.append(v.invalid(field, ip, "may not be in the loopback range (127.0.0.0/8, "
                             "::1/128)"))
    if a.is_link_local and not a.is_multicast:
        out.append(v.invalid(field, ip, "may not be in the link-local range (169.254.0.0/16, "
                             "fe80::/10)"))
    mc = ipaddress.ip_network("224.0.0.0/24") if a.version == 4 else \
        ipaddress.ip_network("ff02::/16")
    if a in mc:
        out.append(v.invalid(field, ip, "may not be in the link-local multicast range "
                             "(224.0.0.0/24, ff02::/10)"))
    return out


def _port_go(p: dict[str, Any]) -> str:
    """A ServicePort as Go's %#v prints the internal type (Duplicate's value)."""
    tp = p.get("targetPort")
    if _is_int(tp):
        tps = f"intstr.IntOrString{{Type:0, IntVal:{tp}, StrVal:\"\"}}"
    else:
        tps = f"intstr.IntOrString{{Type:1, IntVal:0, StrVal:{v.go_quote(str(tp or ''))}}}"
    ap = p.get("appProtocol")
    aps = "(*string)(nil)" if ap is None else f"(*string)({v.go_quote(str(ap))})"
    return (f"core.ServicePort{{Name:{v.go_quote(str(p.get('name') or ''))}, "
            f"Protocol:{v.go_quote(str(p.get('protocol') or ''))}, AppProtocol:{aps}, "
            f"Port:{p.get('port')}, TargetPort:{tps}, NodePort:{p.get('nodePort') or 0}}}")

"""Defaulting and validation of the pod spec and the pod template, shared by every kind that
holds one (Pod, PodTemplate, ReplicationController, StatefulSet, Deployment, ...).

Defaults follow upstream ``pkg/apis/core/v1/defaults.go`` (SetDefaults_PodSpec, _Container,
_Probe, _HTTPGetAction, the volume sources, ...); validation follows
``pkg/apis/core/validation/validation.go`` (ValidatePodSpec, ValidatePodTemplateSpec) with
upstream field paths and messages. Pod-only rules (requests defaulted from limits,
enableServiceLinks, image whitespace) are in ``default_pod`` / ``validate_pod_spec(...,
for_pod=True)``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from decimal import ROUND_UP, Decimal, InvalidOperation, localcontext
from typing import TYPE_CHECKING, Any, Final, TypeGuard

from apiserver.registry import validation as v
from apiserver.registry.strategy import dict_at

if TYPE_CHECKING:
    from apiserver.registry.validation import Cause

RESTART_POLICIES: Final = ("Always", "OnFailure", "Never")
DNS_POLICIES: Final = ["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"]
PULL_POLICIES: Final = ["Always", "IfNotPresent", "Never"]
PROTOCOLS: Final = ["SCTP", "TCP", "UDP"]
HTTP_SCHEMES: Final = ["HTTP", "HTTPS"]
TERMINATION_MESSAGE_POLICIES: Final = ["FallbackToLogsOnError", "File"]
PREEMPTION_POLICIES: Final = ["Never", "PreemptLowerPriority"]
TOLERATION_OPERATORS: Final = ["Equal", "Exists"]
TAINT_EFFECTS: Final = ["NoExecute", "NoSchedule", "PreferNoSchedule"]
HOST_PATH_TYPES: Final = ["", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate",
                          "File", "FileOrCreate", "Socket"]
MOUNT_PROPAGATION: Final = ["Bidirectional", "HostToContainer", "None"]
STORAGE_MEDIA: Final = ["", "HugePages", "Memory"]
CONTAINER_RESTART_POLICIES: Final = ["Always"]
DEFAULT_MODE: Final = 0o644
MAX_MODE: Final = 0o777
MAX_INT32: Final = 2**31 - 1
DEFAULT_SCHEDULER: Final = "default-scheduler"

# Every member of VolumeSource (upstream core/v1 types.go), in upstream's order.
VOLUME_SOURCES: Final = (
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret",
    "nfs", "iscsi", "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder",
    "cephfs", "flocker", "downwardAPI", "fc", "azureFile", "configMap", "vsphereVolume",
    "quobyte", "azureDisk", "photonPersistentDisk", "projected", "portworxVolume", "scaleIO",
    "storageos", "csi", "ephemeral", "image")
HANDLERS: Final = ("exec", "httpGet", "tcpSocket", "grpc")
LIFECYCLE_HANDLERS: Final = ("exec", "httpGet", "tcpSocket", "sleep")

_PORT_NAME_CHARS: Final = re.compile(r"^[-a-z0-9]+$")
_PORT_NAME_LETTER: Final = re.compile(r"[a-z]")
_C_IDENT: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ENV_KEY: Final = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


# ---------------------------------------------------------------------------------------------
# quantities (upstream resource.Quantity, as much as requests and limits need)

_QTY_RE: Final = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|"
    r"[eE][+-]?[0-9]+)?$")
_BINARY: Final = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL: Final = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12,
                   "P": 15, "E": 18}
_DEC_SUFFIX: Final = {e: s for s, e in _DECIMAL.items()}


# Upstream caps a quantity's magnitude at the largest int64 and rounds a non-zero value away
# from zero to a whole number of nano units (resource.ParseQuantity); an exponent must fit an
# int32.
_MAX_QUANTITY: Final = Decimal(2**63 - 1)
_NANO: Final = Decimal("1e-9")
_INT32_MAX: Final = 2**31 - 1


def parse_quantity(text: Any) -> tuple[Decimal, str] | None:
    """(value, format) of a quantity string; format is "BinarySI", "DecimalSI" or
    "DecimalExponent"; None when it does not parse."""
    if _is_int(text):
        return _bounded(Decimal(text)), "DecimalSI"
    if not isinstance(text, str):
        return None
    return _parse_quantity_text(text)


@functools.lru_cache(maxsize=4096)
def _parse_quantity_text(text: str) -> tuple[Decimal, str] | None:
    m = _QTY_RE.match(text)
    if m is None:
        return None
    try:
        num = Decimal(m.group(1))
    except InvalidOperation:
        return None
    suffix = m.group(2) or ""
    if suffix in _BINARY:
        # exact: at most 6 factors of 1024 on the digits given
        with localcontext() as ctx:
            ctx.prec = len(num.as_tuple().digits) + 20
            return _bounded(num * (Decimal(1024) ** _BINARY[suffix])), "BinarySI"
    if len(suffix) > 1:  # e<n> / E<n>; "E" alone is exa
        exp = int(suffix[1:])
        if abs(exp) > _INT32_MAX:
            return None
        return _bounded(num, exp), "DecimalExponent"
    return _bounded(num, _DECIMAL[suffix]), "DecimalSI"


def _bounded(num: Decimal, exp10: int = 0) -> Decimal:
    """``num`` * 10**``exp10`` rounded away from zero to nano units, capped at the largest
    int64 (sign kept), without ever building a number beyond those bounds."""
    if num.is_zero():
        return Decimal(0)
    sign = -1 if num.is_signed() else 1
    magnitude = abs(num).adjusted() + exp10  # 10**magnitude <= |value| < 10**(magnitude+1)
    if magnitude > 18:
        value = _MAX_QUANTITY
    elif magnitude < -10:
        value = _NANO  # non-zero: at least one nano unit
    else:
        with localcontext() as ctx:
            ctx.prec = len(num.as_tuple().digits) + 40
            value = abs(num).scaleb(exp10).quantize(_NANO, rounding=ROUND_UP)
            value = min(value, _MAX_QUANTITY)
    return value if sign > 0 else -value


@functools.lru_cache(maxsize=4096)
def format_quantity(value: Decimal, fmt: str) -> str:
    """Quantity.String() of a parsed value (the canonical form the server writes back)."""
    if value == 0:
        return "0"
    # upstream keeps at most nano precision, rounding up
    nanos = (value * Decimal(10) ** 9).to_integral_value(rounding="ROUND_CEILING")
    value = nanos.scaleb(-9)
    if fmt == "BinarySI" and abs(value) >= 1024 and value == value.to_integral_value():
        n = int(value)
        for exp in range(6, 0, -1):
            unit = 1024 ** exp
            if n % unit == 0:
                suffix = {v_: k for k, v_ in _BINARY.items()}[exp]
                return f"{n // unit}{suffix}"
        return str(n)
    # decimal: the largest multiple-of-3 exponent that keeps an integer mantissa
    best_exp = -9
    for exp in range(18, -10, -3):
        mant = value.scaleb(-exp)
        if mant == mant.to_integral_value():
            best_exp = exp
            break
    mant_i = int(value.scaleb(-best_exp))
    if fmt == "DecimalExponent":
        return f"{mant_i}e{best_exp}" if best_exp else str(mant_i)
    return f"{mant_i}{_DEC_SUFFIX[best_exp]}"


def canonical_quantity(text: Any) -> Any:
    parsed = parse_quantity(text)
    return text if parsed is None else format_quantity(*parsed)


# ---------------------------------------------------------------------------------------------
# defaulting


_REF_RE: Final = re.compile(
    r"^(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
    r"(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*(?::[0-9]+)?/)?"
    r"[a-z0-9]+(?:(?:[._]|__|[-]*)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|[-]*)[a-z0-9]+)*)*"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?"
    r"(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?$")


def _pull_policy(image: Any) -> str:
    """Upstream parsers.ParseImageName's tag decides: Always for "latest" (also a name with
    neither tag nor digest), IfNotPresent otherwise (a digest alone, or an image reference
    that does not parse)."""
    m = _REF_RE.match(image) if isinstance(image, str) else None
    if m is None:
        return "IfNotPresent"
    tag = m.group("tag") or ("" if m.group("digest") else "latest")
    return "Always" if tag == "latest" else "IfNotPresent"


def _default_probe(p: Any) -> None:
    if not isinstance(p, dict):
        return
    p.setdefault("timeoutSeconds", 1)
    p.setdefault("periodSeconds", 10)
    p.setdefault("successThreshold", 1)
    p.setdefault("failureThreshold", 3)
    _default_handler(p)


def _default_handler(h: dict[str, Any]) -> None:
    http = h.get("httpGet")
    if isinstance(http, dict):
        if not http.get("path"):
            http["path"] = "/"
        if not http.get("scheme"):
            http["scheme"] = "HTTP"
    grpc = h.get("grpc")
    if isinstance(grpc, dict) and grpc.get("service") is None:
        grpc["service"] = ""


def _default_field_ref(ref: Any) -> None:
    if isinstance(ref, dict) and not ref.get("apiVersion"):
        ref["apiVersion"] = "v1"


def _canonical_resources(res: Any) -> None:
    if not isinstance(res, dict):
        return
    for key in ("limits", "requests"):
        m = res.get(key)
        if isinstance(m, dict):
            for name, q in list(m.items()):
                m[name] = canonical_quantity(q)


def default_container(c: dict[str, Any]) -> None:
    """SetDefaults_Container (and _EphemeralContainer, _ContainerPort, probes, env)."""
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    if not c.get("imagePullPolicy"):
        c["imagePullPolicy"] = _pull_policy(c.get("image"))
    if not isinstance(c.get("resources"), dict):
        c["resources"] = {}
    _canonical_resources(c["resources"])
    for p in _list(c.get("ports")):
        if isinstance(p, dict) and not p.get("protocol"):
            p["protocol"] = "TCP"
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        _default_probe(c.get(key))
    lc = c.get("lifecycle")
    if isinstance(lc, dict):
        for key in ("postStart", "preStop"):
            if isinstance(lc.get(key), dict):
                _default_handler(lc[key])
    for e in _list(c.get("env")):
        if isinstance(e, dict):
            _default_field_ref(_dict(e.get("valueFrom")).get("fieldRef"))


def _default_volume(vol: dict[str, Any]) -> None:
    if not any(vol.get(s) is not None for s in VOLUME_SOURCES):
        vol["emptyDir"] = {}
    for key in ("secret", "configMap", "downwardAPI", "projected"):
        src = vol.get(key)
        if isinstance(src, dict) and src.get("defaultMode") is None:
            src["defaultMode"] = DEFAULT_MODE
    hp = vol.get("hostPath")
    if isinstance(hp, dict) and hp.get("type") is None:
        hp["type"] = ""
    for item in _list(_dict(vol.get("downwardAPI")).get("items")):
        _default_field_ref(_dict(item).get("fieldRef"))
    for src in _list(_dict(vol.get("projected")).get("sources")):
        src = _dict(src)
        for item in _list(_dict(src.get("downwardAPI")).get("items")):
            _default_field_ref(_dict(item).get("fieldRef"))
        sat = src.get("serviceAccountToken")
        if isinstance(sat, dict) and sat.get("expirationSeconds") is None:
            sat["expirationSeconds"] = 3600
    iscsi = vol.get("iscsi")
    if isinstance(iscsi, dict) and not iscsi.get("iscsiInterface"):
        iscsi["iscsiInterface"] = "default"
    rbd = vol.get("rbd")
    if isinstance(rbd, dict):
        if not rbd.get("pool"):
            rbd["pool"] = "rbd"
        if not rbd.get("user"):
            rbd["user"] = "admin"
        if not rbd.get("keyring"):
            rbd["keyring"] = "/etc/ceph/keyring"
    az = vol.get("azureDisk")
    if isinstance(az, dict):
        az.setdefault("cachingMode", "ReadWrite")
        az.setdefault("kind", "Shared")
        az.setdefault("fsType", "ext4")
        az.setdefault("readOnly", False)
    sio = vol.get("scaleIO")
    if isinstance(sio, dict):
        if not sio.get("storageMode"):
            sio["storageMode"] = "ThinProvisioned"
        if not sio.get("fsType"):
            sio["fsType"] = "xfs"
    eph = _dict(_dict(vol.get("ephemeral")).get("volumeClaimTemplate")).get("spec")
    if isinstance(eph, dict) and not eph.get("volumeMode"):
        eph["volumeMode"] = "Filesystem"


def default_pod_spec(spec: dict[str, Any]) -> None:
    """SetDefaults_PodSpec and the defaults of what a pod spec holds (containers, volumes,
    probes, ...). The Pod-only defaults are in ``default_pod``."""
    if not spec.get("dnsPolicy"):
        spec["dnsPolicy"] = "ClusterFirst"
    if not spec.get("restartPolicy"):
        spec["restartPolicy"] = "Always"
    if not isinstance(spec.get("securityContext"), dict):
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = 30
    if not spec.get("schedulerName"):
        spec["schedulerName"] = DEFAULT_SCHEDULER
    # the deprecated serviceAccount mirrors serviceAccountName (conversion v1 <-> internal)
    san, sa = spec.get("serviceAccountName"), spec.get("serviceAccount")
    if not san and sa:
        spec["serviceAccountName"] = sa
    elif san:
        spec["serviceAccount"] = san
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in _list(spec.get(key)):
            if isinstance(c, dict):
                default_container(c)
    for vol in _list(spec.get("volumes")):
        if isinstance(vol, dict):
            _default_volume(vol)
    _canonical_resources(spec.get("resources"))
    overhead = spec.get("overhead")
    if isinstance(overhead, dict):
        for name, q in list(overhead.items()):
            overhead[name] = canonical_quantity(q)


def default_pod_template(tpl: dict[str, Any]) -> None:
    """A PodTemplateSpec as a client reads it back: ``metadata.creationTimestamp: null`` and
    the pod spec defaults (no Pod-only defaults: templates get no enableServiceLinks and no
    requests from limits)."""
    meta = dict_at(tpl, "metadata")
    meta.setdefault("creationTimestamp", None)
    spec = dict_at(tpl, "spec")
    default_pod_spec(spec)


def default_pod(pod: dict[str, Any]) -> None:
    """SetDefaults_Pod: requests copied from limits where missing, enableServiceLinks true,
    hostPort from containerPort under hostNetwork, and the pod spec defaults."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    for key in ("initContainers", "containers"):
        for c in _list(spec.get(key)):
            res = _dict(_dict(c).get("resources"))
            limits = res.get("limits")
            if isinstance(limits, dict) and limits:
                req = dict_at(res, "requests")
                for name, q in limits.items():
                    req.setdefault(name, q)
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    if spec.get("hostNetwork") is True:
        # defaultHostNetworkPorts: hostPort follows containerPort (Pods only since the
        # DefaultHostNetworkHostPortsInPodTemplates gate is off)
        for key in ("initContainers", "containers"):
            for c in _list(spec.get(key)):
                for p in _list(_dict(c).get("ports")):
                    if isinstance(p, dict) and not p.get("hostPort"):
                        p["hostPort"] = p.get("containerPort")
    default_pod_spec(spec)


# ---------------------------------------------------------------------------------------------
# validation helpers


def port_num_errors(port: int) -> list[str]:
    return [] if 1 <= port <= 65535 else ["must be between 1 and 65535, inclusive"]


def port_name_errors(name: str) -> list[str]:
    """Upstream IsValidPortName (an IANA_SVC_NAME)."""
    errs: list[str] = []
    if len(name) > 15:
        errs.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARS.match(name):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _PORT_NAME_LETTER.search(name):
        errs.append("must contain at least one letter (a-z)")
    if "--" in name:
        errs.append("must not contain consecutive hyphens")
    if name.startswith("-") or name.endswith("-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def _port_num_or_name(causes: list[Cause], field: str, port: Any) -> None:
    """ValidatePortNumOrName (an absent port is the IntOrString zero value, 0)."""
    if isinstance(port, str):
        for e in port_name_errors(port):
            causes.append(v.invalid(field, port, e))
        return
    num = port if _is_int(port) else 0
    for e in port_num_errors(num):
        causes.append(v.invalid(field, num, e))


def _validate_handler(h: dict[str, Any], field: str, kinds: Sequence[str]) -> list[Cause]:
    causes: list[Cause] = []
    set_ = [k for k in kinds if h.get(k) is not None]
    if not set_:
        return [v.required(field, "must specify a handler type")]
    for k in set_[1:]:
        causes.append(v.forbidden(f"{field}.{k}", "may not specify more than 1 handler type"))
    if "exec" in set_:
        if not _list(_dict(h["exec"]).get("command")):
            causes.append(v.required(f"{field}.exec.command"))
    if "httpGet" in set_:
        http = _dict(h["httpGet"])
        if not http.get("path"):
            causes.append(v.required(f"{field}.httpGet.path"))
        _port_num_or_name(causes, f"{field}.httpGet.port", http.get("port"))
        scheme = http.get("scheme")
        if scheme not in HTTP_SCHEMES:
            causes.append(v.not_supported(f"{field}.httpGet.scheme", scheme or "",
                                          HTTP_SCHEMES))
        for i, hdr in enumerate(_list(http.get("httpHeaders"))):
            name = _dict(hdr).get("name")
            if not isinstance(name, str) or not re.match(r"^[-A-Za-z0-9]+$", name):
                causes.append(v.invalid(f"{field}.httpGet.httpHeaders[{i}].name", name or "",
                                        "a valid HTTP header must consist of alphanumeric "
                                        "characters or '-' (e.g. 'X-Header-Name', regex used "
                                        "for validation is '[-A-Za-z0-9]+')"))
    if "tcpSocket" in set_:
        _port_num_or_name(causes, f"{field}.tcpSocket.port", _dict(h["tcpSocket"]).get("port"))
    if "grpc" in set_:
        port = _dict(h["grpc"]).get("port")
        _port_num_or_name(causes, f"{field}.grpc.port", port if _is_int(port) else 0)
    if "sleep" in set_:
        secs = _dict(h["sleep"]).get("seconds")
        if not _is_int(secs) or secs < 0:
            causes.append(v.invalid(f"{field}.sleep.seconds", secs,
                                    "must be non-negative"))
    return causes


def _validate_probe(p: Any, field: str, *, single_success: bool) -> list[Cause]:
    if p is None:
        return []
    causes: list[Cause] = []
    p = _dict(p)
    causes += _validate_handler(p, field, HANDLERS)
    for f in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold",
              "failureThreshold"):
        v.nonneg(causes, f"{field}.{f}", p.get(f))
    tgp = p.get("terminationGracePeriodSeconds")
    if _is_int(tgp) and tgp <= 0:
        causes.append(v.invalid(f"{field}.terminationGracePeriodSeconds", tgp,
                                "must be greater than 0"))
    if single_success and _is_int(p.get("successThreshold")) and p["successThreshold"] != 1:
        causes.append(v.invalid(f"{field}.successThreshold", p["successThreshold"],
                                "must be 1"))
    return causes


STANDARD_CONTAINER_RESOURCES: Final = frozenset({"cpu", "memory", "ephemeral-storage"})


def _is_native(name: str) -> bool:
    return "/" not in name or "platform.io/" in name


def _overcommit_allowed(name: str) -> bool:
    return _is_native(name) and not name.startswith("hugepages-")


def _is_extended(name: str) -> bool:
    return not _is_native(name) and not name.startswith("requests.")


def _resource_name_errors(name: str, field: str) -> list[Cause]:
    """validateContainerResourceName."""
    causes = [v.invalid(field, name, e) for e in v.qualified_name_errors(name)]
    if "/" not in name:
        if name not in STANDARD_CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            causes.append(v.invalid(field, name, "must be a standard resource for containers"))
    elif not _is_native(name) and not _is_extended(name):
        causes.append(v.invalid(field, name,
                                "doesn't follow extended resource name standard"))
    return causes


def _validate_resources(res: Any, field: str) -> list[Cause]:
    """ValidateContainerResourceRequirements (request and limit names, values, request <=
    limit, equal for resources that cannot be overcommitted)."""
    causes: list[Cause] = []
    res = _dict(res)
    parsed: dict[str, dict[str, tuple[Decimal, str]]] = {"limits": {}, "requests": {}}
    for key in ("limits", "requests"):
        m = res.get(key)
        if not isinstance(m, dict):
            continue
        for name, q in m.items():
            name = str(name)
            kf = f"{field}.{key}[{name}]"
            causes += _resource_name_errors(name, kf)
            pq = parse_quantity(q)
            if pq is None:
                causes.append(v.invalid(kf, q, "quantities must match the regular expression "
                                        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"))
                continue
            text = format_quantity(*pq)
            if pq[0] < 0:
                causes.append(v.invalid(kf, text, "must be greater than or equal to 0"))
            if _is_extended(name) and pq[0] != pq[0].to_integral_value():
                causes.append(v.invalid(kf, text, "must be an integer"))
            parsed[key][name] = pq
    for name, req in parsed["requests"].items():
        lim = parsed["limits"].get(name)
        if lim is None:
            if not _overcommit_allowed(name):
                causes.append(v.required(f"{field}.limits", "Limit must be set for non "
                                         "overcommitable resources"))
            continue
        if req[0] != lim[0] and not _overcommit_allowed(name):
            causes.append(v.invalid(f"{field}.requests", format_quantity(*req),
                                    f"must be equal to {name} limit of "
                                    f"{format_quantity(*lim)}"))
        elif req[0] > lim[0]:
            causes.append(v.invalid(f"{field}.requests", format_quantity(*req),
                                    f"must be less than or equal to {name} limit of "
                                    f"{format_quantity(*lim)}"))
    return causes


def _validate_env(env: Any, field: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, e in enumerate(_list(env)):
        ef = f"{field}[{i}]"
        e = _dict(e)
        name = e.get("name")
        if not name:
            causes.append(v.required(f"{ef}.name"))
        elif isinstance(name, str):
            # RelaxedEnvironmentVariableValidation is on by default in v1.33
            if any(ord(ch) < 32 or ord(ch) > 126 or ch == "=" for ch in name):
                causes.append(v.invalid(f"{ef}.name", name,
                                        "a valid environment variable name must consist only "
                                        "of printable ASCII characters other than '='"))
        vf = e.get("valueFrom")
        if vf is None:
            continue
        vf = _dict(vf)
        vff = f"{ef}.valueFrom"
        srcs = [k for k in ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef")
                if vf.get(k) is not None]
        if not srcs:
            causes.append(v.invalid(vff, "", "must specify one of: `fieldRef`, "
                                    "`resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
        elif len(srcs) > 1:
            causes.append(v.invalid(vff, "", "may not have more than one field specified at "
                                    "a time"))
        if e.get("value") and srcs:
            causes.append(v.invalid(vff, "", "may not be specified when `value` is not empty"))
        fr = vf.get("fieldRef")
        if isinstance(fr, dict):
            causes += _field_selector_errors(fr, f"{vff}.fieldRef", ENV_FIELD_PATHS)
        rf = vf.get("resourceFieldRef")
        if isinstance(rf, dict):
            res = rf.get("resource")
            if not res:
                causes.append(v.required(f"{vff}.resourceFieldRef.resource"))
            elif res not in RESOURCE_FIELD_PATHS and not str(res).startswith(
                    ("requests.hugepages-", "limits.hugepages-")):
                causes.append(v.not_supported(f"{vff}.resourceFieldRef.resource", res,
                                              sorted(RESOURCE_FIELD_PATHS)))
        for k in ("configMapKeyRef", "secretKeyRef"):
            ref = vf.get(k)
            if not isinstance(ref, dict):
                continue
            key = ref.get("key")
            if not key:
                causes.append(v.required(f"{vff}.{k}.key"))
            elif isinstance(key, str):
                for msg in v.config_map_key_errors(key):
                    causes.append(v.invalid(f"{vff}.{k}.key", key, msg))
            if not ref.get("name"):
                causes.append(v.required(f"{vff}.{k}.name"))
    return causes


ENV_FIELD_PATHS: Final = frozenset({
    "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
    "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP",
    "status.podIPs"})
VOLUME_FIELD_PATHS: Final = frozenset({"metadata.annotations", "metadata.labels",
                                       "metadata.name", "metadata.namespace", "metadata.uid"})
RESOURCE_FIELD_PATHS: Final = frozenset({
    "limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu",
    "requests.ephemeral-storage", "requests.memory"})
_SUBSCRIPT_RE: Final = re.compile(r"^metadata\.(labels|annotations)\['(.*)'\]$")


def _field_selector_errors(fs: dict[str, Any], field: str,
                           paths: frozenset[str]) -> list[Cause]:
    """validateObjectFieldSelector (apiVersion, then fieldPath, then a supported path)."""
    if not fs.get("apiVersion"):
        return [v.required(f"{field}.apiVersion")]
    fp = fs.get("fieldPath")
    if not fp:
        return [v.required(f"{field}.fieldPath")]
    m = _SUBSCRIPT_RE.match(str(fp))
    if m is not None:
        return [v.invalid(f"{field}.fieldPath", fp, e)
                for e in v.qualified_name_errors(m.group(2).lower())]
    if fp not in paths:
        return [v.not_supported(f"{field}.fieldPath", fp, sorted(paths))]
    return []


def _validate_env_from(env_from: Any, field: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, src in enumerate(_list(env_from)):
        src = _dict(src)
        sf = f"{field}[{i}]"
        prefix = src.get("prefix")
        if isinstance(prefix, str) and prefix and any(
                ord(ch) < 32 or ord(ch) > 126 or ch == "=" for ch in prefix):
            causes.append(v.invalid(f"{sf}.prefix", prefix,
                                    "a valid environment variable name must consist only of "
                                    "printable ASCII characters other than '='"))
        refs = [k for k in ("configMapRef", "secretRef") if src.get(k) is not None]
        if not refs:
            causes.append(v.invalid(sf, "", "must specify one of: `configMapRef` or "
                                    "`secretRef`"))
        elif len(refs) > 1:
            causes.append(v.invalid(sf, "", "may not have more than one field specified at a "
                                    "time"))
        for k in refs:
            name = _dict(src[k]).get("name")
            if not name:
                causes.append(v.required(f"{sf}.{k}.name"))
            elif isinstance(name, str):
                for msg in v.dns1123_subdomain_errors(name):
                    causes.append(v.invalid(f"{sf}.{k}.name", name, msg))
    return causes


def _validate_ports(ports: Any, field: str) -> list[Cause]:
    causes: list[Cause] = []
    names: set[str] = set()
    for i, p in enumerate(_list(ports)):
        pf = f"{field}[{i}]"
        p = _dict(p)
        name = p.get("name")
        if isinstance(name, str) and name:
            errs = port_name_errors(name)
            for e in errs:
                causes.append(v.invalid(f"{pf}.name", name, e))
            if not errs:
                if name in names:
                    causes.append(v.duplicate(f"{pf}.name", name))
                names.add(name)
        cp = p.get("containerPort")
        if not cp:
            causes.append(v.required(f"{pf}.containerPort"))
        elif _is_int(cp):
            for e in port_num_errors(cp):
                causes.append(v.invalid(f"{pf}.containerPort", cp, e))
        hp = p.get("hostPort")
        if _is_int(hp) and hp != 0:
            for e in port_num_errors(hp):
                causes.append(v.invalid(f"{pf}.hostPort", hp, e))
        proto = p.get("protocol")
        if not proto:
            causes.append(v.required(f"{pf}.protocol"))
        elif proto not in PROTOCOLS:
            causes.append(v.not_supported(f"{pf}.protocol", proto, PROTOCOLS))
    return causes


def _validate_mounts(mounts: Any, field: str, volumes: dict[str, dict[str, Any]]
                     ) -> list[Cause]:
    causes: list[Cause] = []
    paths: set[str] = set()
    for i, m in enumerate(_list(mounts)):
        mf = f"{field}[{i}]"
        m = _dict(m)
        name = m.get("name")
        if not name:
            causes.append(v.required(f"{mf}.name"))
        elif name not in volumes:
            causes.append({"reason": "FieldValueNotFound",
                           "message": f"Not found: {v.go_value(name)}",
                           "field": f"{mf}.name"})
        mp = m.get("mountPath")
        if not mp:
            causes.append(v.required(f"{mf}.mountPath"))
        elif isinstance(mp, str):
            if mp in paths:
                causes.append(v.invalid(f"{mf}.mountPath", mp, "must be unique"))
            paths.add(mp)
        sp = m.get("subPath")
        if isinstance(sp, str) and sp:
            causes += _relative_path(sp, f"{mf}.subPath")
        if m.get("subPath") and m.get("subPathExpr"):
            causes.append(v.invalid(f"{mf}.subPathExpr", m.get("subPathExpr"),
                                    "subPathExpr and subPath are mutually exclusive"))
        prop = m.get("mountPropagation")
        if prop is not None and prop not in MOUNT_PROPAGATION:
            causes.append(v.not_supported(f"{mf}.mountPropagation", prop, MOUNT_PROPAGATION))
    return causes


def _relative_path(path: str, field: str) -> list[Cause]:
    causes: list[Cause] = []
    if path.startswith("/"):
        causes.append(v.invalid(field, path, "must be a relative path"))
    if ".." in path.split("/"):
        causes.append(v.invalid(field, path, "must not contain '..'"))
    return causes


def _validate_container(c: Any, field: str, volumes: dict[str, dict[str, Any]], *,
                        kind: str, for_pod: bool) -> list[Cause]:
    causes: list[Cause] = []
    c = _dict(c)
    image = c.get("image")
    if not image:
        causes.append(v.required(f"{field}.image"))
    elif not isinstance(image, str):
        causes.append(v.type_invalid(f"{field}.image", image, "a string"))
    elif for_pod and image != image.strip():
        causes.append(v.invalid(f"{field}.image", image,
                                "must not have leading or trailing whitespace"))
    for key in ("lifecycle",):
        lc = c.get(key)
        if isinstance(lc, dict):
            for hook in ("postStart", "preStop"):
                if lc.get(hook) is not None:
                    causes += _validate_handler(_dict(lc[hook]), f"{field}.lifecycle.{hook}",
                                                LIFECYCLE_HANDLERS)
    if kind == "containers":
        causes += _validate_probe(c.get("livenessProbe"), f"{field}.livenessProbe",
                                  single_success=True)
        causes += _validate_probe(c.get("readinessProbe"), f"{field}.readinessProbe",
                                  single_success=False)
        rp = c.get("readinessProbe")
        if isinstance(rp, dict) and rp.get("terminationGracePeriodSeconds") is not None:
            causes.append(v.invalid(f"{field}.readinessProbe.terminationGracePeriodSeconds",
                                    rp["terminationGracePeriodSeconds"],
                                    "must not be set for readinessProbes"))
        causes += _validate_probe(c.get("startupProbe"), f"{field}.startupProbe",
                                  single_success=True)
        if c.get("restartPolicy") is not None:
            causes.append(v.forbidden(f"{field}.restartPolicy",
                                      "may not be set for non-init containers"))
    elif kind == "initContainers":
        restartable = c.get("restartPolicy") == "Always"
        if c.get("restartPolicy") is not None and not restartable:
            causes.append(v.not_supported(f"{field}.restartPolicy", c["restartPolicy"],
                                          CONTAINER_RESTART_POLICIES))
        if restartable:
            causes += _validate_probe(c.get("livenessProbe"), f"{field}.livenessProbe",
                                      single_success=True)
            causes += _validate_probe(c.get("readinessProbe"), f"{field}.readinessProbe",
                                      single_success=False)
            causes += _validate_probe(c.get("startupProbe"), f"{field}.startupProbe",
                                      single_success=True)
        else:
            for probe in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
                if c.get(probe) is not None:
                    causes.append(v.forbidden(f"{field}.{probe}",
                                              "may not be set for init containers without "
                                              "restartPolicy=Always"))
    causes += _validate_ports(c.get("ports"), f"{field}.ports")
    causes += _validate_env(c.get("env"), f"{field}.env")
    causes += _validate_env_from(c.get("envFrom"), f"{field}.envFrom")
    causes += _validate_mounts(c.get("volumeMounts"), f"{field}.volumeMounts", volumes)
    for i, d in enumerate(_list(c.get("volumeDevices"))):
        d = _dict(d)
        if not d.get("name"):
            causes.append(v.required(f"{field}.volumeDevices[{i}].name"))
        if not d.get("devicePath"):
            causes.append(v.required(f"{field}.volumeDevices[{i}].devicePath"))
    pp = c.get("imagePullPolicy")
    if not pp:
        causes.append(v.required(f"{field}.imagePullPolicy"))
    elif pp not in PULL_POLICIES:
        causes.append(v.not_supported(f"{field}.imagePullPolicy", pp, PULL_POLICIES))
    tmp = c.get("terminationMessagePolicy")
    if not tmp:
        causes.append(v.required(f"{field}.terminationMessagePolicy"))
    elif tmp not in TERMINATION_MESSAGE_POLICIES:
        causes.append(v.not_supported(f"{field}.terminationMessagePolicy", tmp,
                                      TERMINATION_MESSAGE_POLICIES))
    causes += _validate_resources(c.get("resources"), f"{field}.resources")
    causes += _validate_security_context(c.get("securityContext"), f"{field}.securityContext",
                                         pod_level=False)
    return causes


EPHEMERAL_FORBIDDEN: Final = ("ports", "livenessProbe", "readinessProbe", "startupProbe",
                               "lifecycle", "resources", "resizePolicy", "restartPolicy")


def _validate_ephemeral(c: Any, field: str, volumes: dict[str, dict[str, Any]],
                        spec: dict[str, Any]) -> list[Cause]:
    """validateEphemeralContainers for one container (the name checks are shared)."""
    c = _dict(c)
    causes: list[Cause] = []
    for key in EPHEMERAL_FORBIDDEN:
        val = c.get(key)
        if val is not None and val != {} and val != []:
            causes.append(v.forbidden(f"{field}.{key}",
                                      "cannot be set for an Ephemeral Container"))
    image = c.get("image")
    if not image:
        causes.append(v.required(f"{field}.image"))
    target = c.get("targetContainerName")
    if target:
        names = {_dict(x).get("name") for key in ("initContainers", "containers")
                 for x in _list(spec.get(key))}
        if target not in names:
            causes.append({"reason": "FieldValueNotFound",
                           "message": f"Not found: {v.go_value(target)}",
                           "field": f"{field}.targetContainerName"})
    causes += _validate_env(c.get("env"), f"{field}.env")
    causes += _validate_env_from(c.get("envFrom"), f"{field}.envFrom")
    causes += _validate_mounts(c.get("volumeMounts"), f"{field}.volumeMounts", volumes)
    for i, m in enumerate(_list(c.get("volumeMounts"))):
        if _dict(m).get("subPath"):
            causes.append(v.forbidden(f"{field}.volumeMounts[{i}].subPath",
                                      "cannot be set for an Ephemeral Container"))
    pp = c.get("imagePullPolicy")
    if not pp:
        causes.append(v.required(f"{field}.imagePullPolicy"))
    elif pp not in PULL_POLICIES:
        causes.append(v.not_supported(f"{field}.imagePullPolicy", pp, PULL_POLICIES))
    return causes


def _validate_volumes(vols: Any, field: str) -> tuple[dict[str, dict[str, Any]], list[Cause]]:
    causes: list[Cause] = []
    names: dict[str, dict[str, Any]] = {}
    for i, vol in enumerate(_list(vols)):
        vf = f"{field}[{i}]"
        vol = _dict(vol)
        name = vol.get("name")
        name_ok = False
        if not name:
            causes.append(v.required(f"{vf}.name"))
        elif isinstance(name, str):
            errs = v.dns1123_label_errors(name)
            for e in errs:
                causes.append(v.invalid(f"{vf}.name", name, e))
            name_ok = not errs
            if name in names:
                causes.append(v.duplicate(f"{vf}.name", name))
                name_ok = False
        srcs = [s for s in VOLUME_SOURCES if vol.get(s) is not None]
        if not srcs:
            causes.append(v.required(vf, "must specify a volume type"))
        for s in srcs[1:]:
            causes.append(v.forbidden(f"{vf}.{s}", "may not specify more than 1 volume type"))
        if name_ok and isinstance(name, str):
            names[name] = vol
        for s in srcs[:1]:
            causes += _validate_volume_source(s, _dict(vol.get(s)), f"{vf}.{s}")
    return names, causes


def _mode(causes: list[Cause], field: str, mode: Any) -> None:
    if mode is None:
        return
    if not _is_int(mode) or mode < 0 or mode > MAX_MODE:
        causes.append(v.invalid(field, mode, "must be a number between 0 and 0777 "
                                "(octal), both inclusive"))


def _key_paths(causes: list[Cause], items: Any, field: str) -> None:
    for i, it in enumerate(_list(items)):
        it = _dict(it)
        if not it.get("key"):
            causes.append(v.required(f"{field}[{i}].key"))
        path = it.get("path")
        if not path:
            causes.append(v.required(f"{field}[{i}].path"))
        elif isinstance(path, str):
            causes += _relative_path(path, f"{field}[{i}].path")
        _mode(causes, f"{field}[{i}].mode", it.get("mode"))


def _downward_items(items: Any, field: str) -> list[Cause]:
    """validateDownwardAPIVolumeFile for each item."""
    causes: list[Cause] = []
    for i, it in enumerate(_list(items)):
        it = _dict(it)
        f = f"{field}[{i}]"
        path = it.get("path")
        if not path:
            causes.append(v.required(f"{f}.path"))
        elif isinstance(path, str):
            causes += _relative_path(path, f"{f}.path")
        fr, rf = it.get("fieldRef"), it.get("resourceFieldRef")
        if isinstance(fr, dict):
            causes += _field_selector_errors(fr, f"{f}.fieldRef", VOLUME_FIELD_PATHS)
            if rf is not None:
                causes.append(v.invalid(f, "resource", "fieldRef and resourceFieldRef can not "
                                        "be specified simultaneously"))
        elif isinstance(rf, dict):
            if not rf.get("containerName"):
                causes.append(v.required(f"{f}.resourceFieldRef.containerName"))
            res = rf.get("resource")
            if not res:
                causes.append(v.required(f"{f}.resourceFieldRef.resource"))
            elif res not in RESOURCE_FIELD_PATHS and not str(res).startswith(
                    ("requests.hugepages-", "limits.hugepages-")):
                causes.append(v.not_supported(f"{f}.resourceFieldRef.resource", res,
                                              sorted(RESOURCE_FIELD_PATHS)))
        else:
            causes.append(v.required(f, "one of fieldRef and resourceFieldRef is required"))
        _mode(causes, f"{f}.mode", it.get("mode"))
    return causes


def _projection_sources(sources: Any, field: str) -> list[Cause]:
    """validateProjectionSources."""
    causes: list[Cause] = []
    for i, src in enumerate(_list(sources)):
        src = _dict(src)
        sf = f"{field}[{i}]"
        kinds = [k for k in ("secret", "configMap", "downwardAPI", "serviceAccountToken",
                             "clusterTrustBundle") if src.get(k) is not None]
        for k in kinds:
            body = _dict(src[k])
            kf = f"{sf}.{k}"
            if k in ("secret", "configMap"):
                if not body.get("name"):
                    causes.append(v.required(f"{kf}.name"))
                _key_paths(causes, body.get("items"), f"{kf}.items")
            elif k == "downwardAPI":
                causes += _downward_items(body.get("items"), f"{kf}.items")
            elif k == "serviceAccountToken":
                exp = body.get("expirationSeconds")
                if _is_int(exp) and exp < 600:
                    causes.append(v.invalid(f"{kf}.expirationSeconds", exp, "may not specify "
                                            "a duration less than 10 minutes"))
                elif _is_int(exp) and exp > 1 << 32:
                    causes.append(v.invalid(f"{kf}.expirationSeconds", exp, "may not specify "
                                            "a duration larger than 2^32 seconds"))
                if not body.get("path"):
                    causes.append(v.required(f"{kf}.path"))
                elif isinstance(body["path"], str):
                    causes += _relative_path(body["path"], f"{kf}.path")
        if len(kinds) > 1:
            causes.append(v.forbidden(sf, "may not specify more than 1 volume type per source"))
    return causes


def _validate_volume_source(kind: str, src: dict[str, Any], field: str) -> list[Cause]:
    causes: list[Cause] = []
    if kind == "hostPath":
        if not src.get("path"):
            causes.append(v.required(f"{field}.path"))
        t = src.get("type")
        if t is not None and t not in HOST_PATH_TYPES:
            causes.append(v.not_supported(f"{field}.type", t, HOST_PATH_TYPES))
    elif kind == "emptyDir":
        medium = src.get("medium")
        if medium is not None and medium not in STORAGE_MEDIA:
            causes.append(v.not_supported(f"{field}.medium", medium, STORAGE_MEDIA))
        sl = src.get("sizeLimit")
        if sl is not None:
            pq = parse_quantity(sl)
            if pq is not None and pq[0] < 0:
                causes.append(v.invalid(f"{field}.sizeLimit", canonical_quantity(sl),
                                        "must be greater than or equal to 0"))
    elif kind in ("secret", "configMap"):
        nk = "secretName" if kind == "secret" else "name"
        name = src.get(nk)
        if isinstance(name, str) and name:
            for e in v.dns1123_subdomain_errors(name):
                causes.append(v.invalid(f"{field}.{nk}", name, e))
        else:
            causes.append(v.required(f"{field}.{nk}"))
        _mode(causes, f"{field}.defaultMode", src.get("defaultMode"))
        _key_paths(causes, src.get("items"), f"{field}.items")
    elif kind == "persistentVolumeClaim":
        if not src.get("claimName"):
            causes.append(v.required(f"{field}.claimName"))
    elif kind == "nfs":
        if not src.get("server"):
            causes.append(v.required(f"{field}.server"))
        p = src.get("path")
        if not p:
            causes.append(v.required(f"{field}.path"))
        elif isinstance(p, str) and not p.startswith("/"):
            causes.append(v.invalid(f"{field}.path", p, "must be an absolute path"))
    elif kind == "downwardAPI":
        _mode(causes, f"{field}.defaultMode", src.get("defaultMode"))
        causes += _downward_items(src.get("items"), f"{field}.items")
    elif kind == "projected":
        _mode(causes, f"{field}.defaultMode", src.get("defaultMode"))
        causes += _projection_sources(src.get("sources"), f"{field}.sources")
    elif kind == "csi":
        if not src.get("driver"):
            causes.append(v.required(f"{field}.driver"))
    return causes


def _validate_tolerations(tols: Any, field: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, t in enumerate(_list(tols)):
        tf = f"{field}[{i}]"
        t = _dict(t)
        key = t.get("key")
        if isinstance(key, str) and key:
            for e in v.qualified_name_errors(key):
                causes.append(v.invalid(f"{tf}.key", key, e))
        op = t.get("operator")
        if not key and op != "Exists":
            causes.append(v.invalid(f"{tf}.operator", op or "",
                                    "operator must be Exists when `key` is empty, which "
                                    "means \"match all values and all keys\""))
        eff = t.get("effect")
        if t.get("tolerationSeconds") is not None and eff != "NoExecute":
            causes.append(v.invalid(f"{tf}.effect", eff or "",
                                    "effect must be 'NoExecute' when `tolerationSeconds` is "
                                    "set"))
        if op in (None, "", "Equal"):
            val = t.get("value")
            if isinstance(val, str):
                for e in v.label_value_errors(val):
                    causes.append(v.invalid(f"{tf}.operator", val, e))
        elif op == "Exists":
            if t.get("value"):
                causes.append(v.invalid(f"{tf}.operator", t.get("value"),
                                        "value must be empty when `operator` is 'Exists'"))
        else:
            causes.append(v.not_supported(f"{tf}.operator", op, TOLERATION_OPERATORS))
        if eff not in (None, "") and eff not in TAINT_EFFECTS:
            causes.append(v.not_supported(f"{tf}.effect", eff, TAINT_EFFECTS))
    return causes


IP_MSG: Final = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
MAX_DNS_NAMESERVERS: Final = 3
MAX_DNS_SEARCH_PATHS: Final = 32
MAX_DNS_SEARCH_LENGTH: Final = 2048


def _validate_dns_config(cfg: Any, policy: Any, field: str) -> list[Cause]:
    """validatePodDNSConfig."""
    if policy == "None":
        if cfg is None:
            return [v.required(field, "must provide `dnsConfig` when `dnsPolicy` is None")]
        if not _list(_dict(cfg).get("nameservers")):
            return [v.required(f"{field}.nameservers", "must provide at least one DNS "
                               "nameserver when `dnsPolicy` is None")]
    if not isinstance(cfg, dict):
        return []
    causes: list[Cause] = []
    servers = _list(cfg.get("nameservers"))
    if len(servers) > MAX_DNS_NAMESERVERS:
        causes.append(v.invalid(f"{field}.nameservers", [str(x) for x in servers],
                                f"must not have more than {MAX_DNS_NAMESERVERS} nameservers"))
    for i, ns in enumerate(servers):
        if not v.is_ip(ns):
            causes.append(v.invalid(f"{field}.nameservers[{i}]", ns, IP_MSG))
    searches = _list(cfg.get("searches"))
    if len(searches) > MAX_DNS_SEARCH_PATHS:
        causes.append(v.invalid(f"{field}.searches", [str(x) for x in searches],
                                f"must not have more than {MAX_DNS_SEARCH_PATHS} search paths"))
    if len(" ".join(str(x) for x in searches)) > MAX_DNS_SEARCH_LENGTH:
        causes.append(v.invalid(f"{field}.searches", [str(x) for x in searches],
                                f"must not have more than {MAX_DNS_SEARCH_LENGTH} characters "
                                "(including spaces) in the search list"))
    for i, search in enumerate(searches):
        name = str(search).removesuffix(".") if search != "." else search
        if name == ".":
            continue
        for e in v.dns1123_subdomain_errors(str(name)):
            causes.append(v.invalid(f"{field}.searches[{i}]", search, e))
    for i, opt in enumerate(_list(cfg.get("options"))):
        if not _dict(opt).get("name"):
            causes.append(v.required(f"{field}.options[{i}]", "must not be empty"))
    return causes


SECCOMP_TYPES: Final = ["Localhost", "RuntimeDefault", "Unconfined"]
APPARMOR_TYPES: Final = ["Localhost", "RuntimeDefault", "Unconfined"]
PROC_MOUNT_TYPES: Final = ["Default", "Unmasked"]
FS_GROUP_POLICIES: Final = ["Always", "OnRootMismatch"]


def _profile_errors(prof: Any, field: str, kind: str, types: list[str]) -> list[Cause]:
    """validateSeccompProfileField / validateAppArmorProfileField."""
    if prof is None:
        return []
    prof = _dict(prof)
    t = prof.get("type")
    lp = prof.get("localhostProfile")
    if t not in types:
        return [v.not_supported(f"{field}.type", t or "", types)]
    if t == "Localhost":
        if not lp:
            return [v.required(f"{field}.localhostProfile",
                               f"must be set when {kind} type is Localhost")]
    elif lp is not None:
        return [v.invalid(f"{field}.localhostProfile", lp,
                          f"can only be set when {kind} type is Localhost")]
    return []


def _validate_security_context(sc: Any, field: str, *, pod_level: bool) -> list[Cause]:
    """The id ranges and profile rules of ValidatePodSecurityContext / ValidateSecurityContext
    (Windows options and the privileged/allowPrivilegeEscalation combination are not
    checked)."""
    if not isinstance(sc, dict):
        return []
    causes: list[Cause] = []
    ids = ("runAsUser", "runAsGroup", "fsGroup") if pod_level else ("runAsUser", "runAsGroup")
    for f in ids:
        val = sc.get(f)
        if _is_int(val) and not 0 <= val <= MAX_INT32:
            causes.append(v.invalid(f"{field}.{f}", val,
                                    f"must be between 0 and {MAX_INT32}, inclusive"))
    if pod_level:
        for i, gid in enumerate(_list(sc.get("supplementalGroups"))):
            if _is_int(gid) and not 0 <= gid <= MAX_INT32:
                causes.append(v.invalid(f"{field}.supplementalGroups[{i}]", gid,
                                        f"must be between 0 and {MAX_INT32}, inclusive"))
        pol = sc.get("fsGroupChangePolicy")
        if pol is not None and pol not in FS_GROUP_POLICIES:
            causes.append(v.not_supported(f"{field}.fsGroupChangePolicy", pol,
                                          FS_GROUP_POLICIES))
    else:
        pm = sc.get("procMount")
        if pm is not None and pm not in PROC_MOUNT_TYPES:
            causes.append(v.not_supported(f"{field}.procMount", pm, PROC_MOUNT_TYPES))
    causes += _profile_errors(sc.get("seccompProfile"), f"{field}.seccompProfile", "seccomp",
                              SECCOMP_TYPES)
    causes += _profile_errors(sc.get("appArmorProfile"), f"{field}.appArmorProfile",
                              "AppArmor", APPARMOR_TYPES)
    return causes


SCHEDULE_ACTIONS: Final = ["DoNotSchedule", "ScheduleAnyway"]
NODE_INCLUSION_POLICIES: Final = ["Honor", "Ignore"]
NOT_POSITIVE: Final = "must be greater than zero"


def _validate_spread(constraints: Any, field: str) -> list[Cause]:
    """validateTopologySpreadConstraints."""
    causes: list[Cause] = []
    items = [_dict(c) for c in _list(constraints)]
    for i, c in enumerate(items):
        cf = f"{field}[{i}]"
        skew = c.get("maxSkew")
        if not _is_int(skew) or skew <= 0:
            causes.append(v.invalid(f"{cf}.maxSkew", skew if _is_int(skew) else 0,
                                    NOT_POSITIVE))
        if not c.get("topologyKey"):
            causes.append(v.required(f"{cf}.topologyKey", "can not be empty"))
        action = c.get("whenUnsatisfiable")
        if action not in SCHEDULE_ACTIONS:
            causes.append(v.not_supported(f"{cf}.whenUnsatisfiable", action or "",
                                          SCHEDULE_ACTIONS))
        for rest in items[i + 1:]:
            if (rest.get("topologyKey"), rest.get("whenUnsatisfiable")) == (
                    c.get("topologyKey"), action):
                causes.append(v.duplicate(f"{cf}.{{topologyKey, whenUnsatisfiable}}",
                                          f"{{{c.get('topologyKey') or ''}, {action or ''}}}"))
                break
        md = c.get("minDomains")
        if md is not None:
            if not _is_int(md) or md <= 0:
                causes.append(v.invalid(f"{cf}.minDomains", md, NOT_POSITIVE))
            if action != "DoNotSchedule":
                causes.append(v.invalid(f"{cf}.minDomains", md,
                                        "can only use minDomains if "
                                        f"whenUnsatisfiable=DoNotSchedule, not {action}"))
        for pol in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            val = c.get(pol)
            if val is not None and val not in NODE_INCLUSION_POLICIES:
                causes.append(v.not_supported(f"{cf}.{pol}", val, NODE_INCLUSION_POLICIES))
        causes += v.validate_label_selector(c.get("labelSelector"), f"{cf}.labelSelector")
    return causes


def _validate_node_selector_requirements(reqs: Any, field: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, r in enumerate(_list(reqs)):
        rf = f"{field}[{i}]"
        r = _dict(r)
        op, values = r.get("operator"), _list(r.get("values"))
        if op in ("In", "NotIn"):
            if not values:
                causes.append(v.required(f"{rf}.values", "must be specified when `operator` "
                                         "is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                causes.append(v.forbidden(f"{rf}.values", "may not be specified when "
                                          "`operator` is 'Exists' or 'DoesNotExist'"))
        elif op in ("Gt", "Lt"):
            if len(values) != 1:
                causes.append(v.required(f"{rf}.values", "must be specified single value when "
                                         "`operator` is 'Lt' or 'Gt'"))
        else:
            causes.append(v.invalid(f"{rf}.operator", op or "", "not a valid selector "
                                    "operator"))
        key = r.get("key")
        if isinstance(key, str):
            for e in v.qualified_name_errors(key):
                causes.append(v.invalid(f"{rf}.key", key, e))
    return causes


def _validate_node_selector_term(term: Any, field: str) -> list[Cause]:
    term = _dict(term)
    causes = _validate_node_selector_requirements(term.get("matchExpressions"),
                                                  f"{field}.matchExpressions")
    for i, r in enumerate(_list(term.get("matchFields"))):
        r = _dict(r)
        rf = f"{field}.matchFields[{i}]"
        if r.get("key") != "metadata.name":
            causes.append(v.invalid(f"{rf}.key", r.get("key") or "", "not a valid field "
                                    "selector key"))
        op = r.get("operator")
        if op not in ("In", "NotIn"):
            causes.append(v.invalid(f"{rf}.operator", op or "", "not a valid selector "
                                    "operator"))
        elif len(_list(r.get("values"))) != 1:
            causes.append(v.required(f"{rf}.values", "must be only one value when `operator` "
                                     "is 'In' or 'NotIn' for node field selector"))
    return causes


def _validate_pod_affinity_terms(terms: Any, field: str, weighted: bool) -> list[Cause]:
    causes: list[Cause] = []
    for i, t in enumerate(_list(terms)):
        tf = f"{field}[{i}]"
        t = _dict(t)
        if weighted:
            w = t.get("weight")
            if not _is_int(w) or not 1 <= w <= 100:
                causes.append(v.invalid(f"{tf}.weight", w if _is_int(w) else 0,
                                        "must be in the range 1-100"))
            t = _dict(t.get("podAffinityTerm"))
            tf = f"{tf}.podAffinityTerm"
        if not t.get("topologyKey"):
            causes.append(v.required(f"{tf}.topologyKey", "can not be empty"))
        else:
            for e in v.qualified_name_errors(str(t["topologyKey"])):
                causes.append(v.invalid(f"{tf}.topologyKey", t["topologyKey"], e))
        causes += v.validate_label_selector(t.get("labelSelector"), f"{tf}.labelSelector")
        causes += v.validate_label_selector(t.get("namespaceSelector"),
                                            f"{tf}.namespaceSelector")
    return causes


def _validate_affinity(aff: Any, field: str) -> list[Cause]:
    """validateAffinity: node selector terms and operators, weights, pod affinity terms."""
    causes: list[Cause] = []
    aff = _dict(aff)
    na = _dict(aff.get("nodeAffinity"))
    req = na.get("requiredDuringSchedulingIgnoredDuringExecution")
    if req is not None:
        rf = f"{field}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        terms = _list(_dict(req).get("nodeSelectorTerms"))
        if not terms:
            causes.append(v.required(f"{rf}.nodeSelectorTerms", "must have at least one node "
                                     "selector term"))
        for i, term in enumerate(terms):
            causes += _validate_node_selector_term(term, f"{rf}.nodeSelectorTerms[{i}]")
    for i, pref in enumerate(_list(na.get(
            "preferredDuringSchedulingIgnoredDuringExecution"))):
        pf = f"{field}.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        w = _dict(pref).get("weight")
        if not _is_int(w) or not 1 <= w <= 100:
            causes.append(v.invalid(f"{pf}.weight", w if _is_int(w) else 0,
                                    "must be in the range 1-100"))
        causes += _validate_node_selector_term(_dict(pref).get("preference"),
                                               f"{pf}.preference")
    for kind in ("podAffinity", "podAntiAffinity"):
        pa = _dict(aff.get(kind))
        causes += _validate_pod_affinity_terms(
            pa.get("requiredDuringSchedulingIgnoredDuringExecution"),
            f"{field}.{kind}.requiredDuringSchedulingIgnoredDuringExecution", False)
        causes += _validate_pod_affinity_terms(
            pa.get("preferredDuringSchedulingIgnoredDuringExecution"),
            f"{field}.{kind}.preferredDuringSchedulingIgnoredDuringExecution", True)
    return causes


def validate_pod_spec(spec: Any, path: str, *,
                      restart_policies: Sequence[str] = RESTART_POLICIES,
                      for_pod: bool = False) -> list[Cause]:
    """ValidatePodSpec at ``path`` (``spec`` of a Pod, ``spec.template.spec`` of a workload).
    ``restart_policies``: what the owner allows; ``for_pod``: the Pod-only checks."""
    causes: list[Cause] = []
    if not isinstance(spec, dict):
        return [v.required(path)]
    volumes, vol_causes = _validate_volumes(spec.get("volumes"), f"{path}.volumes")
    causes += vol_causes
    containers = spec.get("containers")
    if not _list(containers):
        causes.append(v.required(f"{path}.containers"))
    seen: set[str] = set()
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for i, c in enumerate(_list(spec.get(key))):
            cf = f"{path}.{key}[{i}]"
            name = _dict(c).get("name")
            if not name:
                causes.append(v.required(f"{cf}.name"))
            elif not isinstance(name, str):
                causes.append(v.type_invalid(f"{cf}.name", name, "a string"))
            else:
                for e in v.dns1123_label_errors(name):
                    causes.append(v.invalid(f"{cf}.name", name, e))
                if name in seen:
                    causes.append(v.duplicate(f"{cf}.name", name))
                seen.add(name)
            if key == "ephemeralContainers":
                causes += _validate_ephemeral(c, cf, volumes, spec)
                continue
            causes += _validate_container(c, cf, volumes, kind=key, for_pod=for_pod)
    if spec.get("ephemeralContainers") and not for_pod:
        causes.append(v.forbidden(f"{path}.ephemeralContainers",
                                  "ephemeral containers not allowed in pod template"))
    # hostPort/protocol/hostIP unique over all containers (AccumulateUniqueHostPorts)
    host_ports: set[str] = set()
    for key in ("initContainers", "containers"):
        for ci, c in enumerate(_list(spec.get(key))):
            for pi, p in enumerate(_list(_dict(c).get("ports"))):
                p = _dict(p)
                hp = p.get("hostPort")
                if not _is_int(hp) or hp == 0:
                    continue
                k = f"{p.get('protocol', '')}/{p.get('hostIP', '')}/{hp}"
                if k in host_ports:
                    causes.append(v.duplicate(f"{path}.{key}[{ci}].ports[{pi}].hostPort", k))
                host_ports.add(k)
    rp = spec.get("restartPolicy")
    if not rp:
        causes.append(v.required(f"{path}.restartPolicy"))
    elif rp not in RESTART_POLICIES:
        causes.append(v.not_supported(f"{path}.restartPolicy", rp, list(RESTART_POLICIES)))
    if rp and tuple(restart_policies) != RESTART_POLICIES and rp not in restart_policies:
        causes.append(v.not_supported(f"{path}.restartPolicy", rp, list(restart_policies)))
    dp = spec.get("dnsPolicy")
    if not dp:
        causes.append(v.required(f"{path}.dnsPolicy"))
    elif dp not in DNS_POLICIES:
        causes.append(v.not_supported(f"{path}.dnsPolicy", dp, DNS_POLICIES))
    causes += _validate_dns_config(spec.get("dnsConfig"), dp, f"{path}.dnsConfig")
    for i, ha in enumerate(_list(spec.get("hostAliases"))):
        ha = _dict(ha)
        ip = ha.get("ip")
        if not ip:
            causes.append(v.required(f"{path}.hostAliases[{i}].ip"))
        elif not v.is_ip(ip):
            causes.append(v.invalid(f"{path}.hostAliases[{i}].ip", ip, IP_MSG))
        for name in _list(ha.get("hostnames")):
            for e in v.dns1123_subdomain_errors(str(name)):
                causes.append(v.invalid(f"{path}.hostAliases[{i}].hostnames", name, e))
    for i, gate in enumerate(_list(spec.get("readinessGates"))):
        ct = _dict(gate).get("conditionType")
        for e in v.qualified_name_errors(str(ct or "")):
            causes.append(v.invalid(f"{path}.readinessGates[{i}].conditionType", ct or "", e))
    pod_os = spec.get("os")
    if isinstance(pod_os, dict):
        name = pod_os.get("name")
        if not name:
            causes.append(v.required(f"{path}.os.name", "cannot be empty"))
        elif name not in ("linux", "windows"):
            causes.append(v.not_supported(f"{path}.os.name", name, ["linux", "windows"]))
    ns = spec.get("nodeSelector")
    if ns is not None:
        causes += v.validate_labels(ns, f"{path}.nodeSelector")
    for f in ("serviceAccountName", "nodeName", "priorityClassName"):
        val = spec.get(f)
        if isinstance(val, str) and val:
            for e in v.dns1123_subdomain_errors(val):
                causes.append(v.invalid(f"{path}.{f}", val, e))
    for f in ("hostname", "subdomain"):
        val = spec.get(f)
        if isinstance(val, str) and val:
            for e in v.dns1123_label_errors(val):
                causes.append(v.invalid(f"{path}.{f}", val, e))
    ads = spec.get("activeDeadlineSeconds")
    if ads is not None and (not _is_int(ads) or ads < 1 or ads > MAX_INT32):
        causes.append(v.invalid(f"{path}.activeDeadlineSeconds", ads,
                                f"must be between 1 and {MAX_INT32}, inclusive"))
    causes += _validate_tolerations(spec.get("tolerations"), f"{path}.tolerations")
    causes += _validate_spread(spec.get("topologySpreadConstraints"),
                               f"{path}.topologySpreadConstraints")
    causes += _validate_affinity(spec.get("affinity"), f"{path}.affinity")
    for i, s in enumerate(_list(spec.get("imagePullSecrets"))):
        if not _dict(s).get("name"):
            causes.append(v.required(f"{path}.imagePullSecrets[{i}].name"))
    pp = spec.get("preemptionPolicy")
    if pp is not None and pp not in PREEMPTION_POLICIES:
        causes.append(v.not_supported(f"{path}.preemptionPolicy", pp, PREEMPTION_POLICIES))
    causes += _validate_security_context(spec.get("securityContext"),
                                         f"{path}.securityContext", pod_level=True)
    if spec.get("hostNetwork") is True:
        for key in ("initContainers", "containers"):
            for ci, c in enumerate(_list(spec.get(key))):
                for pi, p in enumerate(_list(_dict(c).get("ports"))):
                    p = _dict(p)
                    if p.get("hostPort") and p.get("hostPort") != p.get("containerPort"):
                        causes.append(v.invalid(
                            f"{path}.{key}[{ci}].ports[{pi}].containerPort",
                            p.get("containerPort"),
                            "must match `hostPort` when `hostNetwork` is true"))
    return causes


def validate_pod_template(tpl: Any, path: str, *,
                          restart_policies: Sequence[str] = ("Always",)) -> list[Cause]:
    """ValidatePodTemplateSpec at ``path``: metadata labels and annotations, then the spec
    (``restart_policies``: what the owning workload allows; only Always by default)."""
    if not isinstance(tpl, dict):
        return [v.required(path)]
    causes: list[Cause] = []
    meta = _dict(tpl.get("metadata"))
    # upstream ValidatePodTemplateSpec reports these at <path>.labels / <path>.annotations
    causes += v.validate_labels(meta.get("labels"), f"{path}.labels")
    causes += v.validate_annotations(meta.get("annotations"), f"{path}.annotations")
    causes += validate_pod_spec(tpl.get("spec"), f"{path}.spec",
                                restart_policies=restart_policies)
    return causes

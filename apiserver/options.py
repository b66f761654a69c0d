"""Command-line options of ``plat-apiserver`` and ``plat-server`` with upstream flag names.

``parse_options(argv, allinone=...)`` returns a frozen ``ServerOptions``; a bad flag or value
makes argparse print a clear message and exit with code 2, as upstream's cobra does with
``Error: invalid argument ...``. Boolean flags take upstream's forms: ``--watch-cache``,
``--watch-cache=false``, ``--anonymous-auth=true``.
"""

from __future__ import annotations

import argparse
import ipaddress
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from apiserver import featuregates

AUTHZ_MODES: Final = ("AlwaysAllow", "AlwaysDeny", "ABAC", "Webhook", "RBAC", "Node")
# Modes upstream has that this server does not serve yet: refused at start-up.
AUTHZ_MODES_LATER: Final = frozenset({"ABAC", "Webhook", "RBAC", "Node"})

_DURATION_PART: Final = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS: Final = {
    "ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0,
}


def parse_duration(text: str, *, negative: bool = False) -> float:
    """Go's ``time.ParseDuration`` in seconds: ``5m``, ``300s``, ``1h30m``, ``1.5s``, ``0``;
    ``-1s`` only with ``negative`` (Go takes it; a flag of ours does not)."""
    s = text.strip()
    if s in ("0", "+0", "-0"):
        return 0.0
    sign = 1.0
    if s.startswith("-"):
        if not negative:
            raise ValueError(f'time: invalid duration "{text}"')
        sign, s = -1.0, s[1:]
    elif s.startswith("+"):
        s = s[1:]
    return sign * _unsigned_duration(s, text)


def _unsigned_duration(s: str, text: str) -> float:
    pos, total = 0, 0.0
    if not s:
        raise ValueError(f'time: invalid duration "{text}"')
    while pos < len(s):
        m = _DURATION_PART.match(s, pos)
        if m is None:
            raise ValueError(f'time: invalid duration "{text}"')
        total += float(m.group(1)) * _UNIT_SECONDS[m.group(2)]
        pos = m.end()
    return total


def parse_bool(text: str) -> bool:
    """Go's ``strconv.ParseBool``."""
    if text in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if text in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise ValueError(f'strconv.ParseBool: parsing "{text}": invalid syntax')


def _arg(fn: Callable[[str], Any], name: str) -> Callable[[str], Any]:
    """Wrap a parser so argparse prints our message (it only shows the type's __name__)."""

    def parse(text: str) -> Any:
        try:
            return fn(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    parse.__name__ = name
    return parse


def parse_watch_cache_sizes(text: str) -> tuple[tuple[str, int], ...]:
    """``configmaps#100,statefulsets.apps#50`` (upstream's ParseWatchCacheSizes)."""
    out: list[tuple[str, int]] = []
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        resource, sep, size = item.partition("#")
        if not sep or not resource:
            raise ValueError(f"invalid value of watch cache size: {item}")
        try:
            n = int(size)
        except ValueError:
            raise ValueError(f"invalid size of watch cache size: {item}") from None
        if n < 0:
            raise ValueError(f"watch cache size cannot be negative: {item}")
        out.append((resource.lower(), n))
    return tuple(out)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerOptions:
    # storage
    etcd_servers: tuple[str, ...] = ()
    etcd_cafile: str = ""
    etcd_certfile: str = ""
    etcd_keyfile: str = ""
    etcd_compaction_interval: float = 300.0
    watch_cache: bool = True
    # resource[.group] -> events kept; 0 turns the cache off for that resource (upstream)
    watch_cache_sizes: tuple[tuple[str, int], ...] = ()
    data_dir: str = ""  # plat-server only: embedded store under DATA_DIR/store, pki, kubeconfig
    # authentication / authorization
    token_auth_file: str = ""
    client_ca_file: str = ""
    anonymous_auth: bool = True
    authorization_mode: tuple[str, ...] = ("AlwaysAllow",)
    # serving
    tls_cert_file: str = ""
    tls_private_key_file: str = ""
    cert_dir: str = ""
    secure_port: int = 6443
    bind_address: str = "0.0.0.0"
    advertise_address: str = ""
    # limits
    max_requests_inflight: int = 400
    max_mutating_requests_inflight: int = 200
    request_timeout: float = 60.0
    min_request_timeout: int = 1800
    shutdown_delay_duration: float = 0.0
    event_ttl: float = 3600.0  # --event-ttl
    # services
    service_cluster_ip_range: str = "10.0.0.0/24"
    service_node_port_range: str = "30000-32767"
    # feature gates named on the command line (the others keep their defaults)
    feature_gates: tuple[tuple[str, bool], ...] = ()
    # logs
    logging_format: str = "text"
    log_level: str = "info"
    log_flush_frequency: float = 5.0


def _modes(text: str) -> tuple[str, ...]:
    modes = tuple(m.strip() for m in text.split(",") if m.strip())
    if not modes:
        raise ValueError("at least one authorization-mode must be passed")
    for m in modes:
        if m not in AUTHZ_MODES:
            raise ValueError(f'authorization-mode "{m}" is not a valid mode')
        if m in AUTHZ_MODES_LATER:
            raise ValueError(f'authorization-mode "{m}" is not supported by this server yet '
                             "(supported: AlwaysAllow, AlwaysDeny)")
    if len(set(modes)) != len(modes):
        raise ValueError(f"authorization-mode {text!r} has mode specified more than once")
    return modes


def _servers(text: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in text.split(",") if s.strip())


def _port(text: str) -> int:
    port = int(text)
    if not 0 <= port <= 65535:
        raise ValueError(f"--secure-port {port} must be between 0 and 65535, inclusive."
                         " 0 for turning off secure port")
    return port


def _non_negative(text: str) -> int:
    n = int(text)
    if n < 0:
        raise ValueError(f"{n} must not be negative")
    return n


def _service_cidr(text: str) -> str:
    net = ipaddress.ip_network(text.strip(), strict=False)
    if net.num_addresses < 4:
        raise ValueError(f"specified --service-cluster-ip-range {text} is too small")
    return str(net)


def _port_range(text: str) -> str:
    from apiserver.registry.allocators import parse_port_range
    parse_port_range(text)
    return text.strip()


def build_parser(*, allinone: bool) -> argparse.ArgumentParser:
    prog = "plat-server" if allinone else "plat-apiserver"
    desc = ("The all-in-one platform server: API server, embedded store and controllers."
            if allinone else "The platform API server: a stateless replica over an etcd3 store.")
    p = argparse.ArgumentParser(prog=prog, description=desc, allow_abbrev=False)
    flag = "?"

    def boolean(name: str, default: bool, help_: str) -> None:
        p.add_argument(name, nargs=flag, const=True, default=default,
                       type=_arg(parse_bool, "bool"), help=help_)

    g = p.add_argument_group("etcd")
    g.add_argument("--etcd-servers", type=_arg(_servers, "list"), default=(),
                   help="List of etcd servers to connect with (scheme://ip:port), comma "
                        "separated." + (" Without it the embedded store is used." if allinone
                                        else ""))
    g.add_argument("--etcd-cafile", default="", help="SSL Certificate Authority file used to "
                   "secure etcd communication.")
    g.add_argument("--etcd-certfile", default="", help="SSL certification file used to secure "
                   "etcd communication.")
    g.add_argument("--etcd-keyfile", default="", help="SSL key file used to secure etcd "
                   "communication.")
    g.add_argument("--etcd-compaction-interval", type=_arg(parse_duration, "duration"),
                   default=300.0, help="The interval of compaction requests. If 0, the "
                   "compaction request from apiserver is disabled. (default 5m0s)")
    boolean("--watch-cache", True, "Enable watch caching in the apiserver (default true)")
    g.add_argument("--event-ttl", type=_arg(parse_duration, "duration"), default=3600.0,
                   help="Amount of time to retain events. (default 1h0m0s)")
    g.add_argument("--watch-cache-sizes", type=_arg(parse_watch_cache_sizes, "size list"),
                   default=(), help="Watch cache size settings for some resources, comma "
                   "separated. The individual setting format: resource[.group]#size, where "
                   "resource is lowercase plural (no version), group is omitted for resources "
                   "of apiVersion v1 (the legacy core API) and included for others, and size "
                   "is a number. 0 disables the cache for that resource.")
    if allinone:
        p.add_argument("--data-dir", required=True, help="Directory for the embedded store, "
                       "the PKI and admin.kubeconfig.")

    g = p.add_argument_group("authentication and authorization")
    g.add_argument("--token-auth-file", default="", help="If set, the file that will be used "
                   "to secure the secure port of the API server via token authentication.")
    g.add_argument("--client-ca-file", default="", help="If set, any request presenting a "
                   "client certificate signed by one of the authorities in the client-ca-file "
                   "is authenticated with an identity corresponding to the CommonName of the "
                   "client certificate.")
    boolean("--anonymous-auth", True, "Enables anonymous requests to the secure port of the "
           "API server. (default true)")
    g.add_argument("--authorization-mode", type=_arg(_modes, "modes"),
                   default=("AlwaysAllow",), help="Ordered list of plug-ins to do "
                   "authorization on secure port. Supported: AlwaysAllow,AlwaysDeny. "
                   "(default AlwaysAllow: RBAC is not served yet)")

    g = p.add_argument_group("secure serving")
    g.add_argument("--tls-cert-file", default="", help="File containing the default x509 "
                   "Certificate for HTTPS. If not set, a self-signed certificate is generated "
                   "in --cert-dir.")
    g.add_argument("--tls-private-key-file", default="", help="File containing the default "
                   "x509 private key matching --tls-cert-file.")
    g.add_argument("--cert-dir", default="", help="The directory where the TLS certs are "
                   "located (default: DATA_DIR/pki for plat-server, /var/run/platform for "
                   "plat-apiserver).")
    g.add_argument("--secure-port", type=_arg(_port, "port"), default=6443,
                   help="The port on which to serve HTTPS. (default 6443)")
    g.add_argument("--bind-address", default="0.0.0.0", help="The IP address on which to "
                   "listen for the --secure-port port. (default 0.0.0.0)")
    g.add_argument("--advertise-address", default="", help="The IP address on which to "
                   "advertise the apiserver to members of the cluster.")

    g = p.add_argument_group("limits")
    g.add_argument("--max-requests-inflight", type=_arg(_non_negative, "int"), default=400,
                   help="The maximum number of non-mutating requests in flight at a given "
                   "time. Zero for no limit. (default 400)")
    g.add_argument("--max-mutating-requests-inflight", type=_arg(_non_negative, "int"),
                   default=200, help="The maximum number of mutating requests in flight at "
                   "a given time. Zero for no limit. (default 200)")
    g.add_argument("--request-timeout", type=_arg(parse_duration, "duration"), default=60.0,
                   help="An optional field indicating the duration a handler must keep a "
                   "request open before timing it out. (default 1m0s)")
    g.add_argument("--min-request-timeout", type=_arg(_non_negative, "int"), default=1800,
                   help="The minimum number of seconds a handler must keep a request open "
                   "before timing it out; watches last a random time between it and twice "
                   "it unless timeoutSeconds is given. (default 1800)")
    g.add_argument("--shutdown-delay-duration", type=_arg(parse_duration, "duration"),
                   default=0.0, help="Time to delay the termination. During that time the "
                   "server keeps serving requests normally while /readyz returns failure.")

    g = p.add_argument_group("services")
    g.add_argument("--service-cluster-ip-range", type=_arg(_service_cidr, "CIDR"),
                   default="10.0.0.0/24", help="A CIDR notation IP range from which to "
                   "assign service cluster IPs. (default 10.0.0.0/24)")
    g.add_argument("--service-node-port-range", type=_arg(_port_range, "port range"),
                   default="30000-32767", help="A port range to reserve for services with "
                   "NodePort visibility. Example: '30000-32767'. Inclusive at both ends of "
                   "the range. (default 30000-32767)")

    g = p.add_argument_group("features")
    g.add_argument("--feature-gates", type=_arg(featuregates.parse, "feature gates"),
                   default={}, help="A set of key=value pairs that describe feature gates for "
                   "alpha/experimental features. Options are: " + ", ".join(
                       f"{k}=true|false (ALPHA - default={str(v).lower()})"
                       for k, v in sorted(featuregates.DEFAULTS.items())))

    g = p.add_argument_group("logs")
    g.add_argument("--logging-format", choices=("text", "json"), default="text",
                   help="Sets the log format. (default text)")
    g.add_argument("--log-level", choices=("debug", "info", "warning", "error"),
                   default="info", help="Minimum level of log lines. (default info)")
    g.add_argument("--log-flush-frequency", type=_arg(parse_duration, "duration"),
                   default=5.0, help="Maximum number of seconds between log flushes "
                   "(default 5s)")
    return p


def parse_options(argv: Sequence[str] | None = None, *, allinone: bool) -> ServerOptions:
    p = build_parser(allinone=allinone)
    ns = p.parse_args(argv)
    if bool(ns.tls_cert_file) != bool(ns.tls_private_key_file):
        p.error("--tls-cert-file and --tls-private-key-file must be given together")
    if not allinone and not ns.etcd_servers:
        p.error("--etcd-servers must be specified")
    if ns.request_timeout <= 0:
        p.error("--request-timeout must be positive")
    return ServerOptions(
        etcd_servers=ns.etcd_servers, etcd_cafile=ns.etcd_cafile,
        etcd_certfile=ns.etcd_certfile, etcd_keyfile=ns.etcd_keyfile,
        etcd_compaction_interval=ns.etcd_compaction_interval, watch_cache=ns.watch_cache,
        watch_cache_sizes=ns.watch_cache_sizes,
        data_dir=getattr(ns, "data_dir", "") or "",
        token_auth_file=ns.token_auth_file, client_ca_file=ns.client_ca_file,
        anonymous_auth=ns.anonymous_auth, authorization_mode=ns.authorization_mode,
        tls_cert_file=ns.tls_cert_file, tls_private_key_file=ns.tls_private_key_file,
        cert_dir=ns.cert_dir, secure_port=ns.secure_port, bind_address=ns.bind_address,
        advertise_address=ns.advertise_address,
        max_requests_inflight=ns.max_requests_inflight,
        max_mutating_requests_inflight=ns.max_mutating_requests_inflight,
        request_timeout=ns.request_timeout, min_request_timeout=ns.min_request_timeout,
        event_ttl=ns.event_ttl,
        shutdown_delay_duration=ns.shutdown_delay_duration,
        service_cluster_ip_range=ns.service_cluster_ip_range,
        service_node_port_range=ns.service_node_port_range,
        feature_gates=tuple(sorted(ns.feature_gates.items())),
        logging_format=ns.logging_format, log_level=ns.log_level,
        log_flush_frequency=ns.log_flush_frequency,
    )

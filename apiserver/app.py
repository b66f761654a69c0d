"""Assembly of the API server: storage, watch caches, registry stores, the filter chain and the
non-resource endpoints, on one aiohttp application; and the runner both commands use.

- ``await open_backends(options)`` opens the store (embedded or etcd3), one watch cache per
  stored resource when ``--watch-cache`` (default), and the registry's stores.
- ``build_app(options, backends)`` returns the (unfrozen) ``web.Application``: the filter
  chain of ``apiserver.filters``, health, discovery, ``/version``, ``/metrics`` and the
  resource endpoints.
- ``await serve(options, allinone=...)`` runs it over TLS until SIGTERM/SIGINT, then shuts
  down gracefully: readyz fails first, the listener closes, in-flight requests finish (up to
  the request timeout), watches end, the controllers stop, caches and store close.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import signal
import ssl
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

import orjson
import structlog
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

from apiserver import certs, featuregates, gctuning, health
from apiserver.authn import build_authenticator
from apiserver.authz import build_authorizer
from apiserver.discovery import Discovery
from apiserver.filters import ChainConfig, build_chain
from apiserver.filters.longrunning import is_long_running
from apiserver.health import HealthState
from apiserver.openapi import install_openapi
from apiserver.registry import allocators
from apiserver.registry.catalog import (
    bind_auth,
    build_stores,
    builtin_resources,
    ensure_system_namespaces,
    ensure_system_priority_classes,
)
from apiserver.registry.namespace_controller import NamespaceController
from apiserver.registry.object_count import ObjectCounter
from apiserver.status import qualified_resource, service_unavailable
from apiserver.version import handle_version
from storage.cacher import Cacher
from storage.cacher.cacher import DEFAULT_MAX_EVENTS
from storage.factory import StorageConfig, open_storage
from storage.keys import resource_prefix

if TYPE_CHECKING:
    from apiserver.options import ServerOptions
    from apiserver.registry.interface import RESTStore
    from apiserver.resources import ResourceInfo
    from storage.interface import Interface

log = structlog.get_logger("apiserver")

# Above the endpoints' own 3 MiB limit (they answer 413 with upstream's message themselves);
# aiohttp's limit only guards against bodies far beyond it.
CLIENT_MAX_SIZE: Final = 4 * 1024 * 1024
MAX_HEADER_BYTES: Final = 1 << 20  # upstream secure serving: MaxHeaderBytes
DEFAULT_CERT_DIR: Final = "/var/run/platform"
KUBECONFIG_NAME: Final = "admin.kubeconfig"
StoreKey = tuple[str, str, str]


class Cache(Protocol):
    @property
    def ready(self) -> bool: ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Backends:
    """What the app serves. ``owned`` backends are closed by ``close_backends``."""

    storage: Interface | None
    resources: tuple[ResourceInfo, ...] = ()
    stores: Mapping[StoreKey, RESTStore] = field(default_factory=dict)
    caches: tuple[Cache, ...] = ()
    owned: bool = True


class _LongRunning:
    """Tasks serving watches, so that shutdown can end them."""

    def __init__(self) -> None:
        self.tasks: set[asyncio.Task[Any]] = set()
        self.closed = False  # set once shutdown ended the open watches


HEALTH_KEY: Final = web.AppKey("health", HealthState)
BACKENDS_KEY: Final = web.AppKey("backends", Backends)
LONG_RUNNING_KEY: Final = web.AppKey("long_running", _LongRunning)


def storage_config(options: ServerOptions) -> StorageConfig:
    if options.etcd_servers:
        return StorageConfig(
            backend="etcd3", etcd_servers=options.etcd_servers,
            etcd_cafile=options.etcd_cafile, etcd_certfile=options.etcd_certfile,
            etcd_keyfile=options.etcd_keyfile,
            compaction_interval=options.etcd_compaction_interval)
    if not options.data_dir:
        raise ValueError("--etcd-servers must be specified")
    return StorageConfig(backend="embedded", data_dir=str(Path(options.data_dir) / "store"),
                         compaction_interval=options.etcd_compaction_interval)


async def open_backends(options: ServerOptions) -> Backends:
    storage = await open_storage(storage_config(options))
    caches: dict[str, Cacher] = {}

    sizes = dict(options.watch_cache_sizes)

    def storage_for(info: ResourceInfo) -> Interface:
        qualified = qualified_resource(info.resource, info.group)
        size = sizes.get(qualified)
        if not options.watch_cache or size == 0:
            return storage
        prefix = resource_prefix(info.group, info.resource)
        cache = caches.get(prefix)
        if cache is None:
            cache = Cacher(storage, prefix, resource=qualified,
                           max_events=size if size is not None else DEFAULT_MAX_EVENTS)
            caches[prefix] = cache
        return cache

    try:
        resources = tuple(builtin_resources())
        allocators.configure(options.service_cluster_ip_range, options.service_node_port_range)
        stores = build_stores(storage_for, min_request_timeout=options.min_request_timeout,
                              event_ttl=math.ceil(options.event_ttl),  # 0: for ever
                              gates=featuregates.effective(dict(options.feature_gates)))
        for c in caches.values():
            await c.start()
    except BaseException:
        for c in caches.values():
            await c.close()
        await storage.close()
        raise
    return Backends(storage=storage, resources=resources, stores=stores,
                    caches=tuple(caches.values()))


async def close_backends(backends: Backends) -> None:
    if not backends.owned:
        return
    for c in backends.caches:
        with contextlib.suppress(Exception):
            await c.close()
    if backends.storage is not None:
        await backends.storage.close()


async def handle_metrics(request: web.Request) -> web.Response:
    resp = web.Response(body=generate_latest(REGISTRY))
    resp.headers["Content-Type"] = CONTENT_TYPE_LATEST
    return resp


def _track_long_running(registry: _LongRunning) -> Callable[..., Any]:
    from apiserver.request import REQUEST_INFO

    @web.middleware
    async def middleware(request: web.Request, handler: Any) -> web.StreamResponse:
        if not is_long_running(request[REQUEST_INFO]):
            resp: web.StreamResponse = await handler(request)
            return resp
        if registry.closed:
            # a watch sent on a kept-alive connection after shutdown ended the others
            raise service_unavailable("apiserver is shutting down")
        task = asyncio.current_task()
        if task is not None:
            registry.tasks.add(task)
        try:
            resp = await handler(request)
            return resp
        finally:
            if task is not None:
                registry.tasks.discard(task)

    return middleware


def build_app(options: ServerOptions, backends: Backends, *,
              install_endpoints: bool = True) -> web.Application:
    """The application. Raises ValueError for configuration it cannot serve (a bad token
    file, an unknown authorization mode)."""
    state = HealthState(backends.storage, backends.caches)
    long_running = _LongRunning()
    known = frozenset((r.group, r.version, r.resource) for r in backends.resources)
    authenticator = build_authenticator(options)
    authorizer = build_authorizer(options.authorization_mode)
    # the review resources (SubjectAccessReview, TokenReview, ...) answer through these
    bind_auth(backends.stores, authorizer=authorizer, authenticator=authenticator)
    chain = build_chain(ChainConfig(
        authenticator=authenticator,
        authorizer=authorizer,
        request_timeout=options.request_timeout,
        max_requests_inflight=options.max_requests_inflight,
        max_mutating_requests_inflight=options.max_mutating_requests_inflight,
        known_resources=known,
    ))
    # watches are tracked innermost so that shutdown can end exactly the serving tasks
    app = web.Application(middlewares=[*chain, _track_long_running(long_running)],
                          client_max_size=CLIENT_MAX_SIZE)
    app[HEALTH_KEY] = state
    app[BACKENDS_KEY] = backends
    app[LONG_RUNNING_KEY] = long_running

    health.install(app, state)
    advertise = (f"{options.advertise_address}:{options.secure_port}"
                 if options.advertise_address else "")
    discovery = Discovery(backends.resources, server_address=advertise)
    discovery.install(app)
    if backends.resources:
        install_openapi(app, list(backends.resources))
    app.router.add_get("/version", handle_version)
    app.router.add_get("/version/", handle_version)
    app.router.add_get("/metrics", handle_metrics)
    app.router.add_get("/", _index_handler(app, discovery))
    if install_endpoints and backends.stores:
        from apiserver.endpoints import install

        install(app, backends.stores)

    async def end_watches(app: web.Application) -> None:
        # Runs after the listener closed: no new watch starts; the open ones end now
        # instead of holding shutdown until their timeoutSeconds.
        state.shutting_down = True
        long_running.closed = True
        for task in list(long_running.tasks):
            task.cancel()

    app.on_shutdown.append(end_watches)
    return app


def _index_handler(app: web.Application, discovery: Discovery
                   ) -> Callable[[web.Request], Awaitable[web.Response]]:
    """GET /: ``{"paths": [...]}``, every fixed path served, sorted, as upstream's index."""
    body: bytes = b""

    async def handle(request: web.Request) -> web.Response:
        nonlocal body
        if not body:
            paths = set(discovery.paths())
            for resource in app.router.resources():
                path = resource.get_info().get("path")
                if isinstance(path, str) and path != "/":
                    paths.add(path)
            body = orjson.dumps({"paths": sorted(paths)}, option=orjson.OPT_INDENT_2) + b"\n"
        return web.Response(body=body, content_type="application/json")

    return handle


# ---- TLS and kubeconfig ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TLSFiles:
    cert: str
    key: str
    ca: str = ""  # the CA that signed ``cert`` when we made it (for the kubeconfig)
    pki: certs.PKI | None = None


def prepare_tls(options: ServerOptions, *, allinone: bool) -> tuple[ServerOptions, TLSFiles]:
    """Serving certificate from flags, or generated under --cert-dir (plat-server:
    DATA_DIR/pki). A generated CA also verifies client certificates unless
    --client-ca-file names another bundle."""
    if options.tls_cert_file:
        return options, TLSFiles(cert=options.tls_cert_file, key=options.tls_private_key_file)
    cert_dir = options.cert_dir or (str(Path(options.data_dir) / "pki") if allinone
                                    else DEFAULT_CERT_DIR)
    advertise: tuple[str, ...] = (
        (options.advertise_address,) if options.advertise_address else ())
    if options.bind_address not in ("0.0.0.0", "::", ""):
        advertise += (options.bind_address,)
    pki = certs.ensure_pki(cert_dir, advertise=advertise)
    if not options.client_ca_file:
        options = replace(options, client_ca_file=str(pki.ca_cert))
    return options, TLSFiles(cert=str(pki.serving_cert), key=str(pki.serving_key),
                             ca=str(pki.ca_cert), pki=pki)


def server_ssl_context(options: ServerOptions, tls: TLSFiles) -> ssl.SSLContext:
    for flag, path in (("--tls-cert-file", tls.cert), ("--tls-private-key-file", tls.key),
                       ("--client-ca-file", options.client_ca_file)):
        if path and not Path(path).is_file():
            raise ValueError(f'{flag} "{path}": no such file')
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(tls.cert, tls.key)
    except ssl.SSLError as e:
        raise ValueError(f'cannot load the serving certificate "{tls.cert}" with key '
                         f'"{tls.key}": {e.reason or e}') from None
    ctx.set_alpn_protocols(["http/1.1"])
    if options.client_ca_file:
        # Ask for a client certificate and verify it against the bundle; a connection
        # without one is still served (tokens, anonymous).
        ctx.load_verify_locations(cafile=options.client_ca_file)
        ctx.verify_mode = ssl.CERT_OPTIONAL
    return ctx


def write_kubeconfig(path: Path, *, server: str, pki: certs.PKI) -> None:
    import base64

    import yaml

    def b64(p: Path) -> str:
        return base64.b64encode(p.read_bytes()).decode()

    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "platform", "cluster": {
            "certificate-authority-data": b64(pki.ca_cert), "server": server}}],
        "users": [{"name": certs.ADMIN_USER, "user": {
            "client-certificate-data": b64(pki.admin_cert),
            "client-key-data": b64(pki.admin_key)}}],
        "contexts": [{"name": "platform", "context": {
            "cluster": "platform", "user": certs.ADMIN_USER}}],
        "current-context": "platform",
        "preferences": {},
    }
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(yaml.safe_dump(cfg, sort_keys=False))
    tmp.chmod(0o600)
    tmp.replace(path)


# ---- runner ---------------------------------------------------------------------------------


class Controllers(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...


async def serve(options: ServerOptions, *, allinone: bool,
                ready: Callable[[str], None] | None = None) -> None:
    """Run until SIGTERM / SIGINT. ``ready`` is called with the base URL once listening."""
    options, tls = prepare_tls(options, allinone=allinone)
    ssl_ctx = server_ssl_context(options, tls)
    # configuration errors before anything is opened
    build_authenticator(options)
    build_authorizer(options.authorization_mode)
    backends = await open_backends(options)
    controllers: list[Controllers] = []
    runner: web.AppRunner | None = None
    gc_thaw: asyncio.Task[None] | None = None
    try:
        app = build_app(options, backends)
        # auto_decompress off: a request's Content-Encoding is not decoded (Go's server does
        # not either; the bytes are the body), so a mislabelled body is a 400, not a 500.
        # Request line and header fields up to 1 MiB, as upstream's MaxHeaderBytes (aiohttp's
        # 8 KiB refused long label selectors and tokens).
        runner = web.AppRunner(app, handle_signals=False, access_log=None,
                               shutdown_timeout=options.request_timeout,
                               keepalive_timeout=75.0, auto_decompress=False,
                               max_line_size=MAX_HEADER_BYTES, max_field_size=MAX_HEADER_BYTES,
                               max_headers=1024)
        await runner.setup()
        site = web.TCPSite(runner, options.bind_address, options.secure_port,
                           ssl_context=ssl_ctx, backlog=1024, reuse_address=True)
        await site.start()
        port = _bound_port(runner, options.secure_port)
        url = f"https://127.0.0.1:{port}"
        for c in _controllers(backends, allinone=allinone):
            await c.start()
            controllers.append(c)
        if allinone and tls.pki is not None:
            kubeconfig = Path(options.data_dir) / KUBECONFIG_NAME
            write_kubeconfig(kubeconfig, server=url, pki=tls.pki)
            print(f"plat-server: serving on {url}; admin kubeconfig: {kubeconfig}", flush=True)
        log.info("serving", url=url, bind_address=options.bind_address, port=port,
                 storage="etcd3" if options.etcd_servers else "embedded",
                 authorization_mode=",".join(options.authorization_mode))
        if gctuning.installed():
            # start-up's long-lived state (schemas, primed caches) is frozen out of every
            # later collection; see apiserver/gctuning.py
            gctuning.freeze_now()
            gc_thaw = asyncio.create_task(gctuning.thaw_periodically(), name="gc-thaw")
        if ready is not None:
            ready(url)
        await _wait_for_signal()
        log.info("shutting down")
        app[HEALTH_KEY].shutting_down = True
        if options.shutdown_delay_duration > 0:
            await asyncio.sleep(options.shutdown_delay_duration)
    finally:
        if gc_thaw is not None:
            gc_thaw.cancel()
        if runner is not None:
            await runner.cleanup()
        for c in reversed(controllers):
            with contextlib.suppress(Exception):
                await c.stop()
        await close_backends(backends)
        log.info("stopped")


class _SystemNamespaces:
    """Creates default, platform-system, platform-public and platform-node-lease (upstream's
    system namespaces controller runs in every apiserver): once at start, retried in the
    background while the store refuses."""

    def __init__(self, stores: Mapping[StoreKey, RESTStore]) -> None:
        self._stores = stores
        self._task: asyncio.Task[None] | None = None

    async def _ensure(self) -> None:
        while True:
            try:
                await ensure_system_namespaces(self._stores)
                await ensure_system_priority_classes(self._stores)
                return
            except asyncio.CancelledError:
                raise
            except Exception as e:  # the store is down or slow: try again
                log.warning("creating the system namespaces failed; retrying", error=str(e))
                await asyncio.sleep(1.0)

    async def start(self) -> None:
        self._task = asyncio.create_task(self._ensure(), name="system-namespaces")
        # normally done before the server reports ready; never blocks start-up for long
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._task), 5.0)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task


def _controllers(backends: Backends, *, allinone: bool) -> list[Controllers]:
    """What runs beside the handlers: system namespaces and the storage object count in
    every apiserver; the namespace controller in plat-server only (a separate
    controller-manager runs it otherwise)."""
    if not backends.stores:
        return []
    out: list[Controllers] = [_SystemNamespaces(backends.stores),
                              ObjectCounter(backends.stores)]
    if allinone:
        out.append(NamespaceController(backends.stores))
    return out


def _bound_port(runner: web.AppRunner, wanted: int) -> int:
    for addr in runner.addresses:
        if isinstance(addr, tuple) and len(addr) >= 2:
            return int(addr[1])
    return wanted


async def _wait_for_signal() -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)


def run(options: ServerOptions, *, allinone: bool) -> int:
    """Synchronous entry of both commands: configure logs, run on uvloop, map start-up
    failures to a message and exit code 1."""
    from apiserver import logs
    from apiserver.authn.tokenfile import TokenFileError
    from raftstore.journal import JournalError

    logs.configure(options.logging_format, options.log_level, options.log_flush_frequency)
    gctuning.tune()
    try:
        import uvloop

        uvloop.run(serve(options, allinone=allinone))
    except KeyboardInterrupt:
        return 0
    except (TokenFileError, JournalError, ValueError, OSError, ssl.SSLError) as e:
        print(f"{_prog(allinone)}: error: {e}", file=sys.stderr, flush=True)
        return 1
    except Exception as e:  # start-up failure of another layer (e.g. store unreachable)
        log.exception("start-up failed")
        print(f"{_prog(allinone)}: error: {e}", file=sys.stderr, flush=True)
        return 1
    return 0


def _prog(allinone: bool) -> str:
    return "plat-server" if allinone else "plat-apiserver"


def main_for(argv: Sequence[str] | None, *, allinone: bool) -> int:
    from apiserver.options import parse_options

    return run(parse_options(argv, allinone=allinone), allinone=allinone)

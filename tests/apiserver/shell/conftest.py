"""Fixtures of the server-shell tests: a real app (filter chain, health, discovery) over a
small stand-in store, served by aiohttp's test server or a real TLS listener."""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from apiserver.app import Backends, build_app
from apiserver.options import ServerOptions
from apiserver.request import REQUEST_INFO, USER
from apiserver.resources import ResourceInfo

RESOURCES = (
    ResourceInfo(group="", version="v1", resource="configmaps", kind="ConfigMap",
                 namespaced=True, singular="configmap", short_names=("cm",),
                 storage_version_hash="qFsyl6wFWjQ="),
    ResourceInfo(group="", version="v1", resource="namespaces", kind="Namespace",
                 namespaced=False, singular="namespace", short_names=("ns",),
                 verbs=("create", "delete", "get", "list", "patch", "update", "watch")),
    ResourceInfo(group="", version="v1", resource="namespaces", kind="Namespace",
                 namespaced=False, subresource="status", verbs=("get", "patch", "update")),
    ResourceInfo(group="apps", version="v1", resource="statefulsets", kind="StatefulSet",
                 namespaced=True, singular="statefulset", short_names=("sts",),
                 categories=("all",), storage_version_hash="H+vl74LkKdo="),
    ResourceInfo(group="apps", version="v1", resource="statefulsets", kind="StatefulSet",
                 namespaced=True, subresource="status", verbs=("get", "patch", "update")),
    ResourceInfo(group="apps", version="v1", resource="statefulsets", kind="StatefulSet",
                 namespaced=True, subresource="scale", verbs=("get", "patch", "update"),
                 sub_kind_group="autoscaling", sub_kind_version="v1", sub_kind="Scale"),
    ResourceInfo(group="coordination.plat.io", version="v1", resource="leases", kind="Lease",
                 namespaced=True, singular="lease"),
    ResourceInfo(group="coordination.plat.io", version="v1beta1", resource="leases",
                 kind="Lease", namespaced=True, singular="lease"),
)


class FakeStore:
    """Stand-in for the store: only what health needs (current_revision), switchable."""

    def __init__(self) -> None:
        self.up = True
        self.hang = False

    async def current_revision(self) -> int:
        if self.hang:
            await asyncio.sleep(3600)
        if not self.up:
            raise ConnectionError("connection refused")
        return 42

    async def close(self) -> None:
        return None


class FakeCache:
    def __init__(self, ready: bool = True) -> None:
        self.ready = ready

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None


def echo_routes(app: web.Application) -> dict[str, Any]:
    """Resource routes that answer what the pipeline decided (user and request info), plus
    control knobs: ?sleep=S, ?block=1 (waits on the returned event), ?boom=1."""
    state: dict[str, Any] = {"release": asyncio.Event(), "entered": asyncio.Event()}

    async def handle(request: web.Request) -> web.StreamResponse:
        if request.query.get("boom"):
            raise RuntimeError("secret internal detail")
        if request.query.get("read"):
            await request.read()
        if request.query.get("block"):
            state["entered"].set()
            await state["release"].wait()
        if "sleep" in request.query:
            await asyncio.sleep(float(request.query["sleep"]))
        user, info = request[USER], request[REQUEST_INFO]
        return web.json_response({
            "user": user.name, "uid": user.uid, "groups": list(user.groups),
            "extra": user.extra, "verb": info.verb, "resource": info.resource,
            "namespace": info.namespace, "name": info.name,
        })

    for prefix in ("/api/v1/{tail:.+}", "/apis/{group}/{version}/{tail:.+}", "/whoami"):
        app.router.add_route("*", prefix, handle)
    return state


ClientFactory = Callable[..., Awaitable[tuple[TestClient[Any, Any], dict[str, Any]]]]

ADMIN_TOKEN = "tok-shell-admin"
_ADMIN_LINE = f"{ADMIN_TOKEN},shell-admin,uid-shell-admin,system:masters\n"


def _with_admin_token(token_file: str) -> str:
    """A token file holding ``token_file``'s users and the tests' admin."""
    import tempfile

    text = Path(token_file).read_text() if token_file else ""
    if text and not text.endswith("\n"):
        text += "\n"
    fd, path = tempfile.mkstemp(suffix=".csv", prefix="shell-tokens-")
    with open(fd, "w") as f:
        f.write(text + _ADMIN_LINE)
    return path


@pytest.fixture
async def make_client() -> AsyncIterator[ClientFactory]:
    clients: list[TestClient[Any, Any]] = []
    token_files: list[str] = []

    async def make(options: ServerOptions | None = None, *, store: Any = None,
                   caches: tuple[Any, ...] = (), anonymous: bool = False,
                   ) -> tuple[TestClient[Any, Any], dict[str, Any]]:
        """A client of a fresh app. Its requests carry an admin's bearer token (a member of
        system:masters, added to the options' token file) unless ``anonymous``: under
        AlwaysAllow, as upstream, a request without credentials is 401."""
        opts = options or ServerOptions()
        headers: dict[str, str] = {}
        if not anonymous:
            token_files.append(_with_admin_token(opts.token_auth_file))
            opts = replace(opts, token_auth_file=token_files[-1])
            headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        backends = Backends(storage=store if store is not None else FakeStore(),
                            resources=RESOURCES, caches=caches, owned=False)
        app = build_app(opts, backends)
        state = echo_routes(app)
        state["app"] = app
        client = TestClient(TestServer(app), headers=headers)
        await client.start_server()
        clients.append(client)
        return client, state

    yield make
    for c in clients:
        await c.close()
    for path in token_files:
        Path(path).unlink(missing_ok=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def client_ssl(ca: Path, cert: Path | None = None, key: Path | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(ca))
    if cert is not None and key is not None:
        ctx.load_cert_chain(str(cert), str(key))
    return ctx


def with_options(**kw: Any) -> ServerOptions:
    return replace(ServerOptions(), **kw)

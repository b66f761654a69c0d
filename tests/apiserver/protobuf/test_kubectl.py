"""Stock kubectl against a tiny protobuf-speaking server: kubectl's Go decoder reads what
``encode`` writes, and ``decode`` reads what kubectl's Go encoder writes.

The server decodes each create body with ``protobuf.decode``, fills the server-set metadata
(uid, resourceVersion, creationTimestamp, a managedFields entry with FieldsV1 and a time),
and answers with ``protobuf.encode`` as ``application/vnd.kubernetes.protobuf``. ``kubectl
create ... -o json`` then prints what its typed client decoded: it must be the object sent.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from apiserver import protobuf
from tests.apiserver.protobuf.test_codec import _without_null_times

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

SERVER_META: dict[str, Any] = {
    "uid": "0b9f2a4e-1c1d-4c39-9d2c-9f0e0c1d2e3f",
    "resourceVersion": "42",
    "creationTimestamp": "2026-01-02T03:04:05Z",
    "managedFields": [{
        "manager": "kubectl-create", "operation": "Update", "apiVersion": "v1",
        "time": "2026-01-02T03:04:05Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}},
    }],
}


async def _create(request: web.Request) -> web.Response:
    body = await request.read()
    try:
        obj = protobuf.decode(body)
    except (protobuf.ProtobufError, protobuf.UnknownKind) as e:
        return web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                  "message": str(e), "reason": "BadRequest", "code": 400},
                                 status=400)
    obj["metadata"].update(SERVER_META)
    request.app[SEEN].append(obj)
    return web.Response(status=201, body=protobuf.encode(obj),
                        content_type="application/vnd.kubernetes.protobuf")


async def _version(request: web.Request) -> web.Response:
    return web.json_response({"major": "1", "minor": "33", "gitVersion": "v1.33.0"})


SEEN = web.AppKey("seen", list)


@pytest.fixture
async def server() -> AsyncIterator[TestServer]:
    app = web.Application()
    app[SEEN] = []
    app.router.add_get("/version", _version)
    app.router.add_post("/{tail:.*}", _create)
    srv = TestServer(app, host="127.0.0.1")
    await srv.start_server()
    try:
        yield srv
    finally:
        await srv.close()


async def _kubectl(srv: TestServer, *args: str) -> dict[str, Any]:
    assert KUBECTL is not None
    flags = ("--server", f"http://127.0.0.1:{srv.port}", "--kubeconfig", "/dev/null",
             "-o", "json", "--show-managed-fields")
    end = args.index("--") if "--" in args else len(args)  # flags before a container command
    proc = await asyncio.create_subprocess_exec(
        KUBECTL, *args[:end], *flags, *args[end:],
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()
    result: dict[str, Any] = json.loads(out)
    return result


@pytest.mark.parametrize("args", [
    ("create", "namespace", "foo"),
    ("create", "configmap", "cm1", "-n", "foo", "--from-literal=a=b", "--from-literal=c="),
    ("create", "secret", "generic", "s1", "-n", "foo", "--from-literal=pw=hunter2"),
    ("create", "deployment", "web", "-n", "foo", "--image=nginx", "--replicas=0",
     "--port=80"),
    ("create", "service", "nodeport", "svc1", "-n", "foo", "--tcp=80:8080",
     "--node-port=30080"),
    ("create", "job", "j1", "-n", "foo", "--image=busybox", "--", "true"),
    ("create", "cronjob", "c1", "-n", "foo", "--image=busybox", "--schedule=*/5 * * * *"),
    ("create", "poddisruptionbudget", "p1", "-n", "foo", "--selector=app=web",
     "--min-available=50%"),
])
async def test_kubectl_reads_what_we_encode(server: TestServer, args: tuple[str, ...]) -> None:
    printed = await _kubectl(server, *args)
    (sent,) = server.app[SEEN]
    assert _without_null_times(printed) == sent  # Go prints a zero creationTimestamp as null

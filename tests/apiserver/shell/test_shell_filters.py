"""The filter chain through a real app: order of stages, errors as Status, authentication,
authorization, impersonation, in-flight limits, timeouts, metrics."""

from __future__ import annotations

import asyncio
from pathlib import Path

from prometheus_client import REGISTRY

from .conftest import with_options

TOKENS = '''tok-alice,alice,uid-1,"dev,ops"
tok-root,root,uid-0,system:masters
tok-bob, bob, uid-2
'''


def token_file(tmp_path: Path) -> str:
    p = tmp_path / "tokens.csv"
    p.write_text(TOKENS)
    return str(p)


def bearer(tok: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {tok}"}


async def test_request_info(make_client):
    client, _ = await make_client()
    r = await client.get("/api/v1/namespaces/ns1/configmaps/x")
    assert r.status == 200
    body = await r.json()
    assert body["user"] == "shell-admin"
    assert (body["verb"], body["resource"], body["namespace"], body["name"]) == \
        ("get", "configmaps", "ns1", "x")
    r = await client.get("/apis/apps/v1/statefulsets?watch=true")
    assert (await r.json())["verb"] == "watch"
    # the parameter decodes as upstream's bool: only "0" and "false" (any case) are false,
    # the empty value included ("?watch" was a list)
    for query, verb in (("watch", "watch"), ("watch=", "watch"), ("watch=yes", "watch"),
                        ("watch=TRUE", "watch"), ("watch=0", "list"),
                        ("watch=False", "list"), ("", "list")):
        r = await client.get(f"/apis/apps/v1/statefulsets?{query}")
        assert (await r.json())["verb"] == verb, query


async def test_anonymous_is_off_under_always_allow(make_client, caplog):
    """As upstream: AlwaysAllow (the default) with anonymous requests would let anyone do
    anything, so anonymous auth is turned off with a warning, and no credential is a 401."""
    client, _ = await make_client(anonymous=True)
    for path in ("/api/v1/namespaces", "/version", "/healthz"):
        r = await client.get(path)
        assert r.status == 401, path
        assert (await r.json())["reason"] == "Unauthorized"
    assert "AnonymousAuth is not allowed with the AlwaysAllow authorizer" in caplog.text
    # with another authorizer, anonymous requests are system:anonymous
    client, _ = await make_client(with_options(authorization_mode=("AlwaysDeny",)),
                                  anonymous=True)
    r = await client.get("/api/v1/namespaces/ns1/configmaps/x")
    assert r.status == 403
    assert 'User "system:anonymous" cannot get resource' in (await r.json())["message"]


async def test_unknown_path_and_method_are_status(make_client):
    client, _ = await make_client()
    r = await client.get("/nothing/here")
    assert r.status == 404
    assert r.content_type == "application/json"
    assert await r.json() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "the server could not find the requested resource", "reason": "NotFound",
        "details": {}, "code": 404}
    r = await client.post("/version")
    assert r.status == 405
    assert (await r.json())["reason"] == "MethodNotAllowed"


async def test_handler_exception_is_500_without_internals(make_client):
    client, _ = await make_client()
    r = await client.get("/api/v1/configmaps?boom=1")
    assert r.status == 500
    body = await r.json()
    assert body["reason"] == "InternalError" and body["code"] == 500
    assert "secret internal detail" not in await r.text()


async def test_body_over_client_max_size_is_413(make_client):
    client, _ = await make_client()
    r = await client.post("/api/v1/namespaces/a/configmaps?read=1", data=b"x" * (3 << 20))
    assert r.status == 200
    r = await client.post("/api/v1/namespaces/a/configmaps?read=1",
                          data=b"x" * ((4 << 20) + 1))
    assert r.status == 413
    body = await r.json()
    assert (body["reason"], body["code"]) == ("RequestEntityTooLarge", 413)


async def test_token_file_users(make_client, tmp_path):
    client, _ = await make_client(with_options(token_auth_file=token_file(tmp_path)))
    r = await client.get("/api/v1/configmaps", headers=bearer("tok-alice"))
    body = await r.json()
    assert (body["user"], body["uid"]) == ("alice", "uid-1")
    assert body["groups"] == ["dev", "ops", "system:authenticated"]
    r = await client.get("/api/v1/configmaps", headers=bearer("tok-bob"))
    body = await r.json()
    assert (body["user"], body["groups"]) == ("bob", ["system:authenticated"])
    # not a bearer header, or an empty token: no credential at all -> anonymous, which
    # AlwaysAllow turns off -> 401
    for h in ({"Authorization": "Basic Zm9vOmJhcg=="}, {"Authorization": "Bearer "}):
        r = await client.get("/api/v1/configmaps", headers=h)
        assert r.status == 401


async def test_bad_token_is_401_even_with_anonymous(make_client, tmp_path):
    client, _ = await make_client(with_options(token_auth_file=token_file(tmp_path)))
    for tok in ("nope", "tok-alic", "tok-alice2"):
        r = await client.get("/api/v1/configmaps", headers=bearer(tok))
        assert r.status == 401
        assert await r.json() == {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Unauthorized", "reason": "Unauthorized", "code": 401}


async def test_anonymous_off_is_401(make_client):
    client, _ = await make_client(with_options(anonymous_auth=False,
                                               authorization_mode=("AlwaysDeny",)),
                                  anonymous=True)
    r = await client.get("/version")
    assert r.status == 401


async def test_always_deny_message(make_client, tmp_path):
    client, _ = await make_client(with_options(
        token_auth_file=token_file(tmp_path), authorization_mode=("AlwaysDeny",)),
        anonymous=True)
    r = await client.get("/api/v1/namespaces/ns1/configmaps/x", headers=bearer("tok-alice"))
    assert r.status == 403
    assert await r.json() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'configmaps "x" is forbidden: User "alice" cannot get resource '
                   '"configmaps" in API group "" in the namespace "ns1": Everything is '
                   'forbidden.',
        "reason": "Forbidden", "details": {"name": "x", "kind": "configmaps"}, "code": 403}
    r = await client.get("/apis/apps/v1/statefulsets/web/status")
    assert (await r.json())["message"] == (
        'statefulsets.apps "web" is forbidden: User "system:anonymous" cannot get resource '
        '"statefulsets/status" in API group "apps" at the cluster scope: Everything is '
        'forbidden.')
    r = await client.get("/version")
    assert r.status == 403
    assert await r.json() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'forbidden: User "system:anonymous" cannot get path "/version": '
                   'Everything is forbidden.',
        "reason": "Forbidden", "details": {}, "code": 403}
    # system:masters is always allowed
    r = await client.get("/api/v1/configmaps", headers=bearer("tok-root"))
    assert r.status == 200


async def test_order_authentication_before_authorization(make_client, tmp_path):
    client, _ = await make_client(with_options(
        token_auth_file=token_file(tmp_path), authorization_mode=("AlwaysDeny",)))
    r = await client.get("/api/v1/configmaps", headers=bearer("bad"))
    assert r.status == 401


async def test_impersonation(make_client, tmp_path):
    tokens = token_file(tmp_path)
    client, _ = await make_client(with_options(token_auth_file=tokens))
    r = await client.get("/api/v1/configmaps", headers={
        **bearer("tok-alice"), "Impersonate-User": "carol", "Impersonate-Group": "g1",
        "Impersonate-Extra-Scopes": "s1"})
    body = await r.json()
    assert body["user"] == "carol"
    assert body["groups"] == ["g1", "system:authenticated"]
    assert body["extra"] == {"scopes": ["s1"]}
    r = await client.get("/api/v1/configmaps", headers={
        "Impersonate-User": "system:serviceaccount:ns1:robot"})
    assert (await r.json())["groups"] == [
        "system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"]
    r = await client.get("/api/v1/configmaps", headers={"Impersonate-Group": "g1"})
    assert r.status == 400

    deny, _ = await make_client(with_options(token_auth_file=tokens,
                                             authorization_mode=("AlwaysDeny",)))
    r = await deny.get("/api/v1/configmaps", headers={
        **bearer("tok-alice"), "Impersonate-User": "carol"})
    assert r.status == 403
    assert (await r.json())["message"] == (
        'users "carol" is forbidden: User "alice" cannot impersonate resource "users" in '
        'API group "" at the cluster scope: Everything is forbidden.')
    # system:masters may impersonate, and the impersonated user is then denied
    r = await deny.get("/api/v1/configmaps", headers={
        **bearer("tok-root"), "Impersonate-User": "carol"})
    assert r.status == 403
    assert 'User "carol" cannot list resource "configmaps"' in (await r.json())["message"]


async def test_max_in_flight(make_client, tmp_path):
    client, state = await make_client(with_options(
        token_auth_file=token_file(tmp_path), max_requests_inflight=1,
        max_mutating_requests_inflight=1, authorization_mode=("AlwaysDeny",)))
    root = bearer("tok-root")
    held = asyncio.ensure_future(client.get("/api/v1/configmaps?block=1", headers=root))
    await state["entered"].wait()
    try:
        # over the read-only limit: 429, decided before authorization (not 403)
        r = await client.get("/api/v1/configmaps", headers=bearer("tok-alice"))
        assert r.status == 429
        assert r.headers["Retry-After"] == "1"
        assert await r.json() == {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Too many requests, please try again later.",
            "reason": "TooManyRequests", "details": {"retryAfterSeconds": 1}, "code": 429}
        inflight = REGISTRY.get_sample_value("apiserver_current_inflight_requests",
                                             {"request_kind": "readOnly"})
        assert inflight == 1
        # the mutating pool is separate; system:masters is served over the limit; watches
        # are not counted
        r = await client.post("/api/v1/namespaces/a/configmaps", headers=root)
        assert r.status == 200
        r = await client.get("/api/v1/configmaps", headers=root)
        assert r.status == 200
        r = await client.get("/api/v1/configmaps?watch=1", headers=root)
        assert r.status == 200
    finally:
        state["release"].set()
        r = await held
        assert r.status == 200


async def test_request_timeout(make_client):
    client, _ = await make_client(with_options(request_timeout=0.2))
    r = await client.get("/api/v1/configmaps?sleep=5")
    assert r.status == 504
    body = await r.json()
    assert body["reason"] == "Timeout"
    assert body["message"] == ("Timeout: request did not complete within requested timeout "
                               "- context deadline exceeded")
    assert body["details"] == {}  # upstream's NewTimeoutError always carries details
    # a watch and a streaming sub-resource are long-running: not timed out by the filter
    r = await client.get("/api/v1/configmaps?watch=1&sleep=0.4")
    assert r.status == 200
    r = await client.get("/api/v1/namespaces/a/pods/p/log?sleep=0.4")
    assert r.status == 200
    # a shorter client timeout applies; a malformed one is a 400
    client2, _ = await make_client(with_options(request_timeout=60))
    r = await client2.get("/api/v1/configmaps?sleep=5&timeout=200ms")
    assert r.status == 504
    r = await client2.get("/api/v1/configmaps?timeout=soon")
    assert r.status == 400
    # Go's ParseDuration takes a negative duration; a non-positive one leaves the default
    r = await client2.get("/api/v1/configmaps?timeout=-1s")
    assert r.status == 200
    r = await client2.get("/api/v1/configmaps?timeout=--1s")
    assert r.status == 400


async def test_request_metrics(make_client):
    client, _ = await make_client()
    labels = {"verb": "LIST", "dry_run": "", "group": "apps", "version": "v1",
              "resource": "statefulsets", "subresource": "", "scope": "namespace",
              "component": "apiserver", "code": "200"}
    before = REGISTRY.get_sample_value("apiserver_request_total", labels) or 0
    r = await client.get("/apis/apps/v1/namespaces/a/statefulsets")
    assert r.status == 200
    assert REGISTRY.get_sample_value("apiserver_request_total", labels) == before + 1
    # unknown resources do not create series with their names
    await client.get("/apis/apps/v1/namespaces/a/zzzunknown")
    text = await (await client.get("/metrics")).text()
    assert "zzzunknown" not in text
    assert "apiserver_request_duration_seconds_bucket" in text


async def test_one_log_line_per_request_without_token(make_client, tmp_path):
    from structlog.testing import capture_logs

    client, _ = await make_client(with_options(token_auth_file=token_file(tmp_path)))
    with capture_logs() as logs:
        await client.get("/api/v1/namespaces/n/configmaps/c", headers=bearer("tok-alice"))
        await client.get("/api/v1/configmaps", headers=bearer("tok-wrong-secret"))
    lines = [e for e in logs if e["event"] == "request"]
    assert len(lines) == 2
    first = lines[0]
    assert (first["verb"], first["resource"], first["namespace"], first["name"],
            first["user"], first["code"]) == ("get", "configmaps", "n", "c", "alice", 200)
    assert "latency_ms" in first
    assert lines[1]["code"] == 401
    assert "tok-" not in repr(logs)


async def test_filter_errors_are_negotiated(make_client):
    """Upstream writes a filter's error (401, 403, 429, 504) with ErrorNegotiated: the Status
    in the serializer the client accepts, pretty for curl. They were compact JSON always."""
    client, _ = await make_client(anonymous=True)
    r = await client.get("/api/v1/namespaces", headers={"Accept": "application/yaml"})
    assert r.status == 401 and r.content_type == "application/yaml"
    assert "reason: Unauthorized" in await r.text()
    r = await client.get("/api/v1/namespaces", headers={"User-Agent": "curl/8.5.0"})
    assert r.status == 401 and r.content_type == "application/json"
    assert (await r.text()).startswith('{\n  "kind": "Status"')
    r = await client.get("/api/v1/namespaces")
    assert (await r.json())["reason"] == "Unauthorized"


async def test_every_response_has_an_audit_id_and_cache_control(make_client):
    """Upstream's outermost filters (WithAuditInit, WithCacheControl) put ``Audit-Id`` and
    ``Cache-Control: no-cache, private`` on every response: served, refused (401), unknown
    (404) and non-resource paths alike. A client's own Audit-ID is echoed as sent and is the
    one in the request log line."""
    import re
    import uuid

    from structlog.testing import capture_logs

    client, _ = await make_client()
    anonymous, _ = await make_client(anonymous=True)
    seen = set()
    for c, path, code in ((client, "/api/v1/namespaces/ns1/configmaps/x", 200),
                          (client, "/version", 200), (client, "/healthz", 200),
                          (client, "/nonexistent/path", 404),
                          (anonymous, "/api/v1/namespaces", 401)):
        r = await c.get(path)
        assert r.status == code, path
        assert r.headers["Cache-Control"] == "no-cache, private", path
        audit_id = r.headers["Audit-Id"]
        assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
                            audit_id), audit_id
        assert uuid.UUID(audit_id).version == 4
        seen.add(audit_id)
    assert len(seen) == 5
    with capture_logs() as logs:
        r = await client.get("/api/v1/namespaces/ns1/configmaps/x",
                             headers={"Audit-ID": "my trace id, as sent"})
    assert r.headers["Audit-Id"] == "my trace id, as sent"
    assert [e["audit_id"] for e in logs if e["event"] == "request"] == ["my trace id, as sent"]
    # a handler's own Cache-Control stays (aggregated discovery is cacheable)
    r = await client.get("/apis", headers={
        "Accept": "application/json;g=apidiscovery.plat.io;v=v2;as=APIGroupDiscoveryList"})
    assert r.status == 200
    assert r.headers["Cache-Control"] == "public"
    assert "Audit-Id" in r.headers

"""Outermost stage: every failure becomes an API ``Status`` response, and every request is
logged and counted once, with its final code.

- ``APIError`` -> its Status JSON and headers.
- aiohttp's own errors for paths nobody serves -> upstream's 404 / 405 Status bodies, and a
  body over ``client_max_size`` -> 413.
- Anything else -> 500 with a generic message; the traceback goes to the log only.

It is also where the request log line and ``apiserver_request_total`` /
``apiserver_request_duration_seconds`` are written: it is the only stage that sees the final
response of every request, including those that inner stages rejected.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Set
from typing import TYPE_CHECKING, Any, Final

import orjson
import structlog
from aiohttp import web

from apiserver import logs
from apiserver.filters.responseheaders import audit_id_of, stamp
from apiserver.metrics import REQUEST_DURATION, REQUEST_TOTAL
from apiserver.request import AUDIT_ID, REQUEST_INFO, USER, RequestInfo
from apiserver.status import REASONS, APIError

if TYPE_CHECKING:
    from aiohttp.typedefs import Handler, Middleware

log = structlog.get_logger("apiserver.httplog")
request_log = structlog.get_logger(logs.REQUEST_LOGGER)  # its lines are held a moment

NOT_FOUND_MESSAGE: Final = "the server could not find the requested resource"
METHOD_NOT_ALLOWED_MESSAGE: Final = ("the server does not allow this method on the requested "
                                     "resource")
INTERNAL_MESSAGE: Final = ("an error on the server prevented the request from succeeding; "
                           "see the server log")
APPLY_PATCH: Final = "application/apply-patch+yaml"
_METRIC_VERBS: Final = {
    "get": "GET", "list": "LIST", "watch": "WATCH", "create": "POST", "update": "PUT",
    "patch": "PATCH", "delete": "DELETE", "deletecollection": "DELETE",
}
_HTTP_METHODS: Final = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS",
                                  "CONNECT"})


def status_response(code: int, reason: str, message: str, *,
                    details: dict[str, Any] | None = None,
                    headers: dict[str, str] | None = None) -> web.Response:
    body: dict[str, Any] = {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason,
    }
    if details is not None:
        body["details"] = details
    body["code"] = code
    return web.Response(status=code, body=orjson.dumps(body), headers=headers,
                        content_type="application/json")


def error_response(err: APIError, request: web.Request | None = None) -> web.Response:
    """An error raised by a filter (401, 403, 429, 504, ...) as a Status negotiated as
    upstream's ErrorNegotiated does: the Accept header's serializer (JSON, YAML, Protobuf),
    pretty-printed for a browser or curl; JSON when nothing acceptable is asked for."""
    if request is not None:
        from apiserver.endpoints.installer import error_output
        from apiserver.endpoints.response import write_error

        return write_error(request, err, output=error_output(request))
    return web.Response(status=err.code, body=orjson.dumps(err.body()),
                        headers=err.headers or None, content_type="application/json")


def _from_http_exception(exc: web.HTTPException) -> web.StreamResponse:
    code = exc.status
    if isinstance(exc, web.HTTPNotFound):
        # upstream's NotFound handler answers with empty details
        return status_response(404, "NotFound", NOT_FOUND_MESSAGE, details={})
    if isinstance(exc, web.HTTPMethodNotAllowed):
        return status_response(405, "MethodNotAllowed", METHOD_NOT_ALLOWED_MESSAGE,
                               details={}, headers={"Allow": ",".join(sorted(exc.allowed_methods))})
    if isinstance(exc, web.HTTPRequestEntityTooLarge):
        return status_response(413, "RequestEntityTooLarge",
                               "Request entity too large: limit is 3145728")
    reason = REASONS.get(code, "InternalError" if code >= 500 else "BadRequest")
    return status_response(code, reason, exc.reason or reason)


def metric_labels(request: web.Request, info: RequestInfo | None,
                  known: Set[tuple[str, str, str]]) -> tuple[str, ...]:
    """Upstream's cleaned labels (verb, dry_run, group, version, resource, subresource,
    scope, component). Resource labels only for served resources, so random paths cannot
    grow the series count."""
    method = request.method.upper()
    if info is None or not info.is_resource_request or \
            (info.api_group, info.api_version, info.resource) not in known:
        verb = method if method in _HTTP_METHODS else "other"
        return (verb, "", "", "", "", "", "", "apiserver")
    verb = _METRIC_VERBS.get(info.verb, method if method in _HTTP_METHODS else "other")
    if verb == "PATCH" and request.headers.get("Content-Type", "").startswith(APPLY_PATCH):
        verb = "APPLY"
    dry = request.query.getall("dryRun", [])
    dry_run = ",".join(sorted(dry)) if all(d == "All" for d in dry) else "invalid"
    if info.name or info.verb == "create":
        scope = "resource"
    elif info.namespace:
        scope = "namespace"
    else:
        scope = "cluster"
    return (verb, dry_run, info.api_group, info.api_version, info.resource, info.subresource,
            scope, "apiserver")


class _RequestMetrics:
    """Children of the request metrics by label values: ``labels()`` costs a lock and a
    hash of every label per call, this a single dict lookup."""

    def __init__(self) -> None:
        self._durations: dict[tuple[str, ...], Any] = {}
        self._totals: dict[tuple[tuple[str, ...], int], Any] = {}

    def observe(self, labels: tuple[str, ...], code: int, seconds: float) -> None:
        total = self._totals.get((labels, code))
        if total is None:
            total = self._totals[(labels, code)] = REQUEST_TOTAL.labels(*labels, str(code))
        duration = self._durations.get(labels)
        if duration is None:
            duration = self._durations[labels] = REQUEST_DURATION.labels(*labels)
        total.inc()
        duration.observe(seconds)


def recovery(known: Set[tuple[str, str, str]]) -> Middleware:
    metrics = _RequestMetrics()

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        start = time.perf_counter()
        resp: web.StreamResponse | None = None
        request[AUDIT_ID] = audit_id = audit_id_of(request)
        try:
            resp = await handler(request)
        except APIError as err:
            resp = error_response(err, request)
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            resp = _from_http_exception(exc)
        except asyncio.CancelledError:
            raise  # the client went away or the server is stopping; nothing to answer
        except Exception:
            log.exception("request failed", method=request.method, path=request.path)
            resp = status_response(500, "InternalError",
                                   f"Internal error occurred: {INTERNAL_MESSAGE}")
        finally:
            elapsed = time.perf_counter() - start
            info = request.get(REQUEST_INFO)
            code = resp.status if resp is not None else 499
            metrics.observe(metric_labels(request, info, known), code, elapsed)
            if logs.request_log_enabled():
                user = request.get(USER)
                if info is None:
                    info = RequestInfo(is_resource_request=False, path=request.path,
                                       verb=request.method.lower())
                request_log.info("request", verb=info.verb, path=request.path,
                         resource=info.resource, subresource=info.subresource,
                         namespace=info.namespace, name=info.name,
                         user=user.name if user else "", code=code,
                         latency_ms=round(elapsed * 1000, 3), audit_id=audit_id)
        if resp is not None and not resp.prepared:  # a stream (a watch) stamped its own
            stamp(request, resp)
        return resp

    return middleware

"""API errors as upstream ``Status`` objects (``k8s.io/apimachinery/pkg/api/errors``).

Every error the API returns is an ``APIError`` rendered by ``APIError.body()``; handlers raise
it, the outermost filter renders it (and turns any other exception into a 500 without
leaking internals). Storage errors are translated here, in one table: ``from_storage_error``.
Messages follow upstream's wording because clients (kubectl) print and sometimes parse them.
"""

from __future__ import annotations

from typing import Any, Final

from storage.errors import Code, StorageError

# HTTP code -> upstream StatusReason for the generic errors
REASONS: Final = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def qualified_resource(resource: str, group: str) -> str:
    """``configmaps`` or ``statefulsets.apps`` (upstream GroupResource.String())."""
    return f"{resource}.{group}" if group else resource


class APIError(Exception):
    """An API error with its Status fields. ``details`` holds name/group/kind/causes/
    retryAfterSeconds as upstream's StatusDetails (omitted when empty)."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        list_continue: str = "",
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details or {}
        self.headers = headers or {}
        self.list_continue = list_continue

    def body(self) -> dict[str, Any]:
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.list_continue:
            status["metadata"]["continue"] = self.list_continue
        if self.details:
            status["details"] = self.details
        status["code"] = self.code
        return status


class GenericServerError(APIError):
    """An error whose Status carries ``details`` even when empty (``"details": {}``), as
    upstream's errors built with a StatusDetails do: NewGenericServerResponse (the 404 for
    unknown paths, the 405 for unrouted methods, the 422 of a failed JSON patch), the 403
    for a non-resource path and the 504 of a request timeout."""

    def body(self) -> dict[str, Any]:
        status = super().body()
        code = status.pop("code")
        status.setdefault("details", {})
        status["code"] = code
        return status


def _details(name: str, resource: str, group: str, **extra: Any) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if name:
        d["name"] = name
    if group:
        d["group"] = group
    if resource:
        d["kind"] = resource
    d.update({k: v for k, v in extra.items() if v})
    return d


def not_found(resource: str, group: str, name: str) -> APIError:
    qr = qualified_resource(resource, group)
    return APIError(404, "NotFound", f'{qr} "{name}" not found',
                    details=_details(name, resource, group))


def already_exists(resource: str, group: str, name: str) -> APIError:
    qr = qualified_resource(resource, group)
    return APIError(409, "AlreadyExists", f'{qr} "{name}" already exists',
                    details=_details(name, resource, group))


def conflict(resource: str, group: str, name: str, why: str) -> APIError:
    qr = qualified_resource(resource, group)
    return APIError(409, "Conflict", f'Operation cannot be fulfilled on {qr} "{name}": {why}',
                    details=_details(name, resource, group))


def invalid(kind: str, group: str, name: str, causes: list[dict[str, str]]) -> APIError:
    """422 with field causes; each cause is {reason, message, field} as upstream
    (``reason`` e.g. FieldValueRequired / FieldValueInvalid / FieldValueNotSupported)."""
    msgs = [f"{c['field']}: {c['message']}" if c.get("field") else c["message"] for c in causes]
    gk = f"{kind}.{group}" if group else kind
    if len(msgs) == 1:
        summary = msgs[0]
    else:
        summary = "[" + ", ".join(msgs) + "]"
    return APIError(422, "Invalid", f'{gk} "{name}" is invalid: {summary}',
                    details=_details(name, kind, group, causes=causes))


def bad_request(message: str) -> APIError:
    return APIError(400, "BadRequest", message)


def gone(message: str, *, list_continue: str = "") -> APIError:
    return APIError(410, "Expired", message, list_continue=list_continue)


def method_not_supported(resource: str, group: str, action: str) -> APIError:
    qr = qualified_resource(resource, group)
    return APIError(405, "MethodNotAllowed", f"{action} is not supported on resources of kind"
                    f' "{qr}"', details=_details("", resource, group))


def not_acceptable(accepted: list[str]) -> APIError:
    return APIError(406, "NotAcceptable", "only the following media types are accepted: "
                    + ", ".join(accepted))


def unsupported_media_type(content_type: str) -> APIError:
    return APIError(415, "UnsupportedMediaType",
                    f'the body of the request was in an unknown format - accepted media types '
                    f'include: application/json, application/yaml, '
                    f'application/vnd.platform.protobuf (got "{content_type}")')


def too_large(message: str = "the server has received too large of a request") -> APIError:
    return APIError(413, "RequestEntityTooLarge", f"Request entity too large: {message}")


def too_many_requests(retry_after: int = 1) -> APIError:
    return APIError(429, "TooManyRequests", "Too many requests, please try again later.",
                    details={"retryAfterSeconds": retry_after},
                    headers={"Retry-After": str(retry_after)})


def unauthorized() -> APIError:
    return APIError(401, "Unauthorized", "Unauthorized")


def forbidden(user: str, verb: str, resource: str, group: str, name: str, namespace: str,
              why: str = "") -> APIError:
    """Upstream's wording, e.g. ``configmaps "x" is forbidden: User "bob" cannot get resource
    "configmaps" in API group "" in the namespace "ns"``."""
    qr = qualified_resource(resource, group)
    subject = f'{qr} "{name}"' if name else qr
    scope = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
    msg = (f'{subject} is forbidden: User "{user}" cannot {verb} resource "{resource}" in API '
           f'group "{group}"{scope}')
    if why:
        msg += f": {why}"
    return APIError(403, "Forbidden", msg, details=_details(name, resource, group))


def timeout(message: str, retry_after: int = 1) -> APIError:
    return APIError(504, "Timeout", message, details={"retryAfterSeconds": retry_after},
                    headers={"Retry-After": str(retry_after)})


def service_unavailable(message: str) -> APIError:
    return APIError(503, "ServiceUnavailable", message)


def internal(message: str) -> APIError:
    return APIError(500, "InternalError",
                    f"Internal error occurred: {message}",
                    details={"causes": [{"message": message}]})


def from_storage_error(err: StorageError, *, resource: str, group: str, name: str = "",
                       kind: str = "") -> APIError:
    """The one table from StorageError codes to API errors (upstream
    ``storage.InterpretGetError`` / ``InterpretUpdateError`` and friends)."""
    c = err.code
    if c is Code.KEY_NOT_FOUND:
        return not_found(resource, group, name)
    if c is Code.KEY_EXISTS:
        return already_exists(resource, group, name)
    if c is Code.CONFLICT or c is Code.INVALID_OBJ:
        return conflict(resource, group, name, err.message)
    if c is Code.RESOURCE_EXPIRED:
        return gone(err.message, list_continue=err.continue_token)
    if c is Code.TOO_LARGE_RESOURCE_VERSION:
        # upstream NewTooLargeResourceVersionError: NewTimeoutError's "Timeout: " prefix and
        # the cause client-go's IsTooLargeResourceVersion looks for
        too_large = timeout(f"Timeout: {err.message}", err.retry_after_seconds or 1)
        too_large.details["causes"] = [{"reason": "ResourceVersionTooLarge",
                                        "message": "Too large resource version"}]
        return too_large
    if c is Code.UNREACHABLE:
        return service_unavailable(err.message)
    if c is Code.INVALID:
        return bad_request(err.message)
    return internal(err.message)

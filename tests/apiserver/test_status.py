"""Status bodies made from storage errors."""

from __future__ import annotations

from apiserver.status import from_storage_error
from storage.cacher.freshness import too_large


def test_too_large_resource_version_is_upstreams_timeout_with_its_cause() -> None:
    """NewTooLargeResourceVersionError: client-go's IsTooLargeResourceVersion looks for the
    ResourceVersionTooLarge cause (the message only as a fallback)."""
    err = from_storage_error(too_large(999, 20), resource="configmaps", group="")
    assert err.code == 504 and err.headers == {"Retry-After": "1"}
    assert err.body() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "Timeout: Too large resource version: 999, current: 20",
        "reason": "Timeout",
        "details": {"retryAfterSeconds": 1, "causes": [
            {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]},
        "code": 504}

"""``StorageError``: the one exception every storage implementation raises.

The registry translates it to an API ``Status`` through one table
(``apiserver.status.from_storage_error``); nothing above the storage layer looks at etcd or
gRPC errors.
"""

from __future__ import annotations

import enum


class Code(enum.Enum):
    KEY_NOT_FOUND = "KeyNotFound"  # -> 404 NotFound
    KEY_EXISTS = "KeyExists"  # -> 409 AlreadyExists
    CONFLICT = "ResourceVersionConflicts"  # precondition / CAS lost -> 409 Conflict
    INVALID_OBJ = "InvalidObject"  # undecodable stored bytes, failed preconditions on uid -> 409
    RESOURCE_EXPIRED = "ResourceExpired"  # compacted revision / expired continue -> 410 Gone
    TOO_LARGE_RESOURCE_VERSION = "TooLargeResourceVersion"  # -> 504 with Retry-After: 1
    UNREACHABLE = "Unreachable"  # the store did not answer -> 503 / 504
    INVALID = "Invalid"  # bad request to the storage layer (bad continue token) -> 400
    INTERNAL = "Internal"  # -> 500 (a bug, never bad input)


class StorageError(Exception):
    """A storage failure with a code, the key it concerns and, where it matters, the
    resource version involved. ``message`` is the upstream wording where clients parse it
    (e.g. ``too old resource version: 5 (20)``; ``Too large resource version: 30, current: 20``).
    """

    def __init__(
        self,
        code: Code,
        message: str,
        *,
        key: str = "",
        resource_version: int = 0,
        retry_after_seconds: int = 0,
        continue_token: str = "",
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.key = key
        self.resource_version = resource_version
        self.retry_after_seconds = retry_after_seconds
        # For RESOURCE_EXPIRED on an expired continue token: the "inconsistent continue"
        # token upstream returns in the 410 Status's metadata.continue (may be empty).
        self.continue_token = continue_token

    def __repr__(self) -> str:
        return f"StorageError({self.code.name}, {self.message!r}, key={self.key!r})"

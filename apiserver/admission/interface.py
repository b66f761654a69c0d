"""The admission boundary (upstream ``k8s.io/apiserver/pkg/admission``): attributes of a write
and the two plug-in kinds. Mutating plug-ins run first and may change ``attrs.object`` in
place; validating plug-ins run after the strategy's validation and may only refuse. Both
refuse by raising ``apiserver.status.APIError``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

if TYPE_CHECKING:
    from apiserver.request import UserInfo
    from apiserver.resources import ResourceInfo

Object = dict[str, Any]

CREATE: Final = "CREATE"
UPDATE: Final = "UPDATE"
DELETE: Final = "DELETE"
CONNECT: Final = "CONNECT"


@dataclass(frozen=True, slots=True, kw_only=True)
class Attributes:
    operation: str  # CREATE / UPDATE / DELETE / CONNECT
    object: Object | None  # the new object (None for DELETE)
    old_object: Object | None  # the stored object (UPDATE, DELETE)
    resource: ResourceInfo  # includes the sub-resource
    namespace: str
    name: str  # "" on a create with generateName
    user: UserInfo
    dry_run: bool = False


class MutatingPlugin(Protocol):
    async def admit(self, attrs: Attributes) -> None:
        """May change ``attrs.object`` in place; raise APIError to refuse."""


class ValidatingPlugin(Protocol):
    async def validate(self, attrs: Attributes) -> None:
        """Raise APIError to refuse; never changes the object."""


class Chain:
    """Mutating plug-ins in order, then validating plug-ins in order."""

    def __init__(self, mutating: list[MutatingPlugin] | None = None,
                 validating: list[ValidatingPlugin] | None = None) -> None:
        self.mutating = list(mutating or [])
        self.validating = list(validating or [])

    async def admit(self, attrs: Attributes) -> None:
        for p in self.mutating:
            await p.admit(attrs)

    async def validate(self, attrs: Attributes) -> None:
        for p in self.validating:
            await p.validate(attrs)


EMPTY_CHAIN: Final = Chain()

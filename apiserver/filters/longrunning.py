"""Which requests are long-running (upstream ``BasicLongRunningRequestCheck`` as kube-apiserver
configures it): the watch and proxy verbs, and the streaming sub-resources. They are exempt
from the request timeout and the in-flight limits, and shutdown ends them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from apiserver.request import RequestInfo

STREAMING_SUBRESOURCES: Final = frozenset({"attach", "exec", "proxy", "log", "portforward"})


def is_long_running(info: RequestInfo) -> bool:
    return info.is_long_running or (info.is_resource_request
                                    and info.subresource in STREAMING_SUBRESOURCES)

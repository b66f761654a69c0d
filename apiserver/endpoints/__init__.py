"""HTTP handlers for resource requests: ``install(app, stores)`` routes ``/api/v1/...`` and
``/apis/<group>/<version>/...`` to one ``RESTStore`` per (group, version, resource[/sub]).

One module per verb (get, list, watch, create, update, patch, delete, deletecollection),
plus negotiation (Accept / Content-Type), serializers (JSON, YAML, gzip), params (query
parameters and delete options), fieldvalidation, body (request bodies) and response
(Table / PartialObjectMetadata transformation and writing). Handlers render their own
errors as Status objects; ``error_middleware`` covers anything else in test apps.
"""

from __future__ import annotations

from apiserver.endpoints.installer import ResourceHandler, error_middleware, install

__all__ = ["ResourceHandler", "error_middleware", "install"]

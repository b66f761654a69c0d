"""OpenAPI v3 documents (``/openapi/v3`` and ``/openapi/v3/<api|apis/group>/<version>``).

What this serves now: for every group-version, its paths and operations with
``x-kubernetes-action`` and ``x-kubernetes-group-version-kind`` and the query parameters each
verb accepts, and one component schema per kind named as upstream (``io.plat.api.core.v1.
ConfigMap``) carrying only its group-version-kind. That is what stock kubectl reads to decide
that the server does field validation itself (it then sends ``fieldValidation=Strict`` and
skips client-side schema validation: kubectl's ``queryParamVerifierV3``). Full schemas of every
kind arrive with the built-in types (kubernetes-validate's v1.33 schemas).

The index lists each document with a ``hash`` query so clients may cache it; the hash is a
digest of the document, so it changes exactly when the document does.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable
from typing import Any, Final

import orjson
from aiohttp import web

from apiserver.resources import ResourceInfo

_COMMON: Final = {
    "pretty": "If 'true', then the output is pretty printed.",
    "dryRun": "When present, indicates that modifications should not be persisted. Valid "
              "values are: - All: all dry run stages will be processed",
    "fieldManager": "fieldManager is a name associated with the actor or entity that is "
                    "making these changes.",
    "fieldValidation": "fieldValidation instructs the server on how to handle objects in "
                       "the request containing unknown or duplicate fields. Valid values "
                       "are: Ignore, Warn (default), Strict.",
    "force": "Force is going to \"force\" Apply requests.",
    "resourceVersion": "resourceVersion sets a constraint on what resource versions a "
                       "request may be served from.",
    "resourceVersionMatch": "resourceVersionMatch determines how resourceVersion is applied "
                            "to list calls.",
    "labelSelector": "A selector to restrict the list of returned objects by their labels.",
    "fieldSelector": "A selector to restrict the list of returned objects by their fields.",
    "limit": "limit is a maximum number of responses to return for a list call.",
    "continue": "The continue option should be set when retrieving more results from the "
                "server.",
    "watch": "Watch for changes to the described resources and return them as a stream of "
             "add, update, and remove notifications.",
    "allowWatchBookmarks": "allowWatchBookmarks requests watch events with type "
                           "\"BOOKMARK\".",
    "sendInitialEvents": "`sendInitialEvents=true` may be set together with `watch=true`.",
    "timeoutSeconds": "Timeout for the list/watch call.",
    "gracePeriodSeconds": "The duration in seconds before the object should be deleted.",
    "propagationPolicy": "Whether and how garbage collection will be performed.",
    "orphanDependents": "Deprecated: please use the PropagationPolicy.",
    "ignoreStoreReadErrorWithClusterBreakingPotential": "if set to true, it will trigger an "
        "unsafe deletion of the resource in case the normal deletion flow fails with a "
        "corrupt object error.",
}
_TYPES: Final = {"limit": "integer", "timeoutSeconds": "integer",
                 "gracePeriodSeconds": "integer", "watch": "boolean",
                 "allowWatchBookmarks": "boolean", "sendInitialEvents": "boolean",
                 "force": "boolean", "orphanDependents": "boolean",
                 "ignoreStoreReadErrorWithClusterBreakingPotential": "boolean"}

_WRITE: Final = ("pretty", "dryRun", "fieldManager", "fieldValidation")
_LIST: Final = ("pretty", "allowWatchBookmarks", "continue", "fieldSelector", "labelSelector",
                "limit", "resourceVersion", "resourceVersionMatch", "sendInitialEvents",
                "timeoutSeconds", "watch")
_DELETE: Final = ("pretty", "dryRun", "gracePeriodSeconds",
                  "ignoreStoreReadErrorWithClusterBreakingPotential", "orphanDependents",
                  "propagationPolicy")


def _param(name: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "description": _COMMON[name], "schema": {
        "type": _TYPES.get(name, "string"), "uniqueItems": True}}


def schema_name(group: str, version: str, kind: str) -> str:
    """Upstream's definition name with the product renamed (``io.plat.api.apps.v1.
    StatefulSet``); groups of the form ``x.plat.io`` use their first label."""
    short = group.split(".")[0] if group else "core"
    return f"io.plat.api.{short}.{version}.{kind}"


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _gvk(info: ResourceInfo, kind: str | None = None) -> dict[str, str]:
    return {"group": info.group, "version": info.version, "kind": kind or info.kind}


def _body(name: str) -> dict[str, Any]:
    return {"content": {t: {"schema": _ref(name)} for t in ("application/json",
                                                             "application/yaml")}}


def _responses(name: str, *codes: str) -> dict[str, Any]:
    return {code: {"description": "OK" if code == "200" else "Created" if code == "201"
                   else "Accepted", **_body(name)} for code in codes}


def _operation(info: ResourceInfo, action: str, verb_id: str, params: Iterable[str],
               schema: str, codes: tuple[str, ...] = ("200",), body: str | None = None,
               kind: str | None = None) -> dict[str, Any]:
    op: dict[str, Any] = {
        "description": f"{action} {info.kind}",
        "operationId": verb_id,
        "parameters": [_param(p) for p in params],
        "responses": _responses(schema, *codes),
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _gvk(info, kind),
    }
    if body is not None:
        op["requestBody"] = _body(body)
    return op


def _base(info: ResourceInfo) -> str:
    return f"/api/{info.version}" if not info.group else f"/apis/{info.group}/{info.version}"


def group_version_document(resources: list[ResourceInfo]) -> dict[str, Any]:
    """The OpenAPI v3 document of one group-version."""
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    by_name = {r.resource: r for r in resources if not r.subresource}
    for info in resources:
        main = by_name.get(info.resource, info)
        kind = info.sub_kind or main.kind
        kgroup = info.sub_kind_group if info.sub_kind else info.group
        kversion = info.sub_kind_version if info.sub_kind else info.version
        schema = schema_name(kgroup, kversion, kind)
        schemas.setdefault(schema, {
            "type": "object", "description": f"{kind} (schema arrives with the types)",
            "x-kubernetes-group-version-kind": [{"group": kgroup, "version": kversion,
                                                 "kind": kind}],
        })
        verbs = set(info.verbs)
        scope = f"{_base(info)}/namespaces/{{namespace}}" if main.namespaced else _base(info)
        item = f"{scope}/{info.resource}/{{name}}"
        if info.subresource:
            item += f"/{info.subresource}"
        ops: dict[str, Any] = {}
        suffix = f"{info.kind}{info.subresource.capitalize()}"
        gvk_kind = kind
        if "get" in verbs:
            ops["get"] = _operation(info, "get", f"read{suffix}", ("pretty",), schema,
                                    kind=gvk_kind)
        if "update" in verbs:
            ops["put"] = _operation(info, "put", f"replace{suffix}", _WRITE, schema,
                                    ("200", "201"), body=schema, kind=gvk_kind)
        if "patch" in verbs:
            ops["patch"] = _operation(info, "patch", f"patch{suffix}", (*_WRITE, "force"),
                                      schema, ("200", "201"), body=schema, kind=gvk_kind)
        if "delete" in verbs:
            ops["delete"] = _operation(info, "delete", f"delete{suffix}", _DELETE, schema,
                                       ("200", "202"), kind=gvk_kind)
        if ops:
            paths[item] = ops
        if info.subresource:
            continue
        list_schema = schema_name(info.group, info.version, f"{info.kind}List")
        schemas.setdefault(list_schema, {"type": "object", "description": f"{info.kind}List"})
        coll: dict[str, Any] = {}
        if "list" in verbs:
            coll["get"] = _operation(info, "list", f"list{info.kind}", _LIST, list_schema)
        if "create" in verbs:
            coll["post"] = _operation(info, "post", f"create{info.kind}", _WRITE, schema,
                                      ("200", "201", "202"), body=schema)
        if "deletecollection" in verbs:
            coll["delete"] = _operation(info, "deletecollection",
                                        f"deleteCollection{info.kind}",
                                        (*_DELETE, *_LIST), schema)
        if coll:
            paths[f"{scope}/{info.resource}"] = coll
        if main.namespaced and "list" in verbs:
            paths[f"{_base(info)}/{info.resource}"] = {"get": _operation(
                info, "list", f"list{info.kind}ForAllNamespaces", _LIST, list_schema)}
    return {"openapi": "3.0.0",
            "info": {"title": "Platform", "version": "v1.33.0"},
            "paths": dict(sorted(paths.items())),
            "components": {"schemas": dict(sorted(schemas.items()))}}


class OpenAPIV3:
    """The index and the per-group-version documents, rendered once (the catalog is
    static)."""

    def __init__(self, resources: list[ResourceInfo]) -> None:
        groups: dict[tuple[str, str], list[ResourceInfo]] = defaultdict(list)
        for r in resources:
            groups[(r.group, r.version)].append(r)
        self.documents: dict[str, bytes] = {}
        self.hashes: dict[str, str] = {}
        for (group, version), infos in groups.items():
            key = f"api/{version}" if not group else f"apis/{group}/{version}"
            doc = orjson.dumps(group_version_document(infos))
            self.documents[key] = doc
            self.hashes[key] = hashlib.sha512(doc).hexdigest()[:128].upper()
        index = {"paths": {key: {"serverRelativeURL": f"/openapi/v3/{key}?hash={h}"}
                           for key, h in sorted(self.hashes.items())}}
        self.index = orjson.dumps(index)

    async def handle_index(self, request: web.Request) -> web.Response:
        return web.Response(body=self.index, content_type="application/json")

    async def handle_document(self, request: web.Request) -> web.Response:
        key = request.match_info["path"].strip("/")
        doc = self.documents.get(key)
        if doc is None:
            from apiserver.status import APIError

            raise APIError(404, "NotFound", "the server could not find the requested resource")
        headers = {}
        if request.query.get("hash") == self.hashes[key]:
            headers["Cache-Control"] = "public, immutable"
        headers["Etag"] = f'"{self.hashes[key]}"'
        return web.Response(body=doc, content_type="application/json", headers=headers)


def install_openapi(app: web.Application, resources: list[ResourceInfo]) -> OpenAPIV3:
    api = OpenAPIV3(resources)
    app.router.add_get("/openapi/v3", api.handle_index)
    app.router.add_get("/openapi/v3/", api.handle_index)
    app.router.add_get("/openapi/v3/{path:.+}", api.handle_document)
    return api

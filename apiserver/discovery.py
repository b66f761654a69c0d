"""Discovery (upstream ``endpoints/discovery``), read from the resource catalog.

Legacy forms: ``/api`` (APIVersions), ``/api/v1`` and ``/apis/<group>/<version>``
(APIResourceList; sub-resources listed as ``statefulsets/status``), ``/apis`` (APIGroupList)
and ``/apis/<group>`` (APIGroup). Aggregated form (``apidiscovery.plat.io/v2``
APIGroupDiscoveryList) at ``/api`` (the core group) and ``/apis`` (named groups) when the
Accept header asks for ``application/json;g=apidiscovery.plat.io;v=v2;as=APIGroupDiscoveryList``
ahead of plain JSON. Every body is rendered once, when the app is built: the catalog does
not change while the server runs.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import orjson
import yaml
from aiohttp import web

from apiserver.status import not_acceptable

if TYPE_CHECKING:
    from apiserver.resources import ResourceInfo

AGGREGATED_GROUP: Final = "apidiscovery.plat.io"
AGGREGATED_VERSION: Final = "v2"
AGGREGATED_KIND: Final = "APIGroupDiscoveryList"
AGGREGATED_TYPE: Final = (f"application/json;g={AGGREGATED_GROUP};v={AGGREGATED_VERSION};"
                          f"as={AGGREGATED_KIND}")
SERVED_TYPES: Final = ["application/json", "application/yaml", AGGREGATED_TYPE]
_VERSION_RE: Final = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key, best first: GA before beta before alpha, higher numbers first, then
    anything that does not look like a version, by name (upstream's version ordering)."""
    m = _VERSION_RE.match(version)
    if m is None:
        return (3, 0, 0, version)
    level = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    return (level, -int(m.group(1)), -int(m.group(3) or 0), version)


def _gv(group: str, version: str) -> dict[str, str]:
    return {"groupVersion": f"{group}/{version}" if group else version, "version": version}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Rendered:
    json: bytes
    obj: dict[str, Any]
    etag: str = ""  # quoted, as upstream's aggregated discovery sends it


def _render(obj: dict[str, Any], *, etag: bool = False) -> _Rendered:
    data = orjson.dumps(obj)
    return _Rendered(json=data, obj=obj,
                     etag='"' + hashlib.sha512(data).hexdigest().upper() + '"' if etag else "")


class Discovery:
    def __init__(self, resources: Sequence[ResourceInfo], *,
                 server_address: str = "") -> None:
        self._server_address = server_address
        # group -> versions, in catalog order of first appearance; versions best first
        groups: dict[str, list[str]] = {}
        by_gv: dict[tuple[str, str], list[ResourceInfo]] = {}
        for r in resources:
            vs = groups.setdefault(r.group, [])
            if r.version not in vs:
                vs.append(r.version)
            by_gv.setdefault((r.group, r.version), []).append(r)
        for vs in groups.values():
            vs.sort(key=version_priority)
        self._groups = groups
        self._by_gv = by_gv
        self._resource_lists = {gv: _render(self._resource_list(*gv, rs))
                                for gv, rs in by_gv.items()}
        named = [g for g in groups if g]
        self._group_objs = {g: self._group(g) for g in named}
        self._group_list = _render({"kind": "APIGroupList", "apiVersion": "v1",
                                    "groups": [self._group_objs[g] for g in named]})
        self._group_bodies = {g: _render({"kind": "APIGroup", "apiVersion": "v1",
                                          **self._group_objs[g]}) for g in named}
        self._aggregated_core = _render(self._aggregated([""] if "" in groups else []),
                                        etag=True)
        self._aggregated_named = _render(self._aggregated(named), etag=True)

    # ---- bodies -------------------------------------------------------------------------

    def _group(self, group: str) -> dict[str, Any]:
        versions = [_gv(group, v) for v in self._groups[group]]
        return {"name": group, "versions": versions, "preferredVersion": versions[0]}

    @staticmethod
    def _resource_list(group: str, version: str, rs: list[ResourceInfo]) -> dict[str, Any]:
        out: list[dict[str, Any]] = []
        for r in sorted(rs, key=lambda r: r.path_name):
            e: dict[str, Any] = {
                "name": r.path_name,
                "singularName": "" if r.subresource else (r.singular or r.kind.lower()),
                "namespaced": r.namespaced,
            }
            if r.subresource and r.sub_kind:
                # upstream names the group and version only when they differ from the
                # parent's (pods/eviction: policy/v1 Eviction; pods/binding: Binding)
                if (r.sub_kind_group, r.sub_kind_version) != (group, version):
                    e["group"] = r.sub_kind_group
                    e["version"] = r.sub_kind_version
                e["kind"] = r.sub_kind
            else:
                e["kind"] = r.kind
            e["verbs"] = list(r.verbs)
            if r.short_names and not r.subresource:
                e["shortNames"] = list(r.short_names)
            if r.categories and not r.subresource:
                e["categories"] = list(r.categories)
            if r.storage_version_hash and not r.subresource:
                e["storageVersionHash"] = r.storage_version_hash
            out.append(e)
        body: dict[str, Any] = {"kind": "APIResourceList"}
        if group:
            # upstream's core list has no apiVersion; named groups' lists do
            body["apiVersion"] = "v1"
        body["groupVersion"] = f"{group}/{version}" if group else version
        body["resources"] = out
        return body

    def _aggregated(self, groups: Iterable[str]) -> dict[str, Any]:
        items = []
        for g in groups:
            versions = []
            for v in self._groups[g]:
                rs = self._by_gv[(g, v)]
                subs: dict[str, list[dict[str, Any]]] = {}
                for r in rs:
                    if not r.subresource:
                        continue
                    # upstream's responseKind names a group and version only when they
                    # differ from the group version being listed (scale, eviction, token)
                    other = r.sub_kind and (r.sub_kind_group, r.sub_kind_version) != (g, v)
                    kind = {"group": r.sub_kind_group if other else "",
                            "version": r.sub_kind_version if other else "",
                            "kind": r.sub_kind or r.kind}
                    subs.setdefault(r.resource, []).append(
                        {"subresource": r.subresource, "responseKind": kind,
                         "verbs": list(r.verbs)})
                resources = []
                for r in sorted((r for r in rs if not r.subresource), key=lambda r: r.resource):
                    e: dict[str, Any] = {
                        "resource": r.resource,
                        "responseKind": {"group": "", "version": "", "kind": r.kind},
                        "scope": "Namespaced" if r.namespaced else "Cluster",
                        "singularResource": r.singular or r.kind.lower(),
                        "verbs": list(r.verbs),
                    }
                    if r.short_names:
                        e["shortNames"] = list(r.short_names)
                    if r.categories:
                        e["categories"] = list(r.categories)
                    if r.resource in subs:
                        e["subresources"] = sorted(subs[r.resource],
                                                   key=lambda s: str(s["subresource"]))
                    resources.append(e)
                versions.append({"version": v, "resources": resources,
                                 "freshness": "Current"})
            meta: dict[str, Any] = {"name": g} if g else {}
            meta["creationTimestamp"] = None
            items.append({"metadata": meta, "versions": versions})
        return {"kind": AGGREGATED_KIND, "apiVersion": f"{AGGREGATED_GROUP}/{AGGREGATED_VERSION}",
                "metadata": {}, "items": items}

    # ---- negotiation ----------------------------------------------------------------------

    @staticmethod
    def _negotiate(request: web.Request, *, aggregated_ok: bool) -> str:
        """"json", "yaml" or "aggregated": the first acceptable entry of Accept wins."""
        accept = request.headers.get("Accept", "")
        if not accept.strip():
            return "json"
        for raw in accept.split(","):
            parts = [p.strip() for p in raw.split(";")]
            mtype = parts[0].lower()
            params = {}
            for p in parts[1:]:
                k, _, val = p.partition("=")
                params[k.strip().lower()] = val.strip().strip('"')
            try:
                if float(params.get("q", "1")) <= 0:
                    continue
            except ValueError:
                continue
            if "as" in params or "g" in params or "v" in params:
                if (aggregated_ok and mtype == "application/json"
                        and params.get("g") == AGGREGATED_GROUP
                        and params.get("v") == AGGREGATED_VERSION
                        and params.get("as") == AGGREGATED_KIND):
                    return "aggregated"
                continue
            if mtype in ("application/json", "application/*", "*/*", "*"):
                return "json"
            if mtype == "application/yaml":
                return "yaml"
        raise not_acceptable(SERVED_TYPES if aggregated_ok else SERVED_TYPES[:2])

    @staticmethod
    def _respond(body: _Rendered, fmt: str, request: web.Request | None = None
                 ) -> web.Response:
        headers = {"Vary": "Accept"}
        if fmt == "aggregated":
            # upstream's ServeHTTPWithETag: clients (kubectl's HTTP cache) revalidate
            headers["ETag"] = body.etag
            headers["Cache-Control"] = "public"
            if request is not None and request.headers.get("If-None-Match") == body.etag:
                return web.Response(status=304, headers=headers)
        if fmt == "yaml":
            return web.Response(body=yaml.safe_dump(body.obj, sort_keys=False).encode(),
                                content_type="application/yaml", headers=headers)
        resp = web.Response(body=body.json, headers=headers)
        resp.headers["Content-Type"] = AGGREGATED_TYPE if fmt == "aggregated" \
            else "application/json"
        return resp

    # ---- handlers -------------------------------------------------------------------------

    def _server_addresses(self, request: web.Request) -> list[dict[str, str]]:
        address = self._server_address
        if not address:
            sock = request.transport.get_extra_info("sockname") if request.transport else None
            if isinstance(sock, tuple) and len(sock) >= 2:
                host = str(sock[0])
                address = f"[{host}]:{sock[1]}" if ":" in host else f"{host}:{sock[1]}"
            else:
                address = request.host
        return [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}]

    async def handle_api(self, request: web.Request) -> web.Response:
        fmt = self._negotiate(request, aggregated_ok=True)
        if fmt == "aggregated":
            return self._respond(self._aggregated_core, fmt, request)
        versions = self._groups.get("", [])
        body = _render({"kind": "APIVersions", "versions": versions,
                        "serverAddressByClientCIDRs": self._server_addresses(request)})
        return self._respond(body, fmt)

    async def handle_apis(self, request: web.Request) -> web.Response:
        fmt = self._negotiate(request, aggregated_ok=True)
        return self._respond(self._aggregated_named if fmt == "aggregated"
                             else self._group_list, fmt, request)

    async def handle_group(self, request: web.Request) -> web.Response:
        body = self._group_bodies.get(request.match_info["group"])
        if body is None:
            raise web.HTTPNotFound()
        return self._respond(body, self._negotiate(request, aggregated_ok=False))

    async def handle_core_version(self, request: web.Request) -> web.Response:
        return await self._version(request, "", request.match_info["version"])

    async def handle_group_version(self, request: web.Request) -> web.Response:
        return await self._version(request, request.match_info["group"],
                                   request.match_info["version"])

    async def _version(self, request: web.Request, group: str, version: str) -> web.Response:
        body = self._resource_lists.get((group, version))
        if body is None:
            raise web.HTTPNotFound()
        return self._respond(body, self._negotiate(request, aggregated_ok=False))

    def install(self, app: web.Application) -> None:
        r = app.router
        r.add_get("/api", self.handle_api)
        r.add_get("/api/", self.handle_api)
        r.add_get("/apis", self.handle_apis)
        r.add_get("/apis/", self.handle_apis)
        # with and without a trailing slash, as go-restful serves them (the Python client
        # asks for /api/v1/ and /apis/<group>/)
        for path, handler in (("/api/{version}", self.handle_core_version),
                              ("/apis/{group}", self.handle_group),
                              ("/apis/{group}/{version}", self.handle_group_version)):
            r.add_get(path, handler)
            r.add_get(path + "/", handler)

    def paths(self) -> list[str]:
        """The discovery paths the index at / lists."""
        out = ["/api", "/apis", "/apis/"]
        for group, version in self._resource_lists:
            if group:
                out += [f"/apis/{group}", f"/apis/{group}/{version}"]
            else:
                out.append(f"/api/{version}")
        return out

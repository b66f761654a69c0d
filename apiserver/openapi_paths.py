"""The paths and operations of the served resources, as upstream's OpenAPI builder names and
parameterizes them, rendered for OpenAPI v2 (``parameters`` with ``in: body``, ``consumes``,
``produces``) and v3 (``requestBody``, ``content`` per media type).

For each resource: the collection path (list, create, deletecollection), the item path (read,
replace, patch, delete), one item path per sub-resource, and for namespaced kinds the
all-namespaces list. Operation ids follow upstream (``listCoreV1NamespacedConfigMap``,
``deleteAppsV1CollectionNamespacedStatefulSet``, ``readAppsV1NamespacedStatefulSetScale``,
``listRbacAuthorizationV1RoleBindingForAllNamespaces``). Every write carries
``fieldValidation``: kubectl reads that on PATCH to decide that the server validates fields
itself (it then sends ``fieldValidation=Strict`` instead of validating client-side). PATCH
lists the patch types the handler takes; once that includes
``application/strategic-merge-patch+json`` kubectl's client-side apply computes its strategic
merge patch from these schemas (merge keys and strategies) instead of its built-in types.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from apiserver.api import schema
from apiserver.openapi_schemas import Format, ref
from apiserver.registry.schemastrategy import RETURN_DELETED_OBJECT
from apiserver.resources import ResourceInfo

META: Final = "io.plat.apimachinery.pkg.apis.meta.v1."
STATUS: Final = META + "Status"
DELETE_OPTIONS: Final = META + "DeleteOptions"
PATCH: Final = META + "Patch"
RESOURCE_LIST: Final = META + "APIResourceList"
PROTOBUF: Final = "application/vnd.platform.protobuf"
OBJECT_TYPES: Final = ("application/json", "application/yaml", PROTOBUF)
LIST_TYPES: Final = (*OBJECT_TYPES, "application/json;stream=watch",
                     f"{PROTOBUF};stream=watch")
PATCH_TYPES: Final = ("application/apply-patch+yaml", "application/json-patch+json",
                      "application/merge-patch+json", "application/strategic-merge-patch+json")


def patch_types() -> tuple[str, ...]:
    """The PATCH body types upstream lists that this server's PATCH handler takes. kubectl's
    client-side apply sends a strategic merge patch when the document lists that type (and a
    merge patch for kinds it has no Go type for otherwise), so it is listed only once the
    handler supports it."""
    from apiserver.endpoints.patch import SUPPORTED_PATCH_TYPES

    return tuple(t for t in PATCH_TYPES if t in SUPPORTED_PATCH_TYPES)

_DESCRIPTIONS: Final = {
    "pretty": "If 'true', then the output is pretty printed. Defaults to 'false' unless the "
              "user-agent indicates a browser or command-line HTTP tool (curl and wget).",
    "dryRun": "When present, indicates that modifications should not be persisted. An invalid "
              "or unrecognized dryRun directive will result in an error response and no "
              "further processing of the request. Valid values are: - All: all dry run "
              "stages will be processed",
    "fieldManager": "fieldManager is a name associated with the actor or entity that is "
                    "making these changes. The value must be less than or 128 characters "
                    "long, and only contain printable characters, as defined by "
                    "https://golang.org/pkg/unicode/#IsPrint.",
    "fieldValidation": "fieldValidation instructs the server on how to handle objects in the "
                       "request (POST/PUT/PATCH) containing unknown or duplicate fields. "
                       "Valid values are: - Ignore - Warn (default) - Strict",
    "force": "Force is going to \"force\" Apply requests. It means user will re-acquire "
             "conflicting fields owned by other people. Force flag must be unset for "
             "non-apply patch requests.",
    "resourceVersion": "resourceVersion sets a constraint on what resource versions a request "
                       "may be served from.",
    "resourceVersionMatch": "resourceVersionMatch determines how resourceVersion is applied "
                            "to list calls.",
    "labelSelector": "A selector to restrict the list of returned objects by their labels. "
                     "Defaults to everything.",
    "fieldSelector": "A selector to restrict the list of returned objects by their fields. "
                     "Defaults to everything.",
    "limit": "limit is a maximum number of responses to return for a list call.",
    "continue": "The continue option should be set when retrieving more results from the "
                "server.",
    "watch": "Watch for changes to the described resources and return them as a stream of "
             "add, update, and remove notifications. Specify resourceVersion.",
    "allowWatchBookmarks": "allowWatchBookmarks requests watch events with type \"BOOKMARK\".",
    "sendInitialEvents": "`sendInitialEvents=true` may be set together with `watch=true`.",
    "timeoutSeconds": "Timeout for the list/watch call.",
    "gracePeriodSeconds": "The duration in seconds before the object should be deleted.",
    "propagationPolicy": "Whether and how garbage collection will be performed.",
    "orphanDependents": "Deprecated: please use the PropagationPolicy, this field will be "
                        "deprecated in 1.7.",
    "ignoreStoreReadErrorWithClusterBreakingPotential":
        "if set to true, it will trigger an unsafe deletion of the resource in case the "
        "normal deletion flow fails with a corrupt object error.",
    "namespace": "object name and auth scope, such as for teams and projects",
    # connect and log sub-resources
    "command": "Command is the remote command to execute. argv array. Not executed within a "
               "shell.",
    "container": "The container in which to execute the command. Defaults to only container "
                 "if there is only one container in the pod.",
    "stderr": "Redirect the standard error stream of the pod for this call.",
    "stdin": "Redirect the standard input stream of the pod for this call. Defaults to false.",
    "stdout": "Redirect the standard output stream of the pod for this call.",
    "tty": "TTY if true indicates that a tty will be allocated for the exec call. Defaults to "
           "false.",
    "ports": "List of ports to forward Required when using WebSockets",
    "path": "Path is the URL path to use for the current proxy request.",
    "follow": "Follow the log stream of the pod. Defaults to false.",
    "insecureSkipTLSVerifyBackend": "insecureSkipTLSVerifyBackend indicates that the apiserver "
                                    "should not confirm the validity of the serving "
                                    "certificate of the backend it is connecting to.",
    "limitBytes": "If set, the number of bytes to read from the server before terminating the "
                  "log output.",
    "previous": "Return previous terminated container logs. Defaults to false.",
    "sinceSeconds": "A relative time in seconds before the current time from which to show "
                    "logs.",
    "stream": "Specify which container log stream to return to the client. Acceptable values "
              "are \"All\", \"Stdout\" and \"Stderr\". If not specified, \"All\" is used.",
    "tailLines": "If set, the number of lines from the end of the logs to show.",
    "timestamps": "If true, add an RFC3339 or RFC3339Nano timestamp at the beginning of every "
                  "line of log output. Defaults to false.",
}
_TYPES: Final = {"limit": "integer", "timeoutSeconds": "integer",
                 "gracePeriodSeconds": "integer", "watch": "boolean",
                 "allowWatchBookmarks": "boolean", "sendInitialEvents": "boolean",
                 "force": "boolean", "orphanDependents": "boolean",
                 "ignoreStoreReadErrorWithClusterBreakingPotential": "boolean",
                 "stderr": "boolean", "stdin": "boolean", "stdout": "boolean", "tty": "boolean",
                 "ports": "integer", "follow": "boolean",
                 "insecureSkipTLSVerifyBackend": "boolean", "limitBytes": "integer",
                 "previous": "boolean", "sinceSeconds": "integer", "tailLines": "integer",
                 "timestamps": "boolean"}

# Query parameters of the connect sub-resources (their options kinds), and of pods/log.
CONNECT_PARAMS: Final = {
    "exec": ("command", "container", "stderr", "stdin", "stdout", "tty"),
    "attach": ("container", "stderr", "stdin", "stdout", "tty"),
    "portforward": ("ports",),
    "proxy": ("path",),
}
LOG_PARAMS: Final = ("container", "follow", "insecureSkipTLSVerifyBackend", "limitBytes",
                     "previous", "sinceSeconds", "stream", "tailLines", "timestamps")
CONNECT_METHODS: Final = (("delete", "delete", "Delete"), ("get", "get", "Get"),
                          ("patch", "patch", "Patch"), ("create", "post", "Post"),
                          ("update", "put", "Put"))

WRITE: Final = ("dryRun", "fieldManager", "fieldValidation")
LIST: Final = ("allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit",
               "resourceVersion", "resourceVersionMatch", "sendInitialEvents",
               "timeoutSeconds", "watch")
DELETE: Final = ("dryRun", "gracePeriodSeconds",
                 "ignoreStoreReadErrorWithClusterBreakingPotential", "orphanDependents",
                 "propagationPolicy")
DELETE_COLLECTION: Final = tuple(sorted({*DELETE, *LIST} - {"watch", "allowWatchBookmarks"}))


@dataclass(frozen=True, slots=True, kw_only=True)
class Operation:
    method: str  # get, put, post, patch, delete
    operation_id: str
    description: str
    action: str  # x-kubernetes-action
    tag: str
    gvk: dict[str, str] | None
    params: tuple[str, ...] = ()  # query parameters
    body: str | None = None  # definition name of the request body
    consumes: tuple[str, ...] = ("*/*",)
    produces: tuple[str, ...] = OBJECT_TYPES
    # (code, definition name); "" for a plain string response, None for no body
    responses: tuple[tuple[str, str | None], ...] = ()


@dataclass(slots=True)
class PathItem:
    path: str
    # path-level parameters: (name, description, "path" or "query")
    path_params: tuple[tuple[str, str, str], ...]
    operations: list[Operation] = field(default_factory=list)


def group_id(group: str) -> str:
    """``rbac.authorization.plat.io`` -> ``RbacAuthorization``; core -> ``Core``."""
    if not group:
        return "Core"
    for suffix in (".plat.io", ".k8s.io"):
        if group.endswith(suffix):
            group = group[: -len(suffix)]
    return "".join(p[:1].upper() + p[1:] for p in group.replace("-", ".").split("."))


def tag_of(group: str, version: str) -> str:
    g = group_id(group)
    return f"{g[:1].lower()}{g[1:]}_{version}"


def base_path(group: str, version: str) -> str:
    return f"/api/{version}" if not group else f"/apis/{group}/{version}"


_CODES: Final = {"200": "OK", "201": "Created", "202": "Accepted", "401": "Unauthorized"}


def _resp(name: str | None, *codes: str) -> tuple[tuple[str, str | None], ...]:
    return (*((c, name) for c in codes), ("401", None))


def resource_paths(resources: Iterable[ResourceInfo]) -> list[PathItem]:
    """Path items of one group-version's resources (plus its resource-list path)."""
    infos = list(resources)
    if not infos:
        return []
    group, version = infos[0].group, infos[0].version
    gv = f"{group_id(group)}{version[:1].upper()}{version[1:]}"
    tag = tag_of(group, version)
    base = base_path(group, version)
    items: dict[str, PathItem] = {}
    patch_in = patch_types()

    def item(path: str, *params: tuple[str, str, str]) -> PathItem:
        if path not in items:
            items[path] = PathItem(path, (*params, ("pretty", _DESCRIPTIONS["pretty"], "query")))
        return items[path]

    items[f"{base}/"] = PathItem(f"{base}/", (), [Operation(
        method="get", operation_id=f"get{gv}APIResources",
        description="get available resources", action="", tag=tag, gvk=None,
        produces=("application/json", "application/yaml", PROTOBUF),
        responses=_resp(RESOURCE_LIST, "200"))])
    mains = {r.resource: r for r in infos if not r.subresource}
    ns_param = ("namespace", _DESCRIPTIONS["namespace"], "path")
    for info in infos:
        main = mains.get(info.resource, info)
        verbs = set(info.verbs)
        scoped = f"{base}/namespaces/{{namespace}}" if main.namespaced else base
        ns = "Namespaced" if main.namespaced else ""
        scope_params = (ns_param,) if main.namespaced else ()
        name_param = ("name", f"name of the {_sub_title(info)}", "path")
        if info.subresource:
            kind_group = info.sub_kind_group if info.sub_kind else group
            kind_version = info.sub_kind_version if info.sub_kind else version
            kind = info.sub_kind or main.kind
            defn = schema.definition_name(kind_group, kind_version, kind) or ""
            gvk = {"group": kind_group, "version": kind_version, "kind": kind}
            sub = info.subresource
            suffix = f"{ns}{main.kind}{sub[:1].upper()}{sub[1:]}"
            what = f"{sub} of the specified {main.kind}"
            sub_path = f"{scoped}/{info.resource}/{{name}}/{sub}"
            if kind.endswith("Options"):
                # connect: the options kind names the GVK; bodies and answers are streams
                for extra in (False, True) if sub == "proxy" else (False,):
                    path = sub_path + ("/{path}" if extra else "")
                    path_params = (
                        *((q, _DESCRIPTIONS[q], "query") for q in CONNECT_PARAMS.get(sub, ())),
                        ("name", f"name of the {kind}", "path"), *scope_params,
                        *((("path", "path to the resource", "path"),) if extra else ()))
                    items[path] = PathItem(path, path_params, [Operation(
                        method=method,
                        operation_id=f"connect{gv}{label}{suffix}{'WithPath' if extra else ''}",
                        description=f"connect {method.upper()} requests to {sub} of "
                                    f"{main.kind}",
                        action="connect", tag=tag, gvk=gvk, consumes=("*/*",),
                        produces=("*/*",), responses=_resp("", "200"))
                        for verb, method, label in CONNECT_METHODS if verb in verbs])
                continue
            if sub == "log":
                it = item(sub_path, name_param, *scope_params)
                it.operations.append(Operation(
                    method="get", operation_id=f"read{gv}{suffix}", description=f"read {what}",
                    action="get", tag=tag, gvk={"group": group, "version": version,
                                                "kind": main.kind},
                    params=LOG_PARAMS, produces=("text/plain", *OBJECT_TYPES),
                    responses=_resp("", "200")))
                continue
            it = item(sub_path, name_param, *scope_params)
            if "get" in verbs:
                it.operations.append(Operation(
                    method="get", operation_id=f"read{gv}{suffix}", description=f"read {what}",
                    action="get", tag=tag, gvk=gvk, responses=_resp(defn, "200")))
            if "update" in verbs:
                it.operations.append(Operation(
                    method="put", operation_id=f"replace{gv}{suffix}",
                    description=f"replace {what}", action="put", tag=tag, gvk=gvk,
                    params=WRITE, body=defn, responses=_resp(defn, "200", "201")))
            if "patch" in verbs:
                it.operations.append(Operation(
                    method="patch", operation_id=f"patch{gv}{suffix}",
                    description=f"partially update {what}", action="patch", tag=tag,
                    gvk=gvk, params=(*WRITE, "force"), body=PATCH, consumes=patch_in,
                    responses=_resp(defn, "200", "201")))
            if "create" in verbs:
                it.operations.append(Operation(
                    method="post", operation_id=f"create{gv}{suffix}",
                    description=f"create {sub} of a {main.kind}", action="post", tag=tag,
                    gvk=gvk, params=WRITE, body=defn,
                    responses=_resp(defn, "200", "201", "202")))
            continue
        defn = schema.definition_name(group, version, info.kind) or ""
        list_defn = schema.definition_name(group, version, f"{info.kind}List") or ""
        gvk = {"group": group, "version": version, "kind": info.kind}
        coll = item(f"{scoped}/{info.resource}", *scope_params)
        if "list" in verbs:
            coll.operations.append(Operation(
                method="get", operation_id=f"list{gv}{ns}{info.kind}",
                description=f"list or watch objects of kind {info.kind}", action="list",
                tag=tag, gvk=gvk, params=LIST, produces=LIST_TYPES,
                responses=_resp(list_defn, "200")))
        if "create" in verbs:
            coll.operations.append(Operation(
                method="post", operation_id=f"create{gv}{ns}{info.kind}",
                description=f"create a {info.kind}", action="post", tag=tag, gvk=gvk,
                params=WRITE, body=defn, responses=_resp(defn, "200", "201", "202")))
        if "deletecollection" in verbs:
            coll.operations.append(Operation(
                method="delete", operation_id=f"delete{gv}Collection{ns}{info.kind}",
                description=f"delete collection of {info.kind}", action="deletecollection",
                tag=tag, gvk=gvk, params=DELETE_COLLECTION, body=DELETE_OPTIONS,
                responses=_resp(STATUS, "200")))
        it = item(f"{scoped}/{info.resource}/{{name}}", name_param, *scope_params)
        if "get" in verbs:
            it.operations.append(Operation(
                method="get", operation_id=f"read{gv}{ns}{info.kind}",
                description=f"read the specified {info.kind}", action="get", tag=tag,
                gvk=gvk, responses=_resp(defn, "200")))
        if "update" in verbs:
            it.operations.append(Operation(
                method="put", operation_id=f"replace{gv}{ns}{info.kind}",
                description=f"replace the specified {info.kind}", action="put", tag=tag,
                gvk=gvk, params=WRITE, body=defn, responses=_resp(defn, "200", "201")))
        if "patch" in verbs:
            it.operations.append(Operation(
                method="patch", operation_id=f"patch{gv}{ns}{info.kind}",
                description=f"partially update the specified {info.kind}", action="patch",
                tag=tag, gvk=gvk, params=(*WRITE, "force"), body=PATCH,
                consumes=patch_in, responses=_resp(defn, "200", "201")))
        if "delete" in verbs:
            it.operations.append(Operation(
                method="delete", operation_id=f"delete{gv}{ns}{info.kind}",
                description=f"delete a {info.kind}", action="delete", tag=tag, gvk=gvk,
                params=DELETE, body=DELETE_OPTIONS,
                responses=_resp(defn if (info.group, info.resource) in RETURN_DELETED_OBJECT
                                else STATUS, "200", "202")))
        if main.namespaced and "list" in verbs:
            all_ns = item(f"{base}/{info.resource}")
            all_ns.operations.append(Operation(
                method="get", operation_id=f"list{gv}{info.kind}ForAllNamespaces",
                description=f"list or watch objects of kind {info.kind}", action="list",
                tag=tag, gvk=gvk, params=LIST, produces=LIST_TYPES,
                responses=_resp(list_defn, "200")))
    return [items[k] for k in sorted(items) if items[k].operations]


def _sub_title(info: ResourceInfo) -> str:
    return info.sub_kind if info.subresource and info.sub_kind else info.kind


def referenced(paths: Iterable[PathItem]) -> set[str]:
    """Definition names the operations of ``paths`` use."""
    out: set[str] = set()
    for p in paths:
        for op in p.operations:
            if op.body:
                out.add(op.body)
            out.update(name for _, name in op.responses if name)
    return out


def _schema_of(name: str | None, fmt: Format) -> dict[str, Any]:
    return ref(name, fmt) if name else {"type": "string"}


def _query(name: str, fmt: Format) -> dict[str, Any]:
    typ = _TYPES.get(name, "string")
    p: dict[str, Any] = {"name": name, "in": "query", "description": _DESCRIPTIONS[name]}
    if fmt == "v2":
        p.update({"type": typ, "uniqueItems": True})
    else:
        p["schema"] = {"type": typ, "uniqueItems": True}
    return p


def _path_param(name: str, description: str, where: str, fmt: Format) -> dict[str, Any]:
    if where == "query":
        return _query(name, fmt)
    p: dict[str, Any] = {"name": name, "in": "path", "description": description,
                         "required": True}
    if fmt == "v2":
        p.update({"type": "string", "uniqueItems": True})
    else:
        p["schema"] = {"type": "string", "uniqueItems": True}
    return p


def _render_op(op: Operation, fmt: Format) -> dict[str, Any]:
    out: dict[str, Any] = {"tags": [op.tag], "description": op.description,
                           "operationId": op.operation_id}
    params = [_query(p, fmt) for p in op.params]
    if fmt == "v2":
        out["consumes"] = list(op.consumes)
        out["produces"] = list(op.produces)
        out["schemes"] = ["https"]
        if op.body is not None:
            params.insert(0, {"name": "body", "in": "body", "required": True,
                              "schema": _schema_of(op.body, fmt)})
        responses: dict[str, Any] = {}
        for code, name in op.responses:
            r: dict[str, Any] = {"description": _CODES[code]}
            if name is not None:
                r["schema"] = _schema_of(name, fmt)
            responses[code] = r
    else:
        if op.body is not None:
            out["requestBody"] = {"content": {t: {"schema": _schema_of(op.body, fmt)}
                                              for t in op.consumes}, "required": True}
        responses = {}
        for code, name in op.responses:
            r = {"description": _CODES[code]}
            if name is not None:
                r["content"] = {t: {"schema": _schema_of(name, fmt)} for t in op.produces}
            responses[code] = r
    if params:
        out["parameters"] = params
    out["responses"] = responses
    if op.action:
        out["x-kubernetes-action"] = op.action
    if op.gvk is not None:
        out["x-kubernetes-group-version-kind"] = op.gvk
    return out


def render(paths: Iterable[PathItem], fmt: Format) -> dict[str, Any]:
    """The ``paths`` object of a document in format ``fmt``."""
    out: dict[str, Any] = {}
    for p in paths:
        rendered: dict[str, Any] = {op.method: _render_op(op, fmt) for op in p.operations}
        if p.path_params:
            rendered["parameters"] = [_path_param(n, d, w, fmt) for n, d, w in p.path_params]
        out[p.path] = rendered
    return out


def discovery_paths(what: str, group: str = "") -> list[PathItem]:
    """The discovery endpoint of a non-group-version document: ``api`` (``/api/``), ``apis``
    (``/apis/``), ``apis/<group>`` (``/apis/<group>/``) or ``version`` (``/version/``)."""
    if what == "api":
        op = ("/api/", "getCoreAPIVersions", "get available API versions", "core",
              META + "APIVersions")
    elif what == "apis":
        op = ("/apis/", "getAPIVersions", "get available API versions", "apis",
              META + "APIGroupList")
    elif what == "group":
        g = group_id(group)
        op = (f"/apis/{group}/", f"get{g}APIGroup", "get information of a group",
              g[:1].lower() + g[1:], META + "APIGroup")
    else:
        op = ("/version/", "getCodeVersion", "get the code version", "version",
              "io.plat.apimachinery.pkg.version.Info")
    path, op_id, description, tag, defn = op
    produces = ("application/json",) if what == "version" else OBJECT_TYPES
    return [PathItem(path, (), [Operation(
        method="get", operation_id=op_id, description=description, action="", tag=tag,
        gvk=None, produces=produces, responses=_resp(defn, "200"))])]

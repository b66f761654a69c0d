"""Hostile requests: a seeded stream of malformed and unusual requests (objects with fields of
the wrong type, deep or broken bodies, every content type and Accept header, bad query
parameters, odd names and sub-resources) against a real server on each backend. None may get
a 5xx other than 504 for a resourceVersion ahead of the store and upstream's 500 for the
first apply to an object its typed walk cannot hold (upstream's answers), none may
drop the connection, and the server must still be ready afterwards.

Written after such a stream found a YAML body nested 100,000 deep killing the server (libyaml's
composer overflowed the stack). ``PLAT_HOSTILE_REQUESTS`` sets the count per seed.
"""

from __future__ import annotations

import copy
import http.client
import json
import os
import random
import urllib.parse
from typing import Any

import pytest

from apiserver.testing.launcher import ApiServerProcess

pytestmark = [pytest.mark.timeout(600)]

COUNT = int(os.environ.get("PLAT_HOSTILE_REQUESTS", "600"))

# resource: (path prefix, namespaced, a valid object)
OBJECTS: dict[str, tuple[str, bool, dict[str, Any]]] = {
    "configmaps": ("/api/v1", True, {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "labels": {"a": "b"}},
        "data": {"k": "v"}, "binaryData": {"b": "aGVsbG8="}}),
    "secrets": ("/api/v1", True, {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}, "type": "Opaque",
        "data": {"k": "dg=="}, "stringData": {"s": "v"}}),
    "serviceaccounts": ("/api/v1", True, {
        "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "x"},
        "secrets": [{"name": "s"}], "automountServiceAccountToken": True}),
    "events": ("/api/v1", True, {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "x"},
        "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "R", "message": "m",
        "type": "Normal", "count": 1, "firstTimestamp": "2024-01-01T00:00:00Z"}),
    "leases": ("/apis/coordination.plat.io/v1", True, {
        "apiVersion": "coordination.plat.io/v1", "kind": "Lease", "metadata": {"name": "x"},
        "spec": {"holderIdentity": "h", "leaseDurationSeconds": 10,
                 "renewTime": "2024-01-01T00:00:00.000000Z", "leaseTransitions": 1}}),
    "statefulsets": ("/apis/apps/v1", True, {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "x"},
        "spec": {"replicas": 1, "serviceName": "s", "selector": {"matchLabels": {"app": "a"}},
                 "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [
                     {"name": "c", "image": "i", "ports": [{"containerPort": 80}],
                      "resources": {"limits": {"cpu": "1"}}}]}},
                 "volumeClaimTemplates": [{"metadata": {"name": "v"}, "spec": {
                     "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}}}]}}),
    "namespaces": ("/api/v1", False, {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "hostile-x"}}),
}
ODD_VALUES: list[Any] = [
    None, 0, -1, 1.5, 2**63, -(2**63) - 5, 10**30, "", "x" * 300, "\u00fc\u0000", True, False,
    [], {}, [1, "a"], {"a": {"b": []}}, "-1", "2024-13-45T99:99:99Z", "NaN", "1e400", [[[]]],
]
META_FIELDS = ["generateName", "uid", "resourceVersion", "finalizers", "ownerReferences",
               "deletionTimestamp", "managedFields", "creationTimestamp", "annotations",
               "namespace", "deletionGracePeriodSeconds", "generation", "unknown"]
QUERY: dict[str, list[str]] = {
    "limit": ["-1", "0", "abc", "99999999999999999999", "1", "1.5"],
    "continue": ["", "abc", "!!!", "e30", "bnVsbA",
                 "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTEsInN0YXJ0IjoiXHUwMDAwIn0"],
    # (one ahead of the store would wait 3 s for its 504: left out for time)
    "resourceVersion": ["", "0", "-1", "abc", "1.5", "18446744073709551616"],
    "resourceVersionMatch": ["", "Exact", "NotOlderThan", "bogus"],
    "labelSelector": ["a=b", "a in (b,c)", "!a", "a notin ()", "a==", "=b", "a in (b", "a,,b",
                      "x/y=z", "a=b=c", "(((", "a in (b c)", "9" * 70 + "=v", "a>1"],
    "fieldSelector": ["metadata.name=x", "metadata.namespace!=y", "bogus=1", "metadata.name",
                      "=", "a=b,c", "spec.replicas=1", "type=Opaque", "involvedObject.name=p"],
    "timeoutSeconds": ["-1", "0", "abc", "1", "99999999999999999999"],
    "dryRun": ["All", "bogus", "", "All,All"],
    "fieldManager": ["", "m", "x" * 200, "\x01"],
    "fieldValidation": ["Strict", "Warn", "Ignore", "bogus"],
    "gracePeriodSeconds": ["-1", "0", "abc", "99999999999999999999"],
    "propagationPolicy": ["Orphan", "Background", "Foreground", "bogus"],
    "orphanDependents": ["true", "false", "x"],
    "pretty": ["true", "x"],
    "allowWatchBookmarks": ["true", "x"],
    "sendInitialEvents": ["true", "false", "x"],
    "force": ["true", "x"],
    "includeObject": ["None", "Object", "Metadata", "bogus"],
}
ACCEPT = ["application/json", "application/yaml", "*/*", "text/html", ";;;",
          "application/json;as=Table;g=meta.plat.io;v=v1",
          "application/json;as=Table;g=meta.k8s.io;v=v1",
          "application/json;as=Table;g=meta.plat.io;v=v1beta1",
          "application/json;as=PartialObjectMetadata;g=meta.plat.io;v=v1",
          "application/json;as=PartialObjectMetadataList;g=meta.plat.io;v=v1",
          "application/vnd.kubernetes.protobuf", "application/cbor", "application/json;as=Bogus"]
CONTENT_TYPES = ["application/json", "application/yaml", "application/merge-patch+json",
                 "application/json-patch+json", "application/strategic-merge-patch+json",
                 "application/apply-patch+yaml", "application/apply-patch+cbor", "text/plain",
                 "", "multipart/form-data", "application/cbor",
                 "application/vnd.kubernetes.protobuf"]
BROKEN_BODIES = [b"{" * 5000, b"\xff\xfe\x00garbage", b"", b"[" * 100_000, b"- " * 100_000,
                 b'{"a":1,"a":2,"metadata":{"name":"x","name":"y"}}',
                 b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {k: &a [*a]}\n",
                 b'{"metadata":{"name":"x"},"data":{"k":"\\ud800"}}']
PATCH_PATHS = ["/metadata/labels/a", "/data/k", "/", "", "/data/~2", "/data/-",
               "/spec/replicas", "/metadata/name", "/a/b/c", "metadata",
               "/spec/template/spec/containers/0", "/spec/template/spec/containers/-",
               "/spec/template/spec/containers/99"]


# Upstream's own 500: the first apply to an object stored with a keyed list item that lacks
# its key (a create of ``secrets: [null]`` stores ``[{}]``, as upstream's does).
# (in the message of a Status in JSON, YAML or protobuf, as the request asked)
UPSTREAM_500 = b"failed to create manager for existing fields: "


class Hostile:
    def __init__(self, seed: int, namespace: str) -> None:
        self.rnd = random.Random(seed)
        self.namespace = namespace

    def odd(self) -> Any:
        return copy.deepcopy(self.rnd.choice(ODD_VALUES))

    def mutate(self, obj: dict[str, Any]) -> dict[str, Any]:
        """``obj`` with one to four fields replaced by odd values, deleted, or added."""
        doc = copy.deepcopy(obj)
        for _ in range(self.rnd.randint(1, 4)):
            parent: Any = doc
            key: Any = self.rnd.choice(list(doc))
            while isinstance(parent[key], dict | list) and parent[key] and self.rnd.random() < 0.7:
                parent = parent[key]
                key = (self.rnd.choice(list(parent)) if isinstance(parent, dict)
                       else self.rnd.randrange(len(parent)))
            roll = self.rnd.random()
            if roll < 0.6:
                parent[key] = self.odd()
            elif roll < 0.75 and isinstance(parent, dict):
                del parent[key]
            elif isinstance(parent, dict):
                parent[self.rnd.choice(META_FIELDS)] = self.odd()
        return doc

    def json_patch(self) -> Any:
        ops = []
        for _ in range(self.rnd.randint(0, 4)):
            op: dict[str, Any] = {
                "op": self.rnd.choice(["add", "remove", "replace", "move", "copy", "test",
                                       "bogus", None]),
                "path": self.rnd.choice(PATCH_PATHS)}
            if self.rnd.random() < 0.8:
                op["value"] = self.odd()
            if self.rnd.random() < 0.3:
                op["from"] = self.rnd.choice(["/data/k", "/x", "", "/metadata"])
            ops.append(op)
        return self.rnd.choice([ops, ops, {}, "x", [1], None])

    def request(self) -> tuple[str, str, dict[str, str], dict[str, str], bytes | None]:
        rnd = self.rnd
        resource = rnd.choice(list(OBJECTS))
        prefix, namespaced, obj = OBJECTS[resource]
        ns = rnd.choice([self.namespace, self.namespace, "hostile-missing", "UPPER", "a" * 70])
        url = f"{prefix}/namespaces/{ns}/{resource}" if namespaced else f"{prefix}/{resource}"
        method = rnd.choice(["GET", "GET", "POST", "PUT", "PATCH", "DELETE", "DELETE", "HEAD",
                             "OPTIONS"])
        if method in ("PUT", "PATCH", "HEAD") or (method in ("GET", "DELETE")
                                                  and rnd.random() < 0.6):
            name = rnd.choice(["x", "x", "y", "UPPER", "a" * 260, "a.b", "-x", ".."])
            if not namespaced:
                name = rnd.choice(["hostile-x", "hostile-y", "UPPER", "a" * 70])
            url += "/" + name + rnd.choice(["", "", "", "/status", "/scale", "/bogus"])
        query = {k: rnd.choice(v) for k, v in rnd.sample(sorted(QUERY.items()),
                                                          rnd.randint(0, 4))}
        if rnd.random() < 0.1:
            query["watch"] = rnd.choice(["true", "1", "false", "bogus"])
        if query.get("watch", "false").lower() not in ("0", "f", "false"):
            query["timeoutSeconds"] = "1"  # a watch that never ends is no failure
        headers: dict[str, str] = {}
        if rnd.random() < 0.5:
            headers["Accept"] = rnd.choice(ACCEPT)
        body: bytes | None = None
        if method in ("POST", "PUT", "PATCH") or (method == "DELETE" and rnd.random() < 0.3):
            ctype = (rnd.choice(CONTENT_TYPES) if method == "PATCH" or rnd.random() < 0.2
                     else "application/json")
            if ctype:
                headers["Content-Type"] = ctype
            if ctype == "application/apply-patch+yaml" and rnd.random() < 0.8:
                # an apply without a manager stops at the options: reach the merge too
                query.setdefault("fieldManager", "m")
            if method == "DELETE":
                doc: Any = self.mutate({
                    "kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                    "preconditions": {"uid": "u", "resourceVersion": "1"},
                    "propagationPolicy": "Orphan", "dryRun": ["All"]})
            elif ctype == "application/json-patch+json":
                doc = self.json_patch()
            else:
                doc = self.mutate(obj)
            body = json.dumps(doc).encode()
            if rnd.random() < 0.15:
                body = rnd.choice(BROKEN_BODIES)
        return method, url, query, headers, body


@pytest.mark.parametrize("seed", [1, 2])
def test_hostile_requests_get_clear_errors(api_server: ApiServerProcess, namespace: str,
                                           seed: int) -> None:
    gen = Hostile(seed, namespace)
    host = urllib.parse.urlsplit(api_server.url)
    conn = http.client.HTTPSConnection(host.hostname or "", host.port,
                                       context=api_server.ssl_context(), timeout=30)
    bad: list[str] = []

    def send(method: str, target: str, headers: dict[str, str], body: bytes | None
             ) -> tuple[int, bytes]:
        for attempt in (1, 2):
            try:
                conn.request(method, target, body=body, headers=headers)
                resp = conn.getresponse()
                return resp.status, resp.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                # The server may close a kept-alive connection after an error answer (as
                # upstream does for some); a second failure on a new one is a failure.
                conn.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    # Every broken body with every content type first, then the random stream.
    cm = f"/api/v1/namespaces/{namespace}/configmaps"
    fixed = [(method, cm + ("/x" if method == "PATCH" else ""), {},
              {"Content-Type": ctype} if ctype else {}, body)
             for body in BROKEN_BODIES for ctype in CONTENT_TYPES for method in ("POST", "PATCH")]
    try:
        for i in range(len(fixed) + COUNT):
            method, path, query, headers, body = fixed[i] if i < len(fixed) else gen.request()
            target = path + ("?" + urllib.parse.urlencode(query) if query else "")
            shown = f"{method} {target} {headers} {(body or b'')[:120]!r}"
            try:
                status, data = send(method, target, headers, body)
            except (OSError, http.client.HTTPException) as e:
                pytest.fail(f"{shown}: {type(e).__name__}: {e}")
            if status == 500 and UPSTREAM_500 in data:
                continue
            if status >= 500 and status != 504:
                bad.append(f"{shown} -> {status} {data[:300]!r}")
        ready, _ = send("GET", "/readyz", {}, None)
    finally:
        conn.close()
    assert not bad, f"{len(bad)} server errors:\n" + "\n".join(bad[:10])
    assert ready == 200

"""Server-side apply and managedFields through the handlers over the real registry (generic
store, strategies, embedded storage behind the watch cache)."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp.test_utils import TestClient

CM = "/api/v1/namespaces/default/configmaps"
STS = "/apis/apps/v1/namespaces/default/statefulsets"
APPLY = {"Content-Type": "application/apply-patch+yaml"}
MP = {"Content-Type": "application/merge-patch+json"}

Client = TestClient[Any, Any]


def cm(name: str, data: dict[str, str] | None = None, **meta: Any) -> bytes:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": name, **meta}}
    if data is not None:
        body["data"] = data
    return orjson.dumps(body)


async def apply(client: Client, path: str, body: bytes | str, manager: str | None = "m1",
                query: str = "") -> tuple[int, dict[str, Any]]:
    q = f"?fieldManager={manager}" if manager is not None else "?"
    if query:
        q += "&" + query
    r = await client.patch(path + q, data=body, headers=APPLY)
    out: dict[str, Any] = await r.json()
    return r.status, out


def entries(obj: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(e["manager"], e["operation"], e.get("subresource", ""))
            for e in obj["metadata"].get("managedFields") or []]


async def test_apply_creates_then_reapply_keeps_resource_version(real: Client) -> None:
    code, obj = await apply(real, f"{CM}/a", cm("a", {"k": "v"}))
    assert code == 201, obj
    assert obj["data"] == {"k": "v"}
    [e] = obj["metadata"]["managedFields"]
    assert e["manager"] == "m1" and e["operation"] == "Apply" and e["apiVersion"] == "v1"
    assert e["fieldsType"] == "FieldsV1"
    assert e["fieldsV1"] == {"f:data": {"f:k": {}}}  # an apply owns the leaves it sets
    rv = obj["metadata"]["resourceVersion"]
    code, again = await apply(real, f"{CM}/a", cm("a", {"k": "v"}))
    assert code == 200
    assert again["metadata"]["resourceVersion"] == rv
    assert again["metadata"]["managedFields"] == obj["metadata"]["managedFields"]


async def test_apply_yaml_body(real: Client) -> None:
    body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  k: v\n"
    code, obj = await apply(real, f"{CM}/y", body)
    assert code == 201, obj
    assert obj["data"] == {"k": "v"}


async def test_conflict_force_and_shared_ownership(real: Client) -> None:
    await apply(real, f"{CM}/a", cm("a", {"k": "v", "o": "1"}), "m1")
    code, err = await apply(real, f"{CM}/a", cm("a", {"k": "other"}), "m2")
    assert code == 409, err
    assert err["reason"] == "Conflict"
    assert err["message"] == 'Apply failed with 1 conflict: conflict with "m1": .data.k'
    assert err["details"]["causes"] == [{"reason": "FieldManagerConflict",
                                         "message": 'conflict with "m1"', "field": ".data.k"}]
    # the same value: both own it
    code, obj = await apply(real, f"{CM}/a", cm("a", {"k": "v"}), "m2")
    assert code == 200
    # Apply entries first, then by time (an unchanged apply has none) and manager
    assert sorted(m for m, _, _ in entries(obj)) == ["m1", "m2"]
    # force moves ownership
    code, obj = await apply(real, f"{CM}/a", cm("a", {"k": "forced"}), "m3", "force=true")
    assert code == 200, obj
    assert obj["data"]["k"] == "forced"
    owners = {e["manager"]: e["fieldsV1"] for e in obj["metadata"]["managedFields"]}
    assert "f:k" not in owners["m1"]["f:data"] and "m2" not in owners
    assert owners["m3"] == {"f:data": {"f:k": {}}}


async def test_removed_field_is_relinquished_and_deleted(real: Client) -> None:
    await apply(real, f"{CM}/a", cm("a", {"k": "v", "gone": "x"}))
    code, obj = await apply(real, f"{CM}/a", cm("a", {"k": "v"}))
    assert code == 200
    assert obj["data"] == {"k": "v"}
    assert obj["metadata"]["managedFields"][0]["fieldsV1"] == {"f:data": {"f:k": {}}}


async def test_options(real: Client) -> None:
    code, err = await apply(real, f"{CM}/a", cm("a", {"k": "v"}), None)
    assert code == 422
    assert err["message"] == ('PatchOptions.meta.plat.io "" is invalid: fieldManager: '
                              "Required value: is required for apply patch")
    r = await real.patch(f"{CM}/a?force=true", data=b"{}", headers=MP)
    assert r.status == 422
    assert "force: Forbidden: may not be specified for non-apply patch" in \
        (await r.json())["message"]
    r = await real.patch(f"{CM}/a?fieldManager=x", data=b"{}",
                         headers={"Content-Type": "application/apply-patch+cbor"})
    assert r.status == 415
    assert (await r.json())["message"].endswith(
        "application/json-patch+json, application/merge-patch+json, "
        "application/strategic-merge-patch+json, application/apply-patch+yaml")


async def test_bad_configurations_are_400(real: Client) -> None:
    code, err = await apply(real, f"{CM}/a", cm("a", {"k": "v"}, managedFields=[
        {"manager": "x", "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": {}}]))
    assert (code, err["message"]) == (400, "metadata.managedFields must be nil")
    code, err = await apply(real, f"{CM}/a", orjson.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "bogus": 1}))
    assert code == 400, err
    assert err["reason"] == "BadRequest"
    assert err["message"].startswith("failed to create typed patch object (/a; "
                                     "/v1, Kind=ConfigMap): ")
    assert "bogus" in err["message"]
    code, err = await apply(real, f"{CM}/a", orjson.dumps(
        {"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "a"}}))
    assert code == 400, err
    code, err = await apply(real, f"{CM}/a", "- a\n- b\n")
    assert code == 400 and err["message"].startswith("error decoding YAML: ")
    code, err = await apply(real, f"{CM}/a", "a: [\n")
    assert code == 400 and err["message"].startswith("error decoding YAML: ")
    code, err = await apply(real, f"{CM}/b", cm("a", {"k": "v"}))
    assert code == 400
    assert err["message"] == ("the name of the object (a) does not match the name on the URL "
                              "(b)")
    # metadata that is not a map: found by a fuzz run, where it was a 500 (an apply of an
    # existing object crashed after the merge); upstream's typed conversion refuses it
    await apply(real, f"{CM}/a", cm("a", {"k": "v"}))
    for name, meta, shown in (("a", "x", "x"), ("a", [1, 2], "[1 2]"),
                              ("new", 5, "5"), ("a", [[[]]], "[[[]]]")):
        code, err = await apply(real, f"{CM}/{name}", orjson.dumps(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}))
        assert (code, err["reason"]) == (400, "BadRequest"), err
        assert err["message"] == ("failed to create typed patch object (/; /v1, "
                                  f"Kind=ConfigMap): .metadata: expected map, got &{{{shown}}}")
    r = await real.get(f"{CM}/new")
    assert r.status == 404


async def test_duplicate_keys_under_field_validation(real: Client) -> None:
    body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: d\ndata:\n  k: v\n  k: w\n"
    code, err = await apply(real, f"{CM}/d", body, query="fieldValidation=Strict")
    assert code == 400, err
    assert err["message"] == ("error strict decoding YAML: error converting YAML to JSON: "
                              "yaml: unmarshal errors:\n  line 7: key \"k\" already set in map")
    r = await real.patch(f"{CM}/d?fieldManager=m", data=body, headers=APPLY)
    assert r.status == 201
    [warning] = r.headers.getall("Warning")
    assert warning.startswith('299 - "error converting YAML to JSON: yaml: unmarshal errors:')
    assert warning.endswith('line 7: key \\"k\\" already set in map"')
    r = await real.patch(f"{CM}/d?fieldManager=m&fieldValidation=Ignore", data=body,
                         headers=APPLY)
    assert r.status == 200 and "Warning" not in r.headers


async def test_dry_run_apply_does_not_store(real: Client) -> None:
    code, obj = await apply(real, f"{CM}/a", cm("a", {"k": "v"}), query="dryRun=All")
    assert code == 201 and obj["metadata"]["managedFields"]
    r = await real.get(f"{CM}/a")
    assert r.status == 404
    await apply(real, f"{CM}/a", cm("a", {"k": "v"}))
    code, obj = await apply(real, f"{CM}/a", cm("a", {"k": "dry"}), query="dryRun=All")
    assert code == 200 and obj["data"]["k"] == "dry"
    r = await real.get(f"{CM}/a")
    assert (await r.json())["data"]["k"] == "v"


async def test_non_apply_writes_record_update_managers(real: Client) -> None:
    r = await real.post(CM, data=cm("u", {"k": "v"}),
                        headers={"User-Agent": "kubectl/v1.32.0 (linux/amd64) kubernetes/x",
                                 "Content-Type": "application/json"})
    obj = await r.json()
    assert r.status == 201
    [e] = obj["metadata"]["managedFields"]
    assert (e["manager"], e["operation"]) == ("kubectl", "Update")
    assert e["fieldsV1"] == {"f:data": {".": {}, "f:k": {}}}
    obj["data"]["x"] = "y"
    r = await real.put(f"{CM}/u?fieldManager=putter", json=obj)
    out = await r.json()
    assert r.status == 200, out
    assert sorted(entries(out)) == [("kubectl", "Update", ""), ("putter", "Update", "")]
    by = {e["manager"]: e["fieldsV1"] for e in out["metadata"]["managedFields"]}
    assert by["putter"] == {"f:data": {"f:x": {}}}
    r = await real.patch(f"{CM}/u?fieldManager=patcher", data=b'{"data":{"z":"1"}}',
                         headers=MP)
    out = await r.json()
    assert sorted(m for m, _, _ in entries(out)) == ["kubectl", "patcher", "putter"]
    # an apply changing a field an Update manager set conflicts with it
    code, err = await apply(real, f"{CM}/u", cm("u", {"z": "2"}), "ssa")
    assert code == 409
    assert err["message"] == ('Apply failed with 1 conflict: conflict with "patcher" using v1: '
                              ".data.z")


def sts(name: str, replicas: int | None = None, image: str = "nginx") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}},
                     "spec": {"containers": [{"name": "c", "image": image}]}}}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name},
            "spec": spec}


async def test_status_apply_owns_status_separately(real: Client) -> None:
    code, obj = await apply(real, f"{STS}/s", orjson.dumps(sts("s", 2)), "spec-owner")
    assert code == 201, obj
    assert obj["spec"]["replicas"] == 2
    assert "status" not in obj["metadata"]["managedFields"][0]["fieldsV1"]
    status_cfg = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
                  "spec": {"replicas": 9}, "status": {"replicas": 1, "readyReplicas": 1,
                                                          "availableReplicas": 1}}
    code, obj = await apply(real, f"{STS}/s/status", orjson.dumps(status_cfg), "ctrl")
    assert code == 200, obj
    assert obj["spec"]["replicas"] == 2  # spec cannot change through /status
    assert obj["status"]["replicas"] == 1
    by = {(e["manager"], e.get("subresource", "")): e for e in obj["metadata"]["managedFields"]}
    assert by[("ctrl", "status")]["fieldsV1"] == {
        "f:status": {"f:availableReplicas": {}, "f:readyReplicas": {}, "f:replicas": {}}}
    # status through the main resource is not changed nor owned
    cfg = sts("s", 2)
    cfg["status"] = {"replicas": 5}
    code, obj = await apply(real, f"{STS}/s", orjson.dumps(cfg), "spec-owner")
    assert code == 200, obj
    assert obj["status"]["replicas"] == 1
    # apply to /status of a missing object is 404
    code, err = await apply(real, f"{STS}/nope/status", orjson.dumps(status_cfg), "ctrl")
    assert code == 404


async def test_statefulset_defaults_and_idempotent_reapply(real: Client) -> None:
    code, obj = await apply(real, f"{STS}/d", orjson.dumps(sts("d")))
    assert code == 201, obj
    assert obj["spec"]["replicas"] == 1  # defaulted
    assert obj["spec"]["podManagementPolicy"] == "OrderedReady"
    rv = obj["metadata"]["resourceVersion"]
    code, again = await apply(real, f"{STS}/d", orjson.dumps(sts("d")))
    assert code == 200 and again["metadata"]["resourceVersion"] == rv
    code, changed = await apply(real, f"{STS}/d", orjson.dumps(sts("d", image="busybox")))
    assert code == 200
    assert changed["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox"
    assert changed["metadata"]["resourceVersion"] != rv
    assert changed["metadata"]["generation"] == 2


async def test_json_duplicate_keys_strict(real: Client) -> None:
    body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"j"},' \
           b'"data":{"a":"1","a":"2"}}'
    code, err = await apply(real, f"{CM}/j", body, query="fieldValidation=Strict")
    assert code == 400, err
    assert err["message"].endswith('line 1: key "a" already set in map')


async def test_put_with_empty_managed_fields_resets_them(real: Client) -> None:
    code, obj = await apply(real, f"{CM}/r", cm("r", {"k": "v"}))
    assert code == 201
    obj["metadata"]["managedFields"] = []
    r = await real.put(f"{CM}/r", json=obj)
    out = await r.json()
    assert r.status == 200, out
    assert "managedFields" not in out["metadata"]
    # what nobody owned is then owned by "before-first-apply": a change conflicts
    code, err = await apply(real, f"{CM}/r", cm("r", {"k": "w"}), "m2")
    assert code == 409
    assert err["message"] == ('Apply failed with 1 conflict: conflict with '
                              '"before-first-apply" using v1: .data.k')


async def test_put_without_managed_fields_keeps_them(real: Client) -> None:
    await apply(real, f"{CM}/p", cm("p", {"k": "v"}))
    r = await real.get(f"{CM}/p")
    obj = await r.json()
    del obj["metadata"]["managedFields"]
    obj["data"]["n"] = "1"
    r = await real.put(f"{CM}/p?fieldManager=editor", json=obj)
    out = await r.json()
    assert sorted(entries(out)) == [("editor", "Update", ""), ("m1", "Apply", "")]


def test_reset_fields_per_endpoint() -> None:
    from apiserver.endpoints.apply import reset_fields
    assert reset_fields("apps", "v1", "StatefulSet", "", True) == ("status",)
    assert reset_fields("", "v1", "ConfigMap", "", False) == ()
    assert reset_fields("apps", "v1", "StatefulSet", "status", True) == ("spec",)
    assert reset_fields("", "v1", "Namespace", "finalize", True) == ("status",)


def test_duplicate_key_error_lines() -> None:
    from apiserver.endpoints.apply import duplicate_key_error
    assert duplicate_key_error(b"a: 1\nb: 2\n") == ""
    assert duplicate_key_error(b"a: 1\nb:\n  c: 1\n  c: 2\na: 3\n") == (
        "error converting YAML to JSON: yaml: unmarshal errors:\n"
        '  line 4: key "c" already set in map\n'
        '  line 5: key "a" already set in map')


async def test_a_template_port_without_container_port_is_stored_with_zero_and_applies(
        real: Client) -> None:
    """A StatefulSet's template pod spec is not validated (upstream neither), so a port item
    ``{}``, ``null`` or without ``containerPort`` is stored; Go stores ``"containerPort": 0``.
    Stored without the key, the object made every later apply a 500 (its ports are a list
    keyed by containerPort and protocol); found by a fuzz run."""
    for i, ports in enumerate(([{}], [None], [{"protocol": "UDP"}])):
        body: dict[str, Any] = {
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": f"p{i}"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "serviceName": "s",
                     "template": {"metadata": {"labels": {"a": "b"}},
                                  "spec": {"containers": [{"name": "c", "image": "i",
                                                           "ports": ports}]}}}}
        r = await real.post(STS, data=orjson.dumps(body),
                            headers={"Content-Type": "application/json"})
        assert r.status == 201, await r.text()
        stored = (await r.json())["spec"]["template"]["spec"]["containers"][0]["ports"]
        assert [p["containerPort"] for p in stored] == [0]
        body["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
        code, obj = await apply(real, f"{STS}/p{i}", orjson.dumps(body))
        assert code == 200, obj
        ports = obj["spec"]["template"]["spec"]["containers"][0]["ports"]
        assert sorted(p["containerPort"] for p in ports) == [0, 80]

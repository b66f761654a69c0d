"""Strategic merge patch against the v1.33 schema data: one table of (live, patch, result)
cases over real kinds, and one of patches upstream refuses with their messages."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apiserver.api import schema
from apiserver.api.gofmt import go_format
from apiserver.endpoints import strategicpatch as sp

POD_SPEC = schema.definition("io.plat.api.core.v1.PodSpec")
POD = schema.for_kind("", "v1", "Pod")
STS = schema.for_kind("apps", "v1", "StatefulSet")
DEPLOY = schema.for_kind("apps", "v1", "Deployment")
PDB = schema.for_kind("policy", "v1", "PodDisruptionBudget")
CM = schema.for_kind("", "v1", "ConfigMap")


def c(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, **extra}


CASES: list[tuple[str, Any, dict[str, Any], dict[str, Any], dict[str, Any]]] = [
    ("containers merged by name", POD_SPEC,
     {"containers": [c("a", image="a:1"), c("b", image="b:1")]},
     {"containers": [c("b", image="b:2")]},
     {"containers": [c("a", image="a:1"), c("b", image="b:2")]}),
    ("a new container comes first when the patch does not order it", POD_SPEC,
     {"containers": [c("a", image="a:1")]},
     {"containers": [c("z", image="z:1")]},
     {"containers": [c("z", image="z:1"), c("a", image="a:1")]}),
    ("env merged by name inside the container of the same name", POD_SPEC,
     {"containers": [c("a", env=[c("X", value="1"), c("Y", value="2")])]},
     {"containers": [c("a", env=[c("Y", value="3"), c("Z", value="4")])]},
     {"containers": [c("a", env=[c("X", value="1"), c("Y", value="3"), c("Z", value="4")])]}),
    ("a list replaced with $patch: replace", POD_SPEC,
     {"containers": [c("a", env=[c("X", value="1"), c("Y", value="2")])]},
     {"containers": [c("a", env=[{"$patch": "replace"}, c("Q", value="9")])]},
     {"containers": [c("a", env=[c("Q", value="9")])]}),
    ("an element deleted with $patch: delete", POD_SPEC,
     {"containers": [c("a"), c("b"), c("c")]},
     {"containers": [{"name": "b", "$patch": "delete"}]},
     {"containers": [c("a"), c("c")]}),
    ("ports merged by containerPort", POD_SPEC,
     {"containers": [c("a", ports=[{"containerPort": 80, "name": "http"},
                                   {"containerPort": 443}])]},
     {"containers": [c("a", ports=[{"containerPort": 80, "name": "web"}])]},
     {"containers": [c("a", ports=[{"containerPort": 80, "name": "web"},
                                   {"containerPort": 443}])]}),
    ("volumes merged by name, $retainKeys drops the other volume source", POD_SPEC,
     {"volumes": [c("v", emptyDir={}), c("w", secret={"secretName": "s"})]},
     {"volumes": [c("v", configMap={"name": "cm"}, **{"$retainKeys": ["configMap", "name"]})]},
     {"volumes": [c("v", configMap={"name": "cm"}), c("w", secret={"secretName": "s"})]}),
    ("volumes without $retainKeys keep both sources", POD_SPEC,
     {"volumes": [c("v", emptyDir={})]},
     {"volumes": [c("v", configMap={"name": "cm"})]},
     {"volumes": [c("v", emptyDir={}, configMap={"name": "cm"})]}),
    ("tolerations have no merge strategy: replaced", POD_SPEC,
     {"tolerations": [{"key": "a", "operator": "Exists"}]},
     {"tolerations": [{"key": "b", "operator": "Exists"}]},
     {"tolerations": [{"key": "b", "operator": "Exists"}]}),
    ("$setElementOrder orders merged and live containers", POD_SPEC,
     {"containers": [c("a"), c("b")]},
     {"$setElementOrder/containers": [c("b"), c("c"), c("a")],
      "containers": [c("c", image="c:1")]},
     {"containers": [c("b"), c("c", image="c:1"), c("a")]}),
    ("$setElementOrder for a primitive list", POD,
     {"metadata": {"finalizers": ["x", "y"]}},
     {"metadata": {"$setElementOrder/finalizers": ["y", "z", "x"], "finalizers": ["z"]}},
     {"metadata": {"finalizers": ["y", "z", "x"]}}),
    ("finalizers merged as a set", POD,
     {"metadata": {"finalizers": ["x", "y"]}},
     {"metadata": {"finalizers": ["y", "z"]}},
     {"metadata": {"finalizers": ["x", "y", "z"]}}),
    ("$deleteFromPrimitiveList removes finalizers", POD,
     {"metadata": {"finalizers": ["x", "y", "z"]}},
     {"metadata": {"$deleteFromPrimitiveList/finalizers": ["y", "nope"]}},
     {"metadata": {"finalizers": ["x", "z"]}}),
    ("$deleteFromPrimitiveList on a missing list does nothing", POD,
     {"metadata": {"name": "p"}},
     {"metadata": {"$deleteFromPrimitiveList/finalizers": ["y"]}},
     {"metadata": {"name": "p"}}),
    ("nested maps merge, null deletes, unmatched nulls vanish", CM,
     {"metadata": {"labels": {"a": "1", "b": "2"}, "annotations": {"x": "1"}},
      "data": {"k": "v"}},
     {"metadata": {"labels": {"a": None, "c": "3"}, "annotations": None},
      "data": {"n": "1", "gone": None}, "binaryData": {"b": "YQ==", "nil": None}},
     {"metadata": {"labels": {"b": "2", "c": "3"}}, "data": {"k": "v", "n": "1"},
      "binaryData": {"b": "YQ=="}}),
    ("$patch: replace in a map", CM,
     {"data": {"a": "1", "b": "2"}},
     {"data": {"$patch": "replace", "c": "3"}},
     {"data": {"c": "3"}}),
    ("$patch: delete in a map empties it", CM,
     {"data": {"a": "1"}, "metadata": {"name": "x"}},
     {"data": {"$patch": "delete"}},
     {"data": {}, "metadata": {"name": "x"}}),
    ("a new field keeps no directive", POD_SPEC,
     {},
     {"containers": [c("a"), {"name": "b", "$patch": "delete"}]},
     {"containers": [c("a")]}),
    ("a field changing type is replaced", POD_SPEC,
     {"nodeSelector": {"a": "b"}},
     {"nodeSelector": "x"},
     {"nodeSelector": "x"}),
    ("replace strategy of a map (PodDisruptionBudget selector)", PDB,
     {"spec": {"selector": {"matchLabels": {"a": "1"}}, "minAvailable": 1}},
     {"spec": {"selector": {"matchExpressions": []}}},
     {"spec": {"selector": {"matchExpressions": []}, "minAvailable": 1}}),
    ("retainKeys strategy of Deployment.spec.strategy", DEPLOY,
     {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}},
     {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}},
     {"spec": {"strategy": {"type": "Recreate"}}}),
    ("statefulset template containers merged by name", STS,
     {"spec": {"replicas": 1, "template": {"spec": {"containers": [c("a", image="a:1")]}}}},
     {"spec": {"replicas": 3, "template": {"spec": {"containers": [c("a", image="a:2")]}}}},
     {"spec": {"replicas": 3, "template": {"spec": {"containers": [c("a", image="a:2")]}}}}),
    ("ownerReferences merged by uid", CM,
     {"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}, {"uid": "2", "name": "b"}]}},
     {"metadata": {"ownerReferences": [{"uid": "2", "name": "c"}]}},
     {"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}, {"uid": "2", "name": "c"}]}}),
    ("$patch: replace at the root", CM,
     {"data": {"a": "1"}, "metadata": {"name": "x"}},
     {"$patch": "replace", "data": {"b": "2"}},
     {"data": {"b": "2"}}),
    ("null body fields of a new list element are dropped", POD_SPEC,
     {"containers": [c("a")]},
     {"containers": [c("b", image=None)]},
     {"containers": [c("b"), c("a")]}),
]


@pytest.mark.parametrize(("node", "live", "patch", "want"),
                         [pytest.param(*case[1:], id=case[0]) for case in CASES])
def test_apply(node: Any, live: dict[str, Any], patch: dict[str, Any],
               want: dict[str, Any]) -> None:
    assert sp.apply(copy.deepcopy(live), copy.deepcopy(patch), node) == want


ERRORS: list[tuple[str, Any, dict[str, Any], dict[str, Any], int, str]] = [
    ("merge key missing in an element", POD_SPEC,
     {"containers": [c("a")]}, {"containers": [{"image": "x"}]},
     500, "map: map[image:x] does not contain declared merge key: name"),
    ("merge key missing in a $patch: delete element", POD_SPEC,
     {"containers": [c("a")]}, {"containers": [{"$patch": "delete"}]},
     500, "map: map[$patch:delete] does not contain declared merge key: name"),
    ("unknown $patch value in a map", CM,
     {"data": {"a": "1"}}, {"data": {"$patch": "frob"}},
     500, "unknown patch type: frob in map: map[$patch:frob]"),
    ("$patch: merge in a map is no known map directive", CM,
     {"data": {"a": "1"}}, {"data": {"$patch": "merge", "b": "2"}},
     500, "unknown patch type: merge in map: map[$patch:merge b:2]"),
    ("unknown $patch value in a list element", POD_SPEC,
     {"containers": [c("a")]}, {"containers": [{"name": "a", "$patch": 1}]},
     500, "unknown patch type: %!s(int64=1) in map: map[$patch:1 name:a]"),
    ("$patch: merge in a list", POD_SPEC,
     {"containers": [c("a")]}, {"containers": [{"$patch": "merge"}]},
     500, "merging lists cannot yet be specified in the patch"),
    ("$retainKeys not a list", POD_SPEC,
     {"volumes": [c("v", emptyDir={})]},
     {"volumes": [c("v", **{"$retainKeys": "name"})]},
     400, "invalid patch format of retainKeys"),
    ("a patched key missing from $retainKeys", POD_SPEC,
     {"volumes": [c("v", emptyDir={})]},
     {"volumes": [c("v", secret={}, **{"$retainKeys": ["name"]})]},
     400, "invalid patch format of retainKeys"),
    ("$deleteFromPrimitiveList without a field", POD,
     {"metadata": {"finalizers": ["x"]}}, {"metadata": {"$deleteFromPrimitiveList": ["x"]}},
     400, "invalid patch format of primitive list"),
    ("$setElementOrder without a field", POD,
     {"metadata": {"finalizers": ["x"]}}, {"metadata": {"$setElementOrderX/finalizers": []}},
     400, "invalid patch format of setElementOrder list"),
    ("$setElementOrder disagreeing with the patch", POD_SPEC,
     {"containers": [c("a"), c("b")]},
     {"$setElementOrder/containers": [c("a"), c("b")], "containers": [c("b"), c("a")]},
     500, "the order in patch list:\n[map[name:b] map[name:a]]\n doesn't match "
          "$setElementOrder list:\n[map[name:a] map[name:b]]"),
    ("a list of lists", POD,
     {"metadata": {"finalizers": []}}, {"metadata": {"finalizers": [["y"]]}},
     422, "lists of lists are not supported"),
    ("mixed element types", POD,
     {"metadata": {"finalizers": ["x"]}}, {"metadata": {"finalizers": [1]}},
     500, "list element types are not identical: [[x] [1]]"),
]


@pytest.mark.parametrize(("node", "live", "patch", "status", "message"),
                         [pytest.param(*case[1:], id=case[0]) for case in ERRORS])
def test_errors(node: Any, live: dict[str, Any], patch: dict[str, Any], status: int,
                message: str) -> None:
    with pytest.raises(sp.StrategicMergePatchError) as info:
        sp.apply(live, patch, node)
    assert (info.value.status, info.value.message) == (status, message)


def test_api_errors() -> None:
    err = sp.api_error(sp.StrategicMergePatchError("map: map[] does not contain declared "
                                                   "merge key: name"))
    body = err.body()
    # upstream answers 500 (the error passes through unconverted); bad input never gets a
    # 500 here, so it is a 400 with the same message
    assert body["code"] == 400 and body["reason"] == "BadRequest"
    assert body["message"] == "map: map[] does not contain declared merge key: name"
    bad = sp.api_error(sp.StrategicMergePatchError(sp.BAD_RETAIN_KEYS, sp.BAD_REQUEST)).body()
    assert (bad["code"], bad["reason"], bad["message"]) == (400, "BadRequest",
                                                           sp.BAD_RETAIN_KEYS)
    lol = sp.api_error(sp.StrategicMergePatchError(sp.NO_LIST_OF_LISTS, sp.UNPROCESSABLE))
    assert lol.body()["code"] == 422 and lol.body()["details"] == {}


@pytest.mark.parametrize(("value", "text"), [
    ({"b": [1, "x", None, True], "a": 1.5}, "map[a:1.5 b:[1 x <nil> true]]"),
    (1e6, "1e+06"), (123456.0, "123456"), (1e-5, "1e-05"), (0.25, "0.25"), (-2.0, "-2"),
    ({}, "map[]"), ([], "[]"),
])
def test_go_format(value: Any, text: str) -> None:
    assert go_format(value) == text


def test_one_image_in_fifty_containers_touches_one_container() -> None:
    spec = {"containers": [c(f"c{i}", image=f"img:{i}",
                             env=[c(f"E{j}", value=str(j)) for j in range(20)],
                             ports=[{"containerPort": 8000 + i}]) for i in range(50)]}
    live = {"spec": {"replicas": 1, "template": {"spec": spec}}}
    patch = {"spec": {"template": {"spec": {"containers": [c("c25", image="img:new")]}}}}
    before = copy.deepcopy(live)
    out = sp.apply(live, patch, STS)
    got = out["spec"]["template"]["spec"]["containers"]
    want = before["spec"]["template"]["spec"]["containers"]
    assert [x["name"] for x in got] == [f"c{i}" for i in range(50)]
    assert got[25] == {**want[25], "image": "img:new"}
    # the other containers are the very same objects: nothing was copied or rebuilt
    assert all(got[i] is live_c for i, live_c in enumerate(
        live["spec"]["template"]["spec"]["containers"]) if i != 25)
    assert got[:25] == want[:25] and got[26:] == want[26:]

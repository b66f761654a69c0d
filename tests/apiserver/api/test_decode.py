"""apiserver.api.decode: unknown fields, duplicates and type errors of built-in kinds from the
v1.33 schema, with the wording of upstream's decoder; apiserver.api.required."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apiserver.api import decode, required
from apiserver.api.gotime import RFC3339, RFC3339_MICRO, parse_error

SSF = "Go struct field"


def sts(spec: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"a": "b"}},
                 "template": {"metadata": {"labels": {"a": "b"}},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}}},
    }
    if spec is not None:
        base["spec"] = spec
    base.update(top)
    return base


def decoder(group: str = "apps", version: str = "v1", kind: str = "StatefulSet") -> Any:
    d = decode.decoder_for(group, version, kind)
    assert d is not None
    return d


# -- unknown fields -------------------------------------------------------------------------

UNKNOWN_CASES = [
    ("root", {"bogus": 1}, ["bogus"]),
    ("metadata", {"metadata": {"name": "web", "foo": 1}}, ["metadata.foo"]),
    ("spec", {"spec": {"foo": 1}}, ["spec.foo"]),
    ("container", {"spec": {"template": {"spec": {"containers": [
        {"name": "a"}, {"name": "b", "zzz": 1}]}}}},
     ["spec.template.spec.containers[1].zzz"]),
    ("port of container", {"spec": {"template": {"spec": {"containers": [
        {"name": "a", "ports": [{"containerPort": 1, "hostIP": "x", "nope": True}]}]}}}},
     ["spec.template.spec.containers[0].ports[0].nope"]),
    ("claim template keeps TypeMeta", {"spec": {"volumeClaimTemplates": [
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "d"},
         "spec": {"resources": {"requests": {"storage": "1Gi"}}, "x": 1}}]}},
     ["spec.volumeClaimTemplates[0].spec.x"]),
    ("several, in document order", {"a": 1, "spec": {"b": 1, "template": {"c": 1}}, "d": 1},
     ["spec.b", "spec.template.c", "a", "d"]),  # spec comes before a in the object
    ("case matters", {"spec": {"Replicas": 1}}, ["spec.Replicas"]),
]


@pytest.mark.parametrize(("name", "patch", "want"), UNKNOWN_CASES,
                         ids=[c[0] for c in UNKNOWN_CASES])
def test_unknown_fields_found_and_dropped(name: str, patch: dict[str, Any],
                                          want: list[str]) -> None:
    obj = sts()
    obj.update(patch)
    out = decoder().check(obj)
    assert out.error is None
    assert out.unknown == want
    assert out.problems == [f'unknown field "{p}"' for p in want]
    again = decoder().check(obj)  # the first walk removed them
    assert again.unknown == []


def test_unknown_fields_kept_without_prune() -> None:
    obj = sts(bogus=1)
    assert decoder().check(obj, prune=False).unknown == ["bogus"]
    assert obj["bogus"] == 1


def test_free_form_places_stay_free() -> None:
    # ownerReferences are typed, managedFields[].fieldsV1 is free-form; labels are a map
    obj = sts(metadata={"name": "w", "labels": {"any-key": "v"},
                        "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {"x": {}}}}]})
    assert decoder().check(obj).unknown == []
    # a RawExtension (ControllerRevision.data) takes anything
    cr = {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "r"},
          "revision": 1, "data": {"whatever": [1, {"x": True}]}}
    assert decoder("apps", "v1", "ControllerRevision").check(cr).unknown == []
    # JSONSchemaProps of a CRD
    crd = {"apiVersion": "apiextensions.plat.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "a.b"},
           "spec": {"group": "b", "names": {"plural": "a", "kind": "A"}, "scope": "Namespaced",
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object",
                                                                 "x-anything": 1}}}]}}
    d = decoder("apiextensions.plat.io", "v1", "CustomResourceDefinition")
    assert d.check(crd).unknown == []


def test_map_values_of_structs_use_plain_key_steps() -> None:
    secret_volume = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                     "data": {"a": "b"}}
    assert decoder("", "v1", "ConfigMap").check(secret_volume).unknown == []
    # Service status conditions are a list; an EndpointSlice's deprecatedTopology a map of
    # strings: a number there is a type error in the map, not an unknown field
    eps = {"apiVersion": "discovery.plat.io/v1", "kind": "EndpointSlice",
           "metadata": {"name": "e"}, "addressType": "IPv4",
           "endpoints": [{"addresses": ["1.2.3.4"], "deprecatedTopology": {"k": 1}}]}
    out = decoder("discovery.plat.io", "v1", "EndpointSlice").check(eps)
    assert out.error == (f"json: cannot unmarshal number into {SSF} "
                         "Endpoint.endpoints.deprecatedTopology of type string")


def test_duplicates_placed_among_unknown_fields() -> None:
    obj = sts()
    obj["metadata"]["foo"] = 1
    obj["zzz"] = 2
    dups = ["metadata.name", "spec.template.spec.containers[0].name", "spec.inside.unknown"]
    obj["spec"]["inside"] = {"unknown": 1}
    out = decoder().check(obj, duplicates=dups)
    assert out.problems == [
        'unknown field "metadata.foo"', 'duplicate field "metadata.name"',
        'duplicate field "spec.template.spec.containers[0].name"',
        'unknown field "spec.inside"',  # repeats inside an unknown field are not looked at
        'unknown field "zzz"',
    ]


def test_at_most_100_problems() -> None:
    obj = sts()
    for i in range(150):
        obj[f"x{i}"] = i
    out = decoder().check(obj)
    assert len(out.unknown) == 150 and len(out.problems) == decode.MAX_STRICT_ERRORS


# -- wrong types ----------------------------------------------------------------------------

TYPE_CASES = [
    ("string into int32", {"replicas": "3"},
     f"json: cannot unmarshal string into {SSF} StatefulSetSpec.spec.replicas of type int32"),
    ("float into int32", {"replicas": 1.5},
     f"json: cannot unmarshal number 1.5 into {SSF} StatefulSetSpec.spec.replicas of type "
     "int32"),
    ("int32 overflow", {"replicas": 2**31},
     f"json: cannot unmarshal number 2147483648 into {SSF} StatefulSetSpec.spec.replicas of "
     "type int32"),
    ("int32 lowest fits", {"replicas": -(2**31)}, None),
    ("bool into int32", {"minReadySeconds": True},
     f"json: cannot unmarshal bool into {SSF} StatefulSetSpec.spec.minReadySeconds of type "
     "int32"),
    ("number into string", {"serviceName": 5},
     f"json: cannot unmarshal number into {SSF} StatefulSetSpec.spec.serviceName of type "
     "string"),
    ("named string type", {"podManagementPolicy": []},
     f"json: cannot unmarshal array into {SSF} StatefulSetSpec.spec.podManagementPolicy of "
     "type v1.PodManagementPolicyType"),
    ("string into struct", {"template": "x"},
     f"json: cannot unmarshal string into {SSF} StatefulSetSpec.spec.template of type "
     "v1.PodTemplateSpec"),
    ("object into list", {"volumeClaimTemplates": {}},
     f"json: cannot unmarshal object into {SSF} StatefulSetSpec.spec.volumeClaimTemplates of "
     "type []v1.PersistentVolumeClaim"),
    ("string item of list of structs", {"template": {"spec": {"containers": ["x"]}}},
     f"json: cannot unmarshal string into {SSF} PodSpec.spec.template.spec.containers of "
     "type v1.Container"),
    ("number in map of strings", {"selector": {"matchLabels": {"a": 1}}},
     f"json: cannot unmarshal number into {SSF} LabelSelector.spec.selector.matchLabels of "
     "type string"),
    ("string into bool", {"template": {"spec": {"containers": [{"name": "a", "tty": "yes"}]}}},
     f"json: cannot unmarshal string into {SSF} Container.spec.template.spec.containers.tty "
     "of type bool"),
    ("embedded struct in the path", {"template": {"spec": {"volumes": [{"name": "v",
                                                                       "hostPath": "x"}]}}},
     f"json: cannot unmarshal string into {SSF} "
     "Volume.spec.template.spec.volumes.VolumeSource.hostPath of type v1.HostPathVolumeSource"),
    ("int-or-string bool", {"updateStrategy": {"rollingUpdate": {"maxUnavailable": True}}},
     f"json: cannot unmarshal bool into {SSF} RollingUpdateStatefulSetStrategy"
     ".spec.updateStrategy.rollingUpdate.maxUnavailable of type int32"),
    ("int-or-string ok", {"updateStrategy": {"rollingUpdate": {"maxUnavailable": "50%"}}},
     None),
    ("quantity", {"template": {"spec": {"containers": [
        {"name": "a", "resources": {"limits": {"cpu": "lots"}}}]}}},
     "quantities must match the regular expression "
     "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    ("quantity suffix", {"template": {"spec": {"containers": [
        {"name": "a", "resources": {"requests": {"memory": "1e"}}}]}}},
     "unable to parse quantity's suffix"),
    ("quantity as number", {"template": {"spec": {"containers": [
        {"name": "a", "resources": {"requests": {"cpu": 0.5, "memory": "64Mi"}}}]}}}, None),
    ("resource list named", {"template": {"spec": {"containers": [
        {"name": "a", "resources": {"limits": "x"}}]}}},
     f"json: cannot unmarshal string into {SSF} "
     "ResourceRequirements.spec.template.spec.containers.resources.limits of type "
     "v1.ResourceList"),
    ("null is always fine", {"replicas": None, "template": None, "selector": None}, None),
]


@pytest.mark.parametrize(("name", "spec", "want"), TYPE_CASES, ids=[c[0] for c in TYPE_CASES])
def test_type_errors(name: str, spec: dict[str, Any], want: str | None) -> None:
    obj = sts()
    obj["spec"].update(spec)
    try:
        got = decoder().check(obj).error
    except decode.DecodeError as e:
        got = str(e)
    assert got == want


def test_first_plain_error_kept_but_custom_decoder_error_wins() -> None:
    obj = sts()
    obj["spec"].update({"replicas": "x", "serviceName": 1})
    assert "spec.replicas" in str(decoder().check(obj).error)
    obj["spec"]["updateStrategy"] = {"rollingUpdate": {"maxUnavailable": 1.5}}
    with pytest.raises(decode.DecodeError, match="maxUnavailable of type int32"):
        decoder().check(obj)


def test_bytes_and_times() -> None:
    d = decoder("", "v1", "Secret")
    out = d.check({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                   "data": {"k": "!!!!"}})
    assert out.error == "illegal base64 data at input byte 0"
    assert d.check({"metadata": {"name": "s"}, "data": {"k": "YWJj"}}).error is None
    ev = decoder("events.plat.io", "v1", "Event")
    with pytest.raises(decode.DecodeError) as e:
        ev.check({"metadata": {"name": "e"}, "eventTime": "2024-01-01T00:00:00Z"})
    assert str(e.value) == ('parsing time "2024-01-01T00:00:00Z" as '
                            '"2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000"')
    assert ev.check({"metadata": {"name": "e"},
                     "eventTime": "2024-01-01T00:00:00.000000Z"}).error is None
    with pytest.raises(decode.DecodeError, match="creationTimestamp of type string"):
        ev.check({"metadata": {"name": "e", "creationTimestamp": 5}})


@pytest.mark.parametrize(("value", "layout", "want"), [
    ("2024-01-01T00:00:00Z", RFC3339, None),
    ("2024-01-01T10:00:00+02:00", RFC3339, None),
    ("2024-01-01T00:00:00.5Z", RFC3339, None),
    ("x", RFC3339, 'parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as '
                   '"2006"'),
    ("2024-13-01T00:00:00Z", RFC3339, 'parsing time "2024-13-01T00:00:00Z": month out of '
                                      'range'),
    ("2023-02-29T00:00:00Z", RFC3339, 'parsing time "2023-02-29T00:00:00Z": day out of range'),
    ("2024-01-01", RFC3339, 'parsing time "2024-01-01" as "2006-01-02T15:04:05Z07:00": '
                            'cannot parse "" as "T"'),
    ("2024-01-01T00:00:00Zx", RFC3339, 'parsing time "2024-01-01T00:00:00Zx": extra text: '
                                       '"x"'),
    ("2024-01-01T00:00:00.123456Z", RFC3339_MICRO, None),
])
def test_time_parse_errors(value: str, layout: str, want: str | None) -> None:
    assert parse_error(value, layout) == want


@pytest.mark.parametrize(("text", "ok"), [
    ("1", True), ("0", True), ("100m", True), ("1.5Gi", True), ("-2", True), ("1e3", True),
    ("+1E-2", True), ("", False), ("abc", False), ("1Q", False), ("1Mi5", False), ("1e", False),
])
def test_quantities(text: str, ok: bool) -> None:
    assert (decode.quantity_error(text) is None) is ok


def test_unknown_kind_has_no_decoder() -> None:
    assert decode.decoder_for("example.com", "v1", "Widget") is None


# -- required fields ------------------------------------------------------------------------

def test_required_fields_missing_at_depth() -> None:
    obj = sts()
    del obj["spec"]["selector"]
    obj["spec"]["template"]["spec"]["containers"].append({"image": "x"})
    obj["spec"]["template"]["spec"]["containers"][0]["env"] = [{"value": "v"}]
    obj["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"name": "p"}]  # int: zero ok
    assert required.missing("apps/v1", "StatefulSet", obj) == [
        "spec.selector",
        "spec.template.spec.containers[0].env[0].name",
        "spec.template.spec.containers[1].name",
    ]


def test_required_fields_not_reported_twice() -> None:
    obj = sts()
    del obj["spec"]["selector"]
    del obj["spec"]["template"]
    own = [{"reason": "FieldValueRequired", "message": "Required value",
            "field": "spec.selector"},
           {"reason": "FieldValueRequired", "message": "Required value",
            "field": "spec.template.spec.containers"}]
    assert required.causes("apps/v1", "StatefulSet", obj, own) == []
    assert required.causes("apps/v1", "StatefulSet", obj, []) == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.selector"},
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.template"},
    ]


def test_required_skips_status_and_unknown_kinds() -> None:
    obj = sts(status={"conditions": [{"reason": "x"}]})
    assert required.missing("apps/v1", "StatefulSet", obj) == []
    assert required.missing("example.com/v1", "Widget", {}) == []


def test_decoder_does_not_change_valid_objects() -> None:
    obj = sts()
    before = copy.deepcopy(obj)
    assert decoder().check(obj).problems == []
    assert obj == before


def test_problem_paths_quoted_as_go_does() -> None:
    obj = sts()
    obj["metadata"]['we"ird\n'] = 1
    assert decoder().check(obj).problems == ['unknown field "metadata.we\\"ird\\n"']


def test_required_lists_null_is_empty_not_missing() -> None:
    role = {"apiVersion": "rbac.authorization.plat.io/v1", "kind": "Role",
            "metadata": {"name": "r"}, "rules": [{"resources": ["pods"]}, {"verbs": None}]}
    assert required.missing("rbac.authorization.plat.io/v1", "Role", role) == ["rules[0].verbs"]


def test_required_leaves_out_what_upstream_accepts_empty() -> None:
    np = {"apiVersion": "networking.plat.io/v1", "kind": "NetworkPolicy",
          "metadata": {"name": "n", "ownerReferences": [{"name": "x"}]}, "spec": {}}
    assert required.missing("networking.plat.io/v1", "NetworkPolicy", np) == []
    eps = {"apiVersion": "discovery.plat.io/v1", "kind": "EndpointSlice",
           "metadata": {"name": "e"}, "addressType": "IPv4"}
    assert required.missing("discovery.plat.io/v1", "EndpointSlice", eps) == []


def test_timestamps_are_stored_as_upstream_writes_them() -> None:
    """metav1.Time is written back in UTC without fractional seconds, MicroTime in UTC with
    six digits: a Python client's ``+00:00`` (isoformat) was stored and echoed as sent, and
    the same instant spelled otherwise was a real write."""
    lease = decoder("coordination.plat.io", "v1", "Lease")
    obj = {"metadata": {"name": "l", "creationTimestamp": "2026-11-23T05:58:48.5+02:00"},
           "spec": {"renewTime": "2026-11-23T05:58:48.123456+02:00",
                    "acquireTime": "2026-11-23T03:58:48.000001Z"}}
    assert lease.check(obj).error is None
    assert obj["metadata"]["creationTimestamp"] == "2026-11-23T03:58:48Z"
    assert obj["spec"] == {"renewTime": "2026-11-23T03:58:48.123456Z",
                           "acquireTime": "2026-11-23T03:58:48.000001Z"}
    ev = decoder("", "v1", "Event")
    obj = {"metadata": {"name": "e"}, "involvedObject": {},
           "lastTimestamp": "2026-11-23T03:58:48.987654+00:00"}
    ev.check(obj)
    assert obj["lastTimestamp"] == "2026-11-23T03:58:48Z"


def test_nulls_of_omitempty_fields_are_unset() -> None:
    """Go decodes null into the zero value, which omitempty leaves out: a ConfigMap created
    with ``"labels": null, "data": null`` stored and echoed the nulls, and its creator owned
    those fields (an apply by another manager conflicted)."""
    cm = decoder("", "v1", "ConfigMap")
    obj = {"metadata": {"name": "c", "labels": None, "annotations": {"a": None}},
           "data": None, "immutable": None, "binaryData": {"k": None}}
    assert cm.check(obj).error is None
    # a null map[string]string value is "" in Go; []byte map values stay null
    assert obj == {"metadata": {"name": "c", "annotations": {"a": ""}},
                   "binaryData": {"k": None}}
    role = {"metadata": {"name": "r"}, "rules": [{"verbs": None}]}
    decoder("rbac.authorization.plat.io", "v1", "Role").check(role)
    assert role["rules"] == [{"verbs": None}]  # required (no omitempty): written back null


def test_null_list_items_and_map_values_become_zero_values() -> None:
    # Go decodes a JSON null item into the element's zero value and writes that back; a
    # null kept as it was made a later protobuf GET of the object a 500 (found by a fuzz run)
    obj = sts()
    c = obj["spec"]["template"]["spec"]["containers"][0]
    c["ports"] = [None, {"containerPort": 80}]
    c["args"] = [None, "x"]
    c["resources"] = {"limits": {"cpu": None}}
    obj["spec"]["template"]["spec"]["containers"].append(None)
    obj["metadata"]["finalizers"] = [None]
    obj["metadata"]["labels"] = {"a": None}
    assert decoder().check(obj).error is None
    assert c["ports"] == [{"containerPort": 0}, {"containerPort": 80}]
    assert c["args"] == ["", "x"]
    assert c["resources"] == {"limits": {"cpu": "0"}}
    assert obj["spec"]["template"]["spec"]["containers"][1] == {}
    assert obj["metadata"]["finalizers"] == [""] and obj["metadata"]["labels"] == {"a": ""}
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "s"},
          "secrets": [None, None]}
    assert decoder("", "v1", "ServiceAccount").check(sa).error is None
    assert sa["secrets"] == [{}, {}] and sa["secrets"][0] is not sa["secrets"][1]


def test_missing_or_null_required_numbers_are_stored_as_zero() -> None:
    """Go leaves a missing or null required number, boolean or IntOrString at zero, and its
    encoder (no omitempty) writes that zero back. Kept missing, a StatefulSet template's
    port without ``containerPort`` (its template's pod spec is not validated upstream) was
    stored without the key of its list, and every later apply to the object was a 500
    (found by a fuzz run). Strings and structs are left to the required-field check."""
    obj = sts()
    spec = obj["spec"]["template"]["spec"]
    c = spec["containers"][0]
    c["ports"] = [{"protocol": "TCP"}, {"containerPort": None}, {}]
    c["readinessProbe"] = {"tcpSocket": {}}
    spec["affinity"] = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"podAffinityTerm": {"topologyKey": "k"}}]}}
    assert decoder().check(obj).error is None
    assert c["ports"] == [{"protocol": "TCP", "containerPort": 0}, {"containerPort": 0},
                          {"containerPort": 0}]
    assert c["readinessProbe"] == {"tcpSocket": {"port": 0}}  # an IntOrString
    term = spec["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term == [{"weight": 0, "podAffinityTerm": {"topologyKey": "k"}}]
    assert "name" not in spec["containers"][0]["ports"][0]  # optional: left out
    svc = {"metadata": {"name": "s"}, "spec": {"ports": [{"name": "a"}]}}
    assert decoder("", "v1", "Service").check(svc).error is None
    assert svc["spec"]["ports"] == [{"name": "a", "port": 0}]
